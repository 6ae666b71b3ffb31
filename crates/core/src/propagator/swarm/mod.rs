//! The swarm family: particle swarm optimization in the reference's four variants, each worker a
//! particle.

mod pso;

pub use pso::{Pso, PsoConfig, PsoVariant};
