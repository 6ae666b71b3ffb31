//! A rendezvous key-value store over TCP, in the manner of torch's `TCPStore`: one rank serves it,
//! every rank of the group connects as a client. Ranks use it to exchange what MPI cannot carry for
//! them (an NCCL unique id, addresses of a training group) and to meet at barriers.
//!
//! Wire format, little-endian. A connection opens with the handshake: the client sends the
//! worker's [`StoreToken`] as a frame `len: u32 = 32, token`, the server answers one byte (ack, or
//! refused) and closes the connection on a wrong or missing token. Then a request is
//! `op: u8, key_len: u32, key, value_len: u32, value`; a reply is `status: u8, len: u32, payload`
//! with status 0 = ok, 1 = timed out, 2 = error (payload: message). `get` and `wait` block on the
//! server until the keys exist or the request's timeout ends. Counters (`add`) are stored as decimal
//! text.
//!
//! The server trusts nobody but the holders of the token, and even them only within
//! [`StoreLimits`]: bounded keys, values, total bytes and connections; a handshake or a started
//! request that does not finish in time is dropped; nothing a peer sends can make it panic or
//! allocate more than the bytes that actually arrived.

use std::collections::HashMap;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::TryRng;

use crate::error::{Error, Result};

#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod tests;

const OP_SET: u8 = 1;
const OP_GET: u8 = 2;
const OP_ADD: u8 = 3;
const OP_CHECK: u8 = 4;
const OP_WAIT: u8 = 5;

const OK: u8 = 0;
const TIMED_OUT: u8 = 1;
const FAILED: u8 = 2;

/// The server's answers to a handshake. Bytes a foreign service is unlikely to send first.
const ACK: u8 = 0x06;
const REFUSED: u8 = 0x15;

/// Bytes of a [`StoreToken`].
pub const TOKEN_LEN: usize = 32;

/// The secret that admits a client to a worker's store: 32 bytes from the operating system's random
/// source, made by the worker root and handed to its ranks over the worker's MPI communicator, so
/// that only the ranks of that worker can use the store (not another job on the node, nor a port
/// scanner). Its `Debug` form does not show the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreToken([u8; TOKEN_LEN]);

impl StoreToken {
    /// A fresh token from the operating system's random source.
    pub fn random() -> Result<Self> {
        let mut bytes = [0u8; TOKEN_LEN];
        rand::rngs::SysRng
            .try_fill_bytes(&mut bytes)
            .map_err(|e| Error::Store(format!("cannot draw a token from the operating system's random source: {e}")))?;
        Ok(StoreToken(bytes))
    }

    /// The token of these bytes (as received from the worker root); exactly 32 of them.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bytes: [u8; TOKEN_LEN] = bytes.try_into().map_err(|_| {
            Error::Store(format!("a store token has {TOKEN_LEN} bytes, not {} (a damaged announcement)", bytes.len()))
        })?;
        Ok(StoreToken(bytes))
    }

    /// The token's bytes, to pass to the other ranks.
    pub fn as_bytes(&self) -> &[u8; TOKEN_LEN] {
        &self.0
    }

    /// Compare in time independent of where the bytes differ, so that response times do not
    /// tell a guesser how many leading bytes it got right.
    fn matches(&self, other: &[u8]) -> bool {
        other.len() == TOKEN_LEN && self.0.iter().zip(other).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

impl std::fmt::Debug for StoreToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreToken(..)")
    }
}

