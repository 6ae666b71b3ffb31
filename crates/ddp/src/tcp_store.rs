//! A rendezvous key-value store over TCP, in the manner of torch's `TCPStore`: one rank serves it,
//! every rank of the group connects as a client. Ranks use it to exchange what MPI cannot carry for
//! them (an NCCL unique id, addresses of a training group) and to meet at barriers.
//!
//! Wire format, little-endian: a request is `op: u8, key_len: u32, key, value_len: u32, value`; a
//! reply is `status: u8, len: u32, payload` with status 0 = ok, 1 = timed out, 2 = error (payload:
//! message). `get` and `wait` block on the server until the keys exist or the request's timeout ends.
//! Counters (`add`) are stored as decimal text.

use std::collections::HashMap;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

const OP_SET: u8 = 1;
const OP_GET: u8 = 2;
const OP_ADD: u8 = 3;
const OP_CHECK: u8 = 4;
const OP_WAIT: u8 = 5;

const OK: u8 = 0;
const TIMED_OUT: u8 = 1;
const FAILED: u8 = 2;

/// Keys and values are small; anything larger is a foreign or broken peer.
const MAX_FIELD: usize = 64 << 20;

type Table = Arc<(Mutex<HashMap<String, Vec<u8>>>, Condvar)>;

/// The serving side of a store; it stops serving when dropped.
pub struct TcpStoreServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl TcpStoreServer {
    /// Serve on `host:port`; port 0 picks a free port (see [`TcpStoreServer::addr`]).
    pub fn bind(host: &str, port: u16) -> Result<Self> {
        let listener = TcpListener::bind((host, port)).map_err(|e| match e.kind() {
            io::ErrorKind::AddrInUse => Error::Store(format!(
                "port {port} on {host} is in use (another job, or a run that has not ended yet); choose a \
                 free port, or port 0 to let the system pick one"
            )),
            _ => Error::Store(format!("cannot serve on {host}:{port}: {e}")),
        })?;
        let addr = listener.local_addr().map_err(|e| Error::Store(format!("cannot serve on {host}:{port}: {e}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        let table: Table = Arc::new((Mutex::new(HashMap::new()), Condvar::new()));
        let accept = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        let table = Arc::clone(&table);
                        std::thread::spawn(move || serve(stream, &table));
                    }
                }
            })
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
            a => a,
        };
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn read_field(r: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FIELD {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a field of {len} bytes")));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

fn write_field(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    w.write_all(&(bytes.len() as u32).to_le_bytes())?;
    w.write_all(bytes)
}

/// Answer one client's requests until it disconnects.
fn serve(stream: TcpStream, table: &Table) {
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else { return };
    let (mut r, mut w) = (BufReader::new(stream), BufWriter::new(write_half));
    loop {
        let mut op = [0u8; 1];
        if r.read_exact(&mut op).is_err() {
            return;
        }
        let (Ok(key), Ok(value)) = (read_field(&mut r), read_field(&mut r)) else { return };
        let (status, payload) = answer(op[0], &key, &value, table);
        if w.write_all(&[status]).and_then(|()| write_field(&mut w, &payload)).and_then(|()| w.flush()).is_err() {
            return;
        }
    }
}

fn timeout_of(value: &[u8]) -> Duration {
    let ms = value.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    Duration::from_millis(ms)
}

fn answer(op: u8, key: &[u8], value: &[u8], table: &Table) -> (u8, Vec<u8>) {
    let (lock, changed) = &**table;
    let mut map = lock.lock().unwrap_or_else(|p| p.into_inner());
    let key = String::from_utf8_lossy(key).into_owned();
    match op {
        OP_SET => {
            map.insert(key, value.to_vec());
            changed.notify_all();
            (OK, Vec::new())
        }
        OP_ADD => {
            let Some(delta) = value.get(..8).map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes"))) else {
                return (FAILED, b"add needs an 8-byte delta".to_vec());
            };
            // Counters are stored as decimal text, so that `get` of a counter is readable.
            let current = match map.get(&key) {
                None => Some(0),
                Some(v) => std::str::from_utf8(v).ok().and_then(|t| t.parse::<i64>().ok()),
            };
            let Some(current) = current else {
                return (FAILED, format!("key '{key}' does not hold a counter").into_bytes());
            };
            let next = current.saturating_add(delta);
            map.insert(key, next.to_string().into_bytes());
            changed.notify_all();
            (OK, next.to_le_bytes().to_vec())
        }
        OP_CHECK => {
            let keys: Vec<String> = split_keys(&key);
            (OK, vec![u8::from(keys.iter().all(|k| map.contains_key(k)))])
        }
        OP_GET | OP_WAIT => {
            let keys = if op == OP_GET { vec![key.clone()] } else { split_keys(&key) };
            let deadline = Instant::now() + timeout_of(value);
            while !keys.iter().all(|k| map.contains_key(k)) {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    let missing: Vec<&String> = keys.iter().filter(|k| !map.contains_key(*k)).collect();
                    return (TIMED_OUT, format!("{missing:?}").into_bytes());
                }
                map = changed.wait_timeout(map, left).unwrap_or_else(|p| p.into_inner()).0;
            }
            let payload = if op == OP_GET { map[&key].clone() } else { Vec::new() };
            (OK, payload)
        }
        _ => (FAILED, format!("unknown operation {op}").into_bytes()),
    }
}

