//! From a name to a propagator: the specification the command line and the checkpoint's manifest
//! carry (`spec.rs`), the choice of one with its settings and what a resume continues
//! (`choice.rs`), `auto`, which picks by the space and the budget (`auto.rs`), and the
//! compositions a configuration builds (`composed.rs`: the GP with its hand-over, portfolio and
//! quadratic model).

pub(super) mod auto;
pub(super) mod choice;
pub(super) mod composed;
pub(super) mod spec;

pub use auto::{AUTO, CMAES_FROM, GP_EVALUATIONS, Problem};
pub use choice::{Continued, GivenSetting, PropagatorChoice};
pub use spec::PropagatorSpec;