/// What a server accepts from its clients. The defaults suit a worker's rendezvous: keys are
/// names, values are ids and small payloads (an NCCL unique id is 128 bytes), and a worker has at
/// most a few hundred ranks.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StoreLimits {
    /// Longest key, in bytes (several keys of `wait` and `check` together). Default 4 KiB.
    pub max_key_bytes: usize,
    /// Longest value, in bytes. Default 16 MiB: ids and small payloads, not model weights.
    pub max_value_bytes: usize,
    /// Keys and values held by the table together, in bytes. Default 256 MiB.
    pub max_total_bytes: usize,
    /// Connections that have not presented the token yet; more are closed as soon as they are
    /// accepted, so that a flood of idle connections costs no thread each. Default 64.
    pub max_handshaking: usize,
    /// Admitted connections at once. Default 1,024.
    pub max_clients: usize,
    /// Time a new connection has to present the token. Default 5 s.
    pub handshake_timeout: Duration,
    /// Time an admitted client has to finish a request frame it started (it may stay idle between
    /// requests as long as it likes: a training rank may not touch the store for hours). Default 30 s.
    pub frame_timeout: Duration,
    /// Longest wait a `get` or `wait` may ask for; longer requests are shortened to it. Default 24 h.
    pub max_wait: Duration,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            max_key_bytes: 4 << 10,
            max_value_bytes: 16 << 20,
            max_total_bytes: 256 << 20,
            max_handshaking: 64,
            max_clients: 1024,
            handshake_timeout: Duration::from_secs(5),
            frame_timeout: Duration::from_secs(30),
            max_wait: Duration::from_secs(24 * 3600),
        }
    }
}

/// The table and the bytes its keys and values hold (checked against `max_total_bytes`).
#[derive(Default)]
struct Entries {
    map: HashMap<String, Vec<u8>>,
    held: usize,
}

impl Entries {
    /// Put `value` under `key` unless the table would then hold more than `cap` bytes.
    fn put(&mut self, key: String, value: Vec<u8>, cap: usize) -> std::result::Result<(), String> {
        let old = self.map.get(&key).map_or(0, |v| key.len() + v.len());
        let new = self.held.saturating_sub(old).saturating_add(key.len() + value.len());
        if new > cap {
            return Err(format!(
                "setting '{key}' ({} bytes) would make the store hold {new} bytes, over its cap of {cap} bytes \
                 (max_total_bytes); the store is for ids and small payloads, pass bulk data another way",
                value.len()
            ));
        }
        self.held = new;
        self.map.insert(key, value);
        Ok(())
    }
}

struct Shared {
    table: Mutex<Entries>,
    changed: Condvar,
    token: StoreToken,
    limits: StoreLimits,
    handshaking: AtomicUsize,
    clients: AtomicUsize,
}

/// Holds one unit of a connection counter and gives it back when dropped, whatever path the
/// connection's thread leaves by.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The serving side of a store; it stops accepting connections when dropped.
pub struct TcpStoreServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl TcpStoreServer {
    /// Serve on `host:port` to the clients that present `token`, with the default [`StoreLimits`];
    /// port 0 picks a free port (see [`TcpStoreServer::addr`]).
    pub fn bind(host: &str, port: u16, token: StoreToken) -> Result<Self> {
        Self::bind_with(host, port, token, StoreLimits::default())
    }

    /// [`TcpStoreServer::bind`] with other limits.
    pub fn bind_with(host: &str, port: u16, token: StoreToken, limits: StoreLimits) -> Result<Self> {
        let listener = TcpListener::bind((host, port)).map_err(|e| match e.kind() {
            io::ErrorKind::AddrInUse => Error::Store(format!(
                "port {port} on {host} is in use (another job, or a run that has not ended yet); choose a \
                 free port, or port 0 to let the system pick one"
            )),
            _ => Error::Store(format!("cannot serve on {host}:{port}: {e}")),
        })?;
        let addr = listener.local_addr().map_err(|e| Error::Store(format!("cannot serve on {host}:{port}: {e}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            table: Mutex::new(Entries::default()),
            changed: Condvar::new(),
            token,
            limits,
            handshaking: AtomicUsize::new(0),
            clients: AtomicUsize::new(0),
        });
        let accept = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("tcp-store-accept".into())
                .spawn(move || accept_loop(&listener, &stop, &shared))
                .map_err(|e| Error::Store(format!("cannot start the store's thread: {e}")))?
        };
        Ok(TcpStoreServer { addr, stop, accept: Some(accept) })
    }

