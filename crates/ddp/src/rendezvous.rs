//! Rendezvous of one worker's ranks: the worker root serves a [`TcpStore`] and tells its ranks where,
//! and with which token, over the worker communicator; every rank, the root included, connects as a
//! client. The token never travels through the store or the network otherwise, so only the worker's
//! own ranks are admitted.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use super::tcp_store::{StoreToken, TcpStore, TcpStoreServer};
use crate::error::{Error, Result};
use propulate_engine::context::WorkerContext;

/// A worker's store: the client of this rank, and on the worker root the server too (it serves as
/// long as this value lives, so keep it for the whole evaluation).
pub struct WorkerStore {
    /// This rank's client.
    pub store: TcpStore,
    /// The host name of each rank of the worker, in worker-rank order.
    pub hosts: Vec<String>,
    server: Option<TcpStoreServer>,
    target: String,
    token: StoreToken,
}

impl WorkerStore {
    /// Another client of the same store, for a thread of its own (a client serves one caller at a
    /// time, and a blocking `wait` holds it); `timeout` bounds its connecting and blocking calls.
    pub fn connect_again(&self, timeout: Duration) -> Result<TcpStore> {
        TcpStore::connect(&self.target, &self.token, timeout)
    }

    /// The address the store is served on (worker root only).
    pub fn served_on(&self) -> Option<std::net::SocketAddr> {
        self.server.as_ref().map(TcpStoreServer::addr)
    }
}

/// Meet the other ranks of this worker. The root serves on `port` (0: any free port, the usual
/// choice; several workers on one node need distinct ports); `timeout` bounds connecting and every
/// later blocking call. Collective over the worker's ranks: all of them call it. A root that cannot
/// serve makes every rank return its error.
///
/// The root listens on the loopback interface when every rank of the worker runs on its host, and
/// otherwise on the interface its host name resolves to; it admits only clients that present the
/// random token it sends to its ranks over the worker communicator.
pub fn worker_store(ctx: &mut WorkerContext<'_>, port: u16, timeout: Duration) -> Result<WorkerStore> {
    let host = propulate_engine::launcher::hostname();
    let hosts: Vec<String> = match ctx.worker_comm() {
        Some(comm) => comm
            .all_gather(host.clone().into_bytes())?
            .into_iter()
            .map(|h| String::from_utf8_lossy(&h).into_owned())
            .collect(),
        None => vec![host.clone()],
    };
    let root_host = hosts.first().cloned().unwrap_or_else(|| host.clone());
    let (server, mut announcement) = if ctx.is_worker_root() {
        let interface =
            if hosts.iter().all(|h| *h == root_host) { IpAddr::V4(Ipv4Addr::LOCALHOST) } else { interface_of(&host) };
        match StoreToken::random().and_then(|t| Ok((TcpStoreServer::bind(&interface.to_string(), port, t.clone())?, t)))
        {
            Ok((s, token)) => {
                let a = format!("ok {} {} {}", s.addr().ip(), s.addr().port(), to_hex(token.as_bytes()));
                (Some(s), a)
            }
            Err(e) => (None, format!("error {e}")),
        }
    } else {
        (None, String::new())
    };
    if let Some(comm) = ctx.worker_comm() {
        let mut bytes = announcement.into_bytes();
        comm.broadcast(0, &mut bytes)?;
        announcement = String::from_utf8_lossy(&bytes).into_owned();
    }
    let mut words = announcement.splitn(4, ' ');
    match (words.next(), words.next(), words.next(), words.next()) {
        (Some("ok"), Some(ip), Some(root_port), Some(token)) => {
            let malformed = || Error::Store(format!("malformed rendezvous announcement {announcement:?}"));
            let ip: IpAddr = ip.parse().map_err(|_| malformed())?;
            let root_port: u16 = root_port.parse().map_err(|_| malformed())?;
            let token = StoreToken::from_bytes(&from_hex(token).ok_or_else(malformed)?)?;
            let target = if ip.is_unspecified() || ip.is_loopback() {
                // Ranks on the root's machine connect through the loopback interface: it always
                // works, even where the host name does not resolve. A server on every interface is
                // reached from elsewhere by the root's host name.
                if host == root_host {
                    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), root_port).to_string()
                } else {
                    format!("{root_host}:{root_port}")
                }
            } else {
                // The root listens on one interface only: everyone, the root's host included, goes there.
                SocketAddr::new(ip, root_port).to_string()
            };
            let store = TcpStore::connect(&target, &token, timeout)?;
            Ok(WorkerStore { store, hosts, server, target, token })
        }
        (Some("error"), ..) => Err(Error::Store(format!(
            "the worker root could not serve the store: {}",
            announcement.strip_prefix("error TCP store: ").unwrap_or(&announcement)
        ))),
        _ => Err(Error::Store(format!("malformed rendezvous announcement {announcement:?}"))),
    }
}

/// The interface the worker's other hosts reach this one on: the first non-loopback address its host
/// name resolves to (IPv4 first). Where the name does not resolve, or resolves to loopback only (as
/// Debian's `127.0.1.1` entries do), there is no interface to pick, and the store listens on every
/// interface instead: still guarded by the token.
fn interface_of(host: &str) -> IpAddr {
    let mut addrs: Vec<IpAddr> = (host, 0)
        .to_socket_addrs()
        .map(|a| a.map(|a| a.ip()).filter(|ip| !ip.is_loopback()).collect())
        .unwrap_or_default();
    addrs.sort_by_key(|ip| !ip.is_ipv4());
    addrs.first().copied().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.is_ascii() || !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_survive_the_announcement_and_damaged_ones_are_refused() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(from_hex(&to_hex(&bytes)).unwrap(), bytes);
        for damaged in ["abc", "zz", "é0"] {
            assert_eq!(from_hex(damaged), None, "{damaged}");
        }
    }

    #[test]
    fn a_single_rank_worker_serves_on_loopback_and_meets_itself() {
        let mut ctx = WorkerContext::standalone(0, propulate_engine::launcher::Device::Cpu);
        let mut ws = worker_store(&mut ctx, 0, Duration::from_secs(5)).unwrap();
        assert!(ws.served_on().unwrap().ip().is_loopback());
        ws.store.set("k", b"v").unwrap();
        assert_eq!(ws.store.get("k").unwrap(), b"v");
    }
}
