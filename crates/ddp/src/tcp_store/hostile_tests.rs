//! The store against clients that are not the worker's ranks, or that break the protocol: each is
//! refused or dropped with a clear error, and the worker's own clients carry on. Timeouts are
//! shrunk so that every test ends within a few seconds.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::tests::token;
use super::*;

const T: Duration = Duration::from_secs(10);

fn limits() -> StoreLimits {
    StoreLimits {
        max_key_bytes: 64,
        max_value_bytes: 1024,
        max_total_bytes: 4096,
        handshake_timeout: Duration::from_millis(300),
        frame_timeout: Duration::from_millis(300),
        max_wait: Duration::from_millis(200),
        ..StoreLimits::default()
    }
}

fn server_with(limits: StoreLimits) -> (TcpStoreServer, String) {
    let s = TcpStoreServer::bind_with("127.0.0.1", 0, token(), limits).unwrap();
    let addr = s.addr().to_string();
    (s, addr)
}

fn frame(op: u8, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut f = vec![op];
    for field in [key, value] {
        f.extend_from_slice(&(field.len() as u32).to_le_bytes());
        f.extend_from_slice(field);
    }
    f
}

fn raw(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// A raw connection that went through the handshake.
fn admitted(addr: &str) -> TcpStream {
    let mut s = raw(addr);
    s.write_all(&(TOKEN_LEN as u32).to_le_bytes()).unwrap();
    s.write_all(token().as_bytes()).unwrap();
    let mut ack = [0u8];
    s.read_exact(&mut ack).unwrap();
    assert_eq!(ack[0], ACK);
    s
}

fn reply(s: &mut TcpStream) -> (u8, String) {
    let mut status = [0u8];
    s.read_exact(&mut status).unwrap();
    let n = read_u32(s).unwrap();
    (status[0], String::from_utf8_lossy(&read_exactly(s, n).unwrap()).into_owned())
}

/// True when the server ends the connection (end of stream or reset) before the test's read timeout.
fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut sink = Vec::new();
    match s.read_to_end(&mut sink) {
        Ok(_) => true,
        Err(e) => !matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut),
    }
}

/// The worker's own ranks still set, get and meet.
fn still_serves(addr: &str) {
    let mut c = TcpStore::connect(addr, &token(), T).unwrap();
    c.set("still", b"here").unwrap();
    assert_eq!(c.get("still").unwrap(), b"here");
    c.barrier("alone", 1).unwrap();
}

#[test]
fn a_client_without_the_token_is_refused_with_a_clear_error() {
    let (_s, addr) = server_with(limits());
    let e = TcpStore::connect(&addr, &StoreToken([7; TOKEN_LEN]), T).err().unwrap().to_string();
    assert!(e.contains(&format!("the store at {addr} refused this client's token")), "{e}");

    // A request without a handshake is a frame of the wrong length for a token.
    let mut s = raw(&addr);
    s.write_all(&frame(OP_SET, b"k", b"v")).unwrap();
    // The refusal byte, then the end; or a reset, since the server closes with the request unread.
    let mut answer = Vec::new();
    match s.read_to_end(&mut answer) {
        Ok(_) => assert!(answer.is_empty() || answer == [REFUSED], "{answer:?}"),
        Err(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}"),
    }

    // Saying nothing ends with the handshake timeout.
    let mut silent = raw(&addr);
    assert!(closed_by_server(&mut silent), "a silent connection was kept past the handshake timeout");
    still_serves(&addr);
}

#[test]
fn oversized_keys_values_and_totals_are_refused_with_the_cap_named() {
    let (_s, addr) = server_with(limits());
    let mut c = TcpStore::connect(&addr, &token(), T).unwrap();
    let e = c.set(&"k".repeat(65), b"v").unwrap_err().to_string();
    assert!(e.contains("a key of 65 bytes is over the store's cap of 64 bytes (max_key_bytes)"), "{e}");
    let e = c.set("big", &[0; 1025]).unwrap_err().to_string();
    assert!(e.contains("a value of 1025 bytes is over the store's cap of 1024 bytes (max_value_bytes)"), "{e}");
    for i in 0..4 {
        c.set(&format!("v{i}"), &[i; 1000]).unwrap();
    }
    // Replacing a value counts its new size only.
    c.set("v0", &[9; 1000]).unwrap();
    let e = c.set("v4", &[4; 1000]).unwrap_err().to_string();
    assert!(e.contains("over its cap of 4096 bytes (max_total_bytes)"), "{e}");
    // The connection that was refused goes on, and so does everyone else.
    assert_eq!(c.get("v0").unwrap(), vec![9; 1000]);
    assert_eq!(c.add("n", 2).unwrap(), 2);
    let mut other = TcpStore::connect(&addr, &token(), T).unwrap();
    assert_eq!(other.get("v3").unwrap(), vec![3; 1000]);
}