    /// The address the server listens on (with the port the system picked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TcpStoreServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let wake = match self.addr {
            SocketAddr::V4(a) if a.ip().is_unspecified() => SocketAddr::from(([127, 0, 0, 1], a.port())),
            SocketAddr::V6(a) if a.ip().is_unspecified() => SocketAddr::from(([0u16, 0, 0, 0, 0, 0, 0, 1], a.port())),
            a => a,
        };
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, stop: &AtomicBool, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let stream = match stream {
            Ok(s) => s,
            Err(_) => {
                // Out of file descriptors or a connection reset before it was accepted: pause
                // instead of spinning on the same error.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        // Only this thread adds handshaking connections, so the check and the add do not race.
        if shared.handshaking.load(Ordering::SeqCst) >= shared.limits.max_handshaking {
            // Closed at once: an honest client retries until its connect timeout.
            drop(stream);
            continue;
        }
        shared.handshaking.fetch_add(1, Ordering::SeqCst);
        let shared_here = Arc::clone(shared);
        let spawned = std::thread::Builder::new().name("tcp-store-client".into()).spawn(move || {
            let slot = Slot(&shared_here.handshaking);
            serve(stream, &shared_here, slot);
        });
        if spawned.is_err() {
            // The closure (and its stream) was dropped without running: give its slot back.
            shared.handshaking.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A stream whose reads fail once `deadline` has passed (no deadline: reads wait for ever), so that
/// a whole frame, not each read, is bounded in time: a client trickling one byte at a time cannot
/// hold a connection for longer than the frame timeout.
struct Deadlined {
    stream: TcpStream,
    deadline: Option<Instant>,
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let timeout = match self.deadline {
            None => None,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "the frame did not arrive in time"));
                }
                Some(left)
            }
        };
        self.stream.set_read_timeout(timeout)?;
        self.stream.read(buf)
    }
}

fn read_u32(r: &mut impl Read) -> io::Result<usize> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    Ok(u32::from_le_bytes(len) as usize)
}

/// Read exactly `len` bytes, growing the buffer as they arrive: a length claimed by a peer is never
/// allocated before its bytes are there.
fn read_exactly(r: &mut impl Read, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    r.by_ref().take(len as u64).read_to_end(&mut buf)?;
    if buf.len() < len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("{} of {len} bytes arrived", buf.len())));
    }
    Ok(buf)
}

/// Read a field of at most `cap` bytes. A longer one is read past without being kept (so that the
/// connection stays in step) and comes back as the message that names the cap.
fn read_capped(r: &mut impl Read, cap: usize, what: &str) -> io::Result<std::result::Result<Vec<u8>, String>> {
    let len = read_u32(r)?;
    if len > cap {
        let skipped = io::copy(&mut r.by_ref().take(len as u64), &mut io::sink())?;
        if skipped < len as u64 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "an oversized field ended early"));
        }
        return Ok(Err(format!(
            "a {what} of {len} bytes is over the store's cap of {cap} bytes (max_{what}_bytes); the store is for \
             names, ids and small payloads"
        )));
    }
    read_exactly(r, len).map(Ok)
}

fn write_field(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("a field of {} bytes", bytes.len())))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(bytes)
}

