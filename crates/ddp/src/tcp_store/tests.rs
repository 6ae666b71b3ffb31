//! The store's operations between honest clients.

use super::*;

const T: Duration = Duration::from_secs(10);

/// The token of the test servers (a fixed one, so that every client of a test can present it).
pub(super) fn token() -> StoreToken {
    StoreToken([42; TOKEN_LEN])
}

fn server() -> (TcpStoreServer, String) {
    let s = TcpStoreServer::bind("127.0.0.1", 0, token()).unwrap();
    let addr = s.addr().to_string();
    (s, addr)
}

#[test]
fn set_get_add_check_between_clients() {
    let (_s, addr) = server();
    let mut a = TcpStore::connect(&addr, &token(), T).unwrap();
    let mut b = TcpStore::connect(&addr, &token(), T).unwrap();
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
            TcpStore::connect(&addr, &token(), T).unwrap().set("late", b"here").unwrap();
        })
    };
    let mut c = TcpStore::connect(&addr, &token(), T).unwrap();
    assert_eq!(c.get("late").unwrap(), b"here");
    setter.join().unwrap();
    let mut quick = TcpStore::connect(&addr, &token(), Duration::from_millis(100)).unwrap();
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
                let mut c = TcpStore::connect(&addr, &token(), T).unwrap();
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
    let mut lonely = TcpStore::connect(&addr, &token(), Duration::from_millis(100)).unwrap();
    let e = lonely.barrier("alone", 2).unwrap_err().to_string();
    assert!(e.contains("barrier 'alone': not all 2 ranks arrived"), "{e}");
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let (s, _) = server();
    let port = s.addr().port();
    let e = TcpStoreServer::bind("127.0.0.1", port, token()).err().unwrap().to_string();
    assert!(e.contains(&format!("port {port} on 127.0.0.1 is in use")), "{e}");
}

#[test]
fn no_server_or_a_vanished_server_is_a_clear_error() {
    let port = {
        let (s, _) = server();
        s.addr().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let e = TcpStore::connect(&addr, &token(), Duration::from_millis(300)).err().unwrap().to_string();
    assert!(e.contains(&format!("could not reach the store at {addr}")), "{e}");

    let (s, addr) = server();
    let mut c = TcpStore::connect(&addr, &token(), T).unwrap();
    c.set("k", b"v").unwrap();
    drop(s);
    // The connection thread may still answer; a new client cannot connect.
    assert!(TcpStore::connect(&addr, &token(), Duration::from_millis(300)).is_err());
}

#[test]
fn random_tokens_differ_and_hide_their_bytes() {
    let (a, b) = (StoreToken::random().unwrap(), StoreToken::random().unwrap());
    assert_ne!(a, b);
    assert_eq!(format!("{a:?}"), "StoreToken(..)");
    assert_eq!(StoreToken::from_bytes(a.as_bytes()).unwrap(), a);
    let e = StoreToken::from_bytes(&[1, 2, 3]).unwrap_err().to_string();
    assert!(e.contains("a store token has 32 bytes, not 3"), "{e}");
}