#[test]
fn a_thousand_idle_connections_do_not_keep_the_worker_out() {
    let (_s, addr) = server_with(limits());
    // Some connections may not even be accepted while the listen queue is full; those are as idle.
    let target: SocketAddr = addr.parse().unwrap();
    let idle: Vec<TcpStream> =
        (0..1000).filter_map(|_| TcpStream::connect_timeout(&target, Duration::from_millis(200)).ok()).collect();
    let ranks: Vec<_> = (0..3)
        .map(|rank| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = TcpStore::connect(&addr, &token(), T).unwrap();
                c.set(&format!("rank{rank}"), b"up").unwrap();
                c.barrier("all", 3).unwrap();
                for other in 0..3 {
                    assert_eq!(c.get(&format!("rank{other}")).unwrap(), b"up");
                }
            })
        })
        .collect();
    for r in ranks {
        r.join().unwrap();
    }
    drop(idle);
}

#[test]
fn garbage_is_refused_or_closed_and_the_server_carries_on() {
    let (_s, addr) = server_with(limits());
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for _ in 0..5 {
        let mut noise = vec![0u8; 1000];
        rng.fill_bytes(&mut noise);
        let mut s = raw(&addr);
        let _ = s.write_all(&noise);
        assert!(closed_by_server(&mut s), "random bytes before the handshake kept a connection");

        let mut s = admitted(&addr);
        let _ = s.write_all(&noise);
        let _ = s.shutdown(Shutdown::Write);
        assert!(closed_by_server(&mut s), "random bytes after the handshake kept a connection");
    }

    let mut s = admitted(&addr);
    s.write_all(&frame(99, b"k", b"")).unwrap();
    let (status, message) = reply(&mut s);
    assert_eq!((status, message.contains("unknown operation 99")), (FAILED, true), "{message}");

    // A field that claims 4 GiB: nothing is allocated for it, and the connection ends with the
    // stream (or with the frame timeout).
    let mut s = admitted(&addr);
    s.write_all(&[OP_SET]).unwrap();
    s.write_all(&u32::MAX.to_le_bytes()).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert!(closed_by_server(&mut s));

    // A wait of u64::MAX milliseconds is cut to `max_wait`.
    let mut s = admitted(&addr);
    s.write_all(&frame(OP_GET, b"never", &u64::MAX.to_le_bytes())).unwrap();
    let (status, message) = reply(&mut s);
    assert_eq!(status, TIMED_OUT, "{message}");
    still_serves(&addr);
}

#[test]
fn a_wait_of_u64_max_milliseconds_does_not_overflow_with_the_default_limits() {
    let s = TcpStoreServer::bind("127.0.0.1", 0, token()).unwrap();
    let addr = s.addr().to_string();
    TcpStore::connect(&addr, &token(), T).unwrap().set("there", b"1").unwrap();
    for op in [OP_GET, OP_WAIT] {
        let mut raw = admitted(&addr);
        raw.write_all(&frame(op, b"there", &u64::MAX.to_le_bytes())).unwrap();
        assert_eq!(reply(&mut raw).0, OK);
    }
    still_serves(&addr);
}

#[test]
fn a_client_that_stalls_inside_a_frame_is_dropped_but_an_idle_one_is_kept() {
    let (_s, addr) = server_with(limits());
    let mut stalled = admitted(&addr);
    stalled.write_all(&[OP_SET]).unwrap();
    stalled.write_all(&10u32.to_le_bytes()).unwrap();
    stalled.write_all(b"hal").unwrap();
    assert!(closed_by_server(&mut stalled), "half a frame held the connection past the frame timeout");

    // Idle between requests for longer than the frame timeout: still admitted.
    let mut idle = TcpStore::connect(&addr, &token(), T).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    idle.set("after", b"a nap").unwrap();
    assert_eq!(idle.get("after").unwrap(), b"a nap");
}

#[test]
fn a_full_server_closes_new_clients_until_a_place_frees() {
    let (_s, addr) = server_with(StoreLimits { max_clients: 2, ..limits() });
    let a = TcpStore::connect(&addr, &token(), T).unwrap();
    let _b = TcpStore::connect(&addr, &token(), T).unwrap();
    let e = TcpStore::connect(&addr, &token(), Duration::from_millis(300)).err().unwrap().to_string();
    assert!(e.contains("closed the connection during the handshake"), "{e}");
    drop(a);
    still_serves(&addr);
}
