//! From a name to a propagator: the specification the command line and the checkpoint's manifest
//! carry (`spec.rs`), the choice of one with its settings and what a resume continues
//! (`choice.rs`), and `auto`, which picks by the space and the budget (`auto.rs`).

pub(super) mod auto;
pub(super) mod choice;
pub(super) mod spec;

pub use auto::{AUTO, CMAES_FROM, GP_EVALUATIONS, Problem};
pub use choice::{Continued, GivenSetting, PropagatorChoice};
pub use spec::PropagatorSpec;
