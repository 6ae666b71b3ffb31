//! propulate: asynchronous island-model evolutionary hyperparameter optimization on MPI.
//!
//! This crate is the front door: it re-exports the layers, each a crate of its own (see
//! docs/architecture.md), through `propulate-base` (all but the CNN task) and `cnn`.
//!
//! - [`propulate_core`]: search spaces, individuals, populations, propagators, layouts, topologies
//!   and the benchmark functions (no I/O, no MPI);
//! - [`propulate_engine`]: the [`Optimizer`], transports, driver, checkpoints, observers, results;
//! - [`ddp`] (`propulate_ddp`): data-parallel training inside a loss (sampler, TCP store, gradient
//!   averaging over the worker communicator or NCCL);
//! - [`trial`] (`propulate_trial`): a user's own program as the loss, every rank of a worker
//!   running one process of it with a torchrun-compatible environment;
//! - `cnn` (`propulate_cnn`, cargo feature `cnn`): the reference tutorial's CNN on MNIST-format data.
//!
//! ```
//! use propulate::{Optimizer, SearchSpace};
//!
//! let space = SearchSpace::builder()
//!     .float("x", -5.0, 5.0)
//!     .int("n", 1, 8)
//!     .categorical("act", &["relu", "tanh"])
//!     .build()?;
//! // Four workers as threads of this process, two islands of two.
//! let result = Optimizer::new(space)
//!     .generations(60)
//!     .islands(2)
//!     .seed(1)
//!     .run_local(4, |p, _ctx| {
//!         let penalty = if p.category("act") == "relu" { 0.0 } else { 1.0 };
//!         Ok(p.float("x").powi(2) + (p.int("n") - 3).abs() as f64 + penalty)
//!     })?;
//! assert_eq!(result.evaluations, 4 * 60);
//! assert!(result.consistent);
//! assert!(result.best[0].loss < 1.0);
//! # Ok::<(), propulate::Error>(())
//! ```
#![warn(missing_docs)]

pub use propulate_base::*;

/// The CNN task: the reference tutorial's network on MNIST-format data (cargo feature `cnn`).
#[cfg(feature = "cnn")]
pub use propulate_cnn as cnn;
