//! propulate-base: the `propulate` facade without the CNN task, which the command line's own
//! crate (`propulate-cli`) builds on, so that the main binary never links Burn or libtorch. The
//! `propulate` crate re-exports all of it, plus `cnn` with its cargo feature.
//!
//! It re-exports the layers, each a crate of its own (see docs/architecture.md).
//!
//! - [`propulate_core`]: search spaces, individuals, populations, propagators, layouts, topologies
//!   and the benchmark functions (no I/O, no MPI);
//! - [`propulate_engine`]: the [`Optimizer`], transports, driver, checkpoints, observers, results;
//! - [`ddp`] (`propulate_ddp`): data-parallel training inside a loss (sampler, TCP store, gradient
//!   averaging over the worker communicator or NCCL);
//! - [`trial`] (`propulate_trial`): a user's own program as the loss, every rank of a worker
//!   running one process of it with a torchrun-compatible environment;
//!
//! ```
//! use propulate_base::{Optimizer, SearchSpace};
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
//! # Ok::<(), propulate_base::Error>(())
//! ```
#![warn(missing_docs)]

pub use propulate_core::{
    Direction, Individual, IndividualId, IslandSpec, Lineage, Objective, Params, SearchSpace, TopologySpec, Value,
};
pub use propulate_core::{
    early_stop, enqueued, front, functions, individual, layout, lineage, multi_functions, objective, pareto,
    population, propagator, rng, schedule, space, topology,
};
pub use propulate_engine::{
    Error, Interrupted, LossError, LossResult, LossValue, ObjectivesResult, Observer, ObserverMode, Optimizer, Result,
    RunConfig, RunResult, Selection, TrainingState, WorkerContext,
};
pub use propulate_engine::{
    config, context, driver, files, interrupt, journal, launcher, observe, optimizer, optuna_journal, output, report,
    report_html, result, training_state, transport,
};

/// Data-parallel training inside a loss: sampler, rendezvous store, gradient averaging.
pub use propulate_ddp as ddp;

/// A user's own program as a multi-rank trial (the CLI's `--space FILE -- COMMAND`).
pub use propulate_trial as trial;

/// The core's error type (bad spaces, propagators, layouts), which [`Error`] wraps.
pub use propulate_core::Error as CoreError;
