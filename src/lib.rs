//! propulate: asynchronous island-model evolutionary hyperparameter optimization on MPI.
#![warn(missing_docs)]

pub mod error;
pub mod individual;
pub mod population;
pub mod propagator;
pub mod rng;
pub mod space;
pub mod transport;

pub use error::{Error, Result};
