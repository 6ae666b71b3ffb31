//! Rendezvous of one worker's ranks: the worker root serves a [`TcpStore`] and tells its ranks where
//! over the worker communicator; every rank, the root included, connects as a client.

use std::time::Duration;

use super::tcp_store::{TcpStore, TcpStoreServer};
use crate::error::{Error, Result};
use propulate_engine::context::WorkerContext;

/// A worker's store: the client of this rank, and on the worker root the server too (it serves as
/// long as this value lives, so keep it for the whole evaluation).
pub struct WorkerStore {
    /// This rank's client.
    pub store: TcpStore,
    server: Option<TcpStoreServer>,
}

impl WorkerStore {
    /// The address the store is served on (worker root only).
    pub fn served_on(&self) -> Option<std::net::SocketAddr> {
        self.server.as_ref().map(TcpStoreServer::addr)
    }
}

/// Meet the other ranks of this worker. The root serves on `port` (0: any free port, the usual
/// choice; several workers on one node need distinct ports); `timeout` bounds connecting and every
/// later blocking call. Collective over the worker's ranks: all of them call it. A root that cannot
/// serve makes every rank return its error.
pub fn worker_store(ctx: &mut WorkerContext<'_>, port: u16, timeout: Duration) -> Result<WorkerStore> {
    let host = propulate_engine::launcher::hostname();
    let (server, mut announcement) = if ctx.is_worker_root() {
        match TcpStoreServer::bind("0.0.0.0", port) {
            Ok(s) => {
                let a = format!("ok {host} {}", s.addr().port());
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
    let mut words = announcement.splitn(3, ' ');
    match (words.next(), words.next(), words.next()) {
        (Some("ok"), Some(root_host), Some(root_port)) => {
            // Ranks on the root's machine connect through the loopback interface: it always works,
            // even where the host name does not resolve.
            let target = if root_host == host { "127.0.0.1" } else { root_host };
            let store = TcpStore::connect(&format!("{target}:{root_port}"), timeout)?;
            Ok(WorkerStore { store, server })
        }
        (Some("error"), ..) => Err(Error::Store(format!(
            "the worker root could not serve the store: {}",
            announcement.strip_prefix("error TCP store: ").unwrap_or(&announcement)
        ))),
        _ => Err(Error::Store(format!("malformed rendezvous announcement {announcement:?}"))),
    }
}
