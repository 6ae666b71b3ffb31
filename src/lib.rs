//! propulate: asynchronous island-model evolutionary hyperparameter optimization on MPI.
#![warn(missing_docs)]

pub mod cli;
#[cfg(feature = "cnn")]
pub mod cnn;
pub mod config;
pub mod context;
pub mod ddp;
pub mod driver;
pub mod error;
pub mod functions;
pub mod individual;
pub mod journal;
pub mod launcher;
pub mod layout;
pub mod optimizer;
pub mod output;
pub mod plot;
pub mod population;
pub mod propagator;
pub mod report;
pub mod rng;
pub mod space;
pub mod topology;
pub mod transport;

pub use config::{RunConfig, Selection};
pub use context::WorkerContext;
pub use driver::{LossResult, RunResult};
pub use error::{Error, Result};
pub use individual::{Individual, IndividualId, Params};
pub use layout::IslandSpec;
pub use optimizer::Optimizer;
pub use space::{SearchSpace, Value};
pub use topology::TopologySpec;
