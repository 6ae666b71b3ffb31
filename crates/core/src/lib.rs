//! propulate-core: the pure parts of propulate-rs. Search spaces and their values, individuals and
//! their identities, the island population index, the propagators (parents and a random stream in,
//! offspring out), the layout of ranks into workers and islands, migration topologies, and the
//! reference's benchmark functions. No I/O, no MPI, no clock: everything here is a function of its
//! inputs and a seeded stream, and is tested as such.
#![warn(missing_docs)]

mod bayes;
pub mod condition;
pub mod csv_rows;
pub mod curve;
pub mod early_stop;
pub mod enqueued;
pub mod error;
pub mod front;
pub mod functions;
mod identity;
pub mod individual;
pub mod layout;
pub mod lineage;
pub mod multi_functions;
pub mod objective;
mod param;
pub mod pareto;
mod pareto_ranking;
pub mod population;
pub mod propagator;
pub mod rng;
pub mod schedule;
pub mod space;
mod space_file;
mod surrogate;
pub mod topology;
pub mod warm_start;

pub use error::{Error, Result};
pub use individual::{Individual, IndividualId, Params};
pub use layout::IslandSpec;
pub use lineage::Lineage;
pub use objective::{Direction, Objective};
pub use space::{SearchSpace, Value};
pub use topology::TopologySpec;