/// `wait` and `check` send several keys as one, separated by NUL (keys cannot contain NUL).
fn split_keys(joined: &str) -> Vec<String> {
    joined.split('\0').map(str::to_string).collect()
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
    /// Connect to the store at `addr` ("host:port"), retrying until `timeout` (the server may start
    /// later than its clients). `timeout` also bounds every later `get`, `wait` and `barrier`.
    pub fn connect(addr: &str, timeout: Duration) -> Result<Self> {
        let start = Instant::now();
        let last_error = loop {
            let attempt = addr
                .to_socket_addrs()
                .map_err(|e| format!("cannot resolve {addr}: {e}"))
                .and_then(|mut a| a.next().ok_or_else(|| format!("{addr} resolves to nothing")))
                .and_then(|a| TcpStream::connect_timeout(&a, Duration::from_secs(1)).map_err(|e| e.to_string()));
            match attempt {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    let write_half = stream.try_clone().map_err(|e| Error::Store(format!("{addr}: {e}")))?;
                    return Ok(TcpStore {
                        addr: addr.to_string(),
                        reader: BufReader::new(stream),
                        writer: BufWriter::new(write_half),
                        timeout,
                        barriers: 0,
                    });
                }
                Err(e) if start.elapsed() >= timeout => break e,
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
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
        let _ = self.reader.get_ref().set_read_timeout(Some(self.timeout + Duration::from_secs(10)));
        let mut status = [0u8; 1];
        self.reader.read_exact(&mut status).map_err(|e| lost(e, &self.addr))?;
        let payload = read_field(&mut self.reader).map_err(|e| lost(e, &self.addr))?;
        match status[0] {
            FAILED => Err(Error::Store(format!("{}: {}", self.addr, String::from_utf8_lossy(&payload)))),
            s => Ok((s, payload)),
        }
    }

    fn timeout_bytes(&self) -> [u8; 8] {
        (self.timeout.as_millis() as u64).to_le_bytes()
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
        let (_, v) = self.request(OP_CHECK, &keys.join("\0"), &[])?;
        Ok(v.first() == Some(&1))
    }

    /// Wait until every key is set (up to the timeout).
    pub fn wait(&mut self, keys: &[&str]) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(10);

    fn server() -> (TcpStoreServer, String) {
        let s = TcpStoreServer::bind("127.0.0.1", 0).unwrap();
        let addr = s.addr().to_string();
        (s, addr)
    }

    #[test]
    fn set_get_add_check_between_clients() {
        let (_s, addr) = server();
        let mut a = TcpStore::connect(&addr, T).unwrap();
        let mut b = TcpStore::connect(&addr, T).unwrap();
        a.set("id", b"\x00\x01binary").unwrap();
        assert_eq!(b.get("id").unwrap(), b"\x00\x01binary");
        assert!(!b.check(&["id", "other"]).unwrap());
        assert_eq!(a.add("n", 5).unwrap(), 5);
        assert_eq!(b.add("n", -2).unwrap(), 3);
        assert_eq!(a.get("n").unwrap(), b"3", "counters read as decimal text");
        assert!(b.check(&["id", "n"]).unwrap());
        assert!(a.add("id", 1).unwrap_err().to_string().contains("does not hold a counter"));
    }

    #[test]
    fn get_waits_for_a_later_set_and_times_out_with_the_key_named() {
        let (_s, addr) = server();
        let setter = {
            let addr = addr.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                TcpStore::connect(&addr, T).unwrap().set("late", b"here").unwrap();
            })
        };
        let mut c = TcpStore::connect(&addr, T).unwrap();
        assert_eq!(c.get("late").unwrap(), b"here");
        setter.join().unwrap();
        let mut quick = TcpStore::connect(&addr, Duration::from_millis(100)).unwrap();
        let e = quick.get("never").unwrap_err().to_string();
        assert!(e.contains("key 'never' was not set within"), "{e}");
        let e = quick.wait(&["late", "never"]).unwrap_err().to_string();
        assert!(e.contains("\"never\"") && !e.contains("\"late\""), "{e}");
    }

    #[test]
    fn barriers_release_everyone_together_and_can_repeat() {
        let (_s, addr) = server();
        let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (addr, counter) = (addr.clone(), Arc::clone(&counter));
                std::thread::spawn(move || {
                    let mut c = TcpStore::connect(&addr, T).unwrap();
                    for round in 1..=3 {
                        counter.fetch_add(1, Ordering::SeqCst);
                        c.barrier("step", 4).unwrap();
                        assert!(counter.load(Ordering::SeqCst) >= 4 * round, "left a barrier early");
                        c.barrier("step", 4).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut lonely = TcpStore::connect(&addr, Duration::from_millis(100)).unwrap();
        let e = lonely.barrier("alone", 2).unwrap_err().to_string();
        assert!(e.contains("barrier 'alone': not all 2 ranks arrived"), "{e}");
    }

    #[test]
    fn a_port_in_use_is_a_clear_error() {
        let (s, _) = server();
        let port = s.addr().port();
        let e = TcpStoreServer::bind("127.0.0.1", port).err().unwrap().to_string();
        assert!(e.contains(&format!("port {port} on 127.0.0.1 is in use")), "{e}");
    }

    #[test]
    fn no_server_or_a_vanished_server_is_a_clear_error() {
        let port = {
            let (s, _) = server();
            s.addr().port()
        };
        let addr = format!("127.0.0.1:{port}");
        let e = TcpStore::connect(&addr, Duration::from_millis(300)).err().unwrap().to_string();
        assert!(e.contains(&format!("could not reach the store at {addr}")), "{e}");

        let (s, addr) = server();
        let mut c = TcpStore::connect(&addr, T).unwrap();
        c.set("k", b"v").unwrap();
        drop(s);
        // The connection thread may still answer; a new client cannot connect.
        assert!(TcpStore::connect(&addr, Duration::from_millis(300)).is_err());
    }
}
