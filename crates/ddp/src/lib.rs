//! propulate-ddp: worker-side data-parallel training support: what the ranks of one multi-rank worker need to train
//! one model together inside the loss closure. It sees only the `WorkerContext`.
//!
//! - `DistributedSampler`: each rank's shard of the training data, reshuffled per epoch.
//! - `TcpStore` / `TcpStoreServer`: a rendezvous key-value store (set, get, add, wait, barrier) that
//!   admits only the holders of a `StoreToken`, within `StoreLimits`; `worker_store` sets one up for
//!   the ranks of a worker, the token passed over the worker's communicator.
//! - `GradSync`: gradient averaging between replicas; `CommGradSync` over the worker communicator,
//!   `NcclGradSync` between GPUs (cargo feature `nccl`), joined only once every rank is ready.

pub mod error;
mod grad_sync;
#[cfg(feature = "nccl")]
mod nccl;
#[cfg(feature = "nccl")]
mod nccl_library;
mod rendezvous;
mod sampler;
mod tcp_store;

pub use error::{Error, Result};
pub use grad_sync::{CommGradSync, GradSync, replicas_agree};
#[cfg(feature = "nccl")]
pub use nccl::{NcclGradSync, nccl_available};
pub use rendezvous::{WorkerStore, worker_store};
pub use sampler::DistributedSampler;
pub use tcp_store::{StoreLimits, StoreToken, TOKEN_LEN, TcpStore, TcpStoreServer};
