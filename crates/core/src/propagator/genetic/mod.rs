//! The genetic family: the default propagator (`default.rs`, the reference's genetic breeding
//! with differential-evolution steps) and the operators it is composed of: selections, crossovers,
//! mutations, the differential step and uniform initialization (random search).

mod crossover;
mod default;
mod differential;
mod init;
mod mutation;
mod selection;

pub use crossover::{CrossoverMultiple, CrossoverSigmoid, CrossoverUniform};
pub use default::{DefaultPropagatorConfig, default_propagator};
pub use differential::DifferentialStep;
pub use init::InitUniform;
pub use mutation::{IntervalMutationNormal, PointMutation, RandomPointMutation};
pub use selection::{SelectMax, SelectMin, SelectUniform};
