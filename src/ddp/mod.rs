//! Worker-side data-parallel training support: what the ranks of one multi-rank worker need to train
//! one model together inside the loss closure. It sees only the `WorkerContext`.
//!
//! - `DistributedSampler`: each rank's shard of the training data, reshuffled per epoch.
//! - `TcpStore` / `TcpStoreServer`: a rendezvous key-value store (set, get, add, wait, barrier).

mod sampler;
mod tcp_store;

pub use sampler::DistributedSampler;
pub use tcp_store::{TcpStore, TcpStoreServer};