/// Admit a client that presents the token, then answer its requests until it disconnects, breaks
/// the protocol or stalls in the middle of a frame.
fn serve(stream: TcpStream, shared: &Shared, handshaking: Slot<'_>) {
    let limits = &shared.limits;
    let _ = stream.set_nodelay(true);
    // A client that does not read its replies must not hold the thread for ever either.
    let _ = stream.set_write_timeout(Some(limits.frame_timeout));
    let Ok(write_half) = stream.try_clone() else { return };
    let mut r = BufReader::new(Deadlined { stream, deadline: Instant::now().checked_add(limits.handshake_timeout) });
    let mut w = BufWriter::new(write_half);

    let presented =
        read_u32(&mut r).and_then(|len| if len == TOKEN_LEN { read_exactly(&mut r, len) } else { Ok(vec![]) });
    let Ok(presented) = presented else { return };
    if !shared.token.matches(&presented) {
        let _ = w.write_all(&[REFUSED]).and_then(|()| w.flush());
        return;
    }
    drop(handshaking);
    if shared.clients.fetch_add(1, Ordering::SeqCst) >= limits.max_clients {
        // Closed without an ack: the client retries until its connect timeout.
        shared.clients.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let _admitted = Slot(&shared.clients);
    if w.write_all(&[ACK]).and_then(|()| w.flush()).is_err() {
        return;
    }

    loop {
        r.get_mut().deadline = None;
        let mut op = [0u8; 1];
        if r.read_exact(&mut op).is_err() {
            return;
        }
        r.get_mut().deadline = Instant::now().checked_add(limits.frame_timeout);
        let Ok(key) = read_capped(&mut r, limits.max_key_bytes, "key") else { return };
        let Ok(value) = read_capped(&mut r, limits.max_value_bytes, "value") else { return };
        let (status, payload) = match (key, value) {
            (Ok(key), Ok(value)) => answer(op[0], key, value, shared),
            (Err(e), _) | (_, Err(e)) => (FAILED, e.into_bytes()),
        };
        if w.write_all(&[status]).and_then(|()| write_field(&mut w, &payload)).and_then(|()| w.flush()).is_err() {
            return;
        }
    }
}

fn eight_bytes(value: &[u8]) -> Option<[u8; 8]> {
    value.get(..8).and_then(|b| b.try_into().ok())
}

fn answer(op: u8, key: Vec<u8>, value: Vec<u8>, shared: &Shared) -> (u8, Vec<u8>) {
    let limits = &shared.limits;
    let mut table = shared.table.lock().unwrap_or_else(|p| p.into_inner());
    let key = String::from_utf8_lossy(&key).into_owned();
    match op {
        OP_SET => match table.put(key, value, limits.max_total_bytes) {
            Ok(()) => {
                shared.changed.notify_all();
                (OK, Vec::new())
            }
            Err(e) => (FAILED, e.into_bytes()),
        },
        OP_ADD => {
            let Some(delta) = eight_bytes(&value).map(i64::from_le_bytes) else {
                return (FAILED, b"add needs an 8-byte delta".to_vec());
            };
            // Counters are stored as decimal text, so that `get` of a counter is readable.
            let current = match table.map.get(&key) {
                None => Some(0),
                Some(v) => std::str::from_utf8(v).ok().and_then(|t| t.parse::<i64>().ok()),
            };
            let Some(current) = current else {
                return (FAILED, format!("key '{key}' does not hold a counter").into_bytes());
            };
            let next = current.saturating_add(delta);
            if let Err(e) = table.put(key, next.to_string().into_bytes(), limits.max_total_bytes) {
                return (FAILED, e.into_bytes());
            }
            shared.changed.notify_all();
            (OK, next.to_le_bytes().to_vec())
        }
        OP_CHECK => {
            let keys: Vec<String> = split_keys(&key);
            (OK, vec![u8::from(keys.iter().all(|k| table.map.contains_key(k)))])
        }
        OP_GET | OP_WAIT => {
            let keys = if op == OP_GET { vec![key.clone()] } else { split_keys(&key) };
            // A client may ask for any wait (u64::MAX ms included); the server waits at most
            // `max_wait`, and a deadline past what `Instant` can hold means no deadline.
            let asked = Duration::from_millis(eight_bytes(&value).map_or(0, u64::from_le_bytes));
            let deadline = Instant::now().checked_add(asked.min(limits.max_wait));
            while !keys.iter().all(|k| table.map.contains_key(k)) {
                let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                if left.is_some_and(|l| l.is_zero()) {
                    let missing: Vec<&String> = keys.iter().filter(|k| !table.map.contains_key(*k)).collect();
                    return (TIMED_OUT, format!("{missing:?}").into_bytes());
                }
                table = match left {
                    Some(left) => shared.changed.wait_timeout(table, left).unwrap_or_else(|p| p.into_inner()).0,
                    None => shared.changed.wait(table).unwrap_or_else(|p| p.into_inner()),
                };
            }
            let payload = if op == OP_GET { table.map.get(&key).cloned().unwrap_or_default() } else { Vec::new() };
            (OK, payload)
        }
        _ => (FAILED, format!("unknown operation {op} (a client of another protocol or version)").into_bytes()),
    }
}

/// `wait` and `check` send several keys as one, separated by NUL (keys cannot contain NUL).
fn split_keys(joined: &str) -> Vec<String> {
    joined.split('\0').map(str::to_string).collect()
}

/// How one attempt to join a store ended.
enum Attempt {
    Admitted(TcpStream),
    /// The server read the token and said no: retrying cannot help.
    Refused,
    /// Something that may pass (no server yet, a saturated server): the reason, for the last error.
    Retry(String),
}

/// One connection attempt: connect, present the token, wait for the answer (at most `left`).
fn attempt(addr: &str, token: &StoreToken, left: Duration) -> Attempt {
    let left = left.max(Duration::from_millis(100));
    let target = match addr.to_socket_addrs() {
        Ok(mut a) => match a.next() {
            Some(a) => a,
            None => return Attempt::Retry(format!("{addr} resolves to nothing")),
        },
        Err(e) => return Attempt::Retry(format!("cannot resolve {addr}: {e}")),
    };
    let mut stream = match TcpStream::connect_timeout(&target, left.min(Duration::from_secs(1))) {
        Ok(s) => s,
        Err(e) => return Attempt::Retry(e.to_string()),
    };
    let _ = stream.set_nodelay(true);
    let mut frame = (TOKEN_LEN as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(token.as_bytes());
    let _ = stream.set_write_timeout(Some(left));
    let _ = stream.set_read_timeout(Some(left.min(Duration::from_secs(10))));
    let closed = |e: String| {
        Attempt::Retry(format!("the store closed the connection during the handshake ({e}); it may be saturated"))
    };
    if let Err(e) = stream.write_all(&frame) {
        return closed(e.to_string());
    }
    let mut answer = [0u8; 1];
    match stream.read(&mut answer) {
        Ok(1) if answer[0] == ACK => {
            let _ = stream.set_write_timeout(None);
            Attempt::Admitted(stream)
        }
        Ok(1) if answer[0] == REFUSED => Attempt::Refused,
        Ok(1) => Attempt::Retry(format!(
            "{addr} answered the handshake with byte {:#04x}: not a propulate store (another service on that port?)",
            answer[0]
        )),
        Ok(_) => closed("end of stream".into()),
        Err(e) => closed(e.to_string()),
    }
}

/// A client of a store.
pub struct TcpStore {
    addr: String,
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    timeout: Duration,
    barriers: u64,
}

impl TcpStore {
    /// Connect to the store at `addr` ("host:port") and present `token`, retrying until `timeout`
    /// (the server may start later than its clients, or be busy with other connections). `timeout`
    /// also bounds every later `get`, `wait` and `barrier`. A store that refuses the token is an
    /// error at once.
    pub fn connect(addr: &str, token: &StoreToken, timeout: Duration) -> Result<Self> {
        let start = Instant::now();
        let last_error = loop {
            match attempt(addr, token, timeout.saturating_sub(start.elapsed())) {
                Attempt::Admitted(stream) => {
                    let write_half = stream.try_clone().map_err(|e| Error::Store(format!("{addr}: {e}")))?;
                    return Ok(TcpStore {
                        addr: addr.to_string(),
                        reader: BufReader::new(stream),
                        writer: BufWriter::new(write_half),
                        timeout,
                        barriers: 0,
                    });
                }
                Attempt::Refused => {
                    return Err(Error::Store(format!(
                        "the store at {addr} refused this client's token (it serves another worker or another \
                         run); connect with the token its worker root announced"
                    )));
                }
                Attempt::Retry(e) if start.elapsed() >= timeout => break e,
                Attempt::Retry(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        Err(Error::Store(format!("could not reach the store at {addr} within {timeout:?}: {last_error}")))
    }

    fn request(&mut self, op: u8, key: &str, value: &[u8]) -> Result<(u8, Vec<u8>)> {
        if key.contains('\0') && op != OP_WAIT && op != OP_CHECK {
            return Err(Error::Store(format!("key {key:?} contains a NUL byte")));
        }
        let lost = |e: io::Error, addr: &str| Error::Store(format!("lost the store at {addr}: {e}"));
        let w = &mut self.writer;
        w.write_all(&[op])
            .and_then(|()| write_field(w, key.as_bytes()))
            .and_then(|()| write_field(w, value))
            .and_then(|()| w.flush())
            .map_err(|e| lost(e, &self.addr))?;
        // The server answers a blocking request within its timeout; allow a margin for the network.
        let _ = self.reader.get_ref().set_read_timeout(Some(self.timeout.saturating_add(Duration::from_secs(10))));
        let mut status = [0u8; 1];
        self.reader.read_exact(&mut status).map_err(|e| lost(e, &self.addr))?;
        let payload = read_u32(&mut self.reader)
            .and_then(|n| read_exactly(&mut self.reader, n))
            .map_err(|e| lost(e, &self.addr))?;
        match status[0] {
            FAILED => Err(Error::Store(format!("{}: {}", self.addr, String::from_utf8_lossy(&payload)))),
            s => Ok((s, payload)),
        }
    }

    fn timeout_bytes(&self) -> [u8; 8] {
        u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX).to_le_bytes()
    }

    /// Store `value` under `key` (replacing any earlier value) and wake everyone waiting for it.
    pub fn set(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.request(OP_SET, key, value).map(|_| ())
    }

    /// The value of `key`, waiting for another rank to set it (up to the timeout).
    pub fn get(&mut self, key: &str) -> Result<Vec<u8>> {
        let t = self.timeout_bytes();
        match self.request(OP_GET, key, &t)? {
            (OK, v) => Ok(v),
            _ => Err(Error::Store(format!(
                "key '{key}' was not set within {:?} (a rank of the group did not get this far)",
                self.timeout
            ))),
        }
    }

    /// Add `delta` to the counter `key` (0 when missing) and return the new value.
    pub fn add(&mut self, key: &str, delta: i64) -> Result<i64> {
        let (_, v) = self.request(OP_ADD, key, &delta.to_le_bytes())?;
        Ok(i64::from_le_bytes(
            v.get(..8)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| Error::Store(format!("{}: a malformed counter reply", self.addr)))?,
        ))
    }

    /// True if every key is set, without waiting.
    pub fn check(&mut self, keys: &[&str]) -> Result<bool> {
        // No keys are all set; sent, they would join into the one key "".
        if keys.is_empty() {
            return Ok(true);
        }
        let (_, v) = self.request(OP_CHECK, &keys.join("\0"), &[])?;
        Ok(v.first() == Some(&1))
    }

    /// Wait until every key is set (up to the timeout).
    pub fn wait(&mut self, keys: &[&str]) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let t = self.timeout_bytes();
        match self.request(OP_WAIT, &keys.join("\0"), &t)? {
            (OK, _) => Ok(()),
            (_, missing) => Err(Error::Store(format!(
                "keys {} were not set within {:?}",
                String::from_utf8_lossy(&missing),
                self.timeout
            ))),
        }
    }

    /// Wait until `ranks` clients have reached barrier `name`. Every client must pass the same
    /// barriers in the same order; each call is a new barrier, so a name can be used again.
    pub fn barrier(&mut self, name: &str, ranks: usize) -> Result<()> {
        self.barriers += 1;
        let key = format!("barrier/{name}/{}", self.barriers);
        let arrived = self.add(&key, 1)?;
        let done = format!("{key}/done");
        if arrived == ranks as i64 {
            self.set(&done, b"")?;
        }
        self.wait(&[&done]).map_err(|_| {
            Error::Store(format!(
                "barrier '{name}': not all {ranks} ranks arrived within {:?} (the last count seen was {arrived})",
                self.timeout
            ))
        })
    }
}

impl Drop for TcpStore {
    fn drop(&mut self) {
        let _ = self.writer.flush();
        let _ = self.writer.get_ref().shutdown(Shutdown::Both);
    }
}
