//! The model-based family (Bayesian optimization): a model of the losses seen so far decides the
//! next point. The Gaussian process (`gp.rs`, with its trust region and the coordinates of its
//! inputs; its statistics live in `crate::bayes`), the tree-structured Parzen estimator (`tpe.rs`
//! over the densities of `parzen.rs`) and PB2's bandit for population-based training (`pb2.rs`).

pub(super) mod gp;
pub(super) mod gp_coordinates;
pub(super) mod parzen;
pub(super) mod pb2;
pub(super) mod tpe;
pub(super) mod trust_region;

pub use gp::{Gp, GpConfig};
pub use tpe::{Tpe, TpeConfig, TpeModel};
