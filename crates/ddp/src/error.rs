//! The data-parallel toolkit's error type: the rendezvous store, NCCL, bad sampler arguments, and
//! the worker communicator underneath. Each names what failed and, where there is one, the fix.

use thiserror::Error;

/// What can go wrong while the ranks of a worker train together.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The rendezvous store could not be served, reached or used.
    #[error("TCP store: {0}")]
    Store(String),
    /// NCCL or CUDA refused (library missing, GPU taken, driver error).
    #[error("NCCL: {0}")]
    Nccl(String),
    /// A bad argument (sampler shard, ranks, sizes).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// The worker's communicator failed.
    #[error(transparent)]
    Engine(#[from] propulate_engine::Error),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
