//! The core's error type: what can be wrong with a search space, a propagator or a layout. Every
//! message names the bad input and, where there is one, the fix.

use thiserror::Error;

/// A bad definition: search space, propagator, layout, topology or name.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A search-space definition is invalid (empty, bad bounds, duplicate names, no choices).
    #[error("invalid search space: {0}")]
    InvalidSpace(String),
    /// Values do not fit a search space (wrong count, wrong type, out of bounds, no such choice):
    /// what a damaged or edited journal can hold.
    #[error("values outside the search space: {0}")]
    OutsideSpace(String),
    /// A run option is invalid (island sizes, topology, probabilities, ...).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A propagator was assembled wrongly (arity mismatch in `Compose`, bad probability, ...).
    #[error("invalid propagator: {0}")]
    InvalidPropagator(String),
    /// A propagator was given fewer parents than it needs.
    #[error("propagator {name} needs {needed} parents but got {got}")]
    NotEnoughParents {
        /// The propagator's name.
        name: &'static str,
        /// How many it needs.
        needed: usize,
        /// How many it got.
        got: usize,
    },
    /// A name that is not known (benchmark function, parameter, topology, ...).
    #[error("unknown {kind} '{name}'; valid: {valid}")]
    UnknownName {
        /// What kind of name this is.
        kind: &'static str,
        /// The name given.
        name: String,
        /// The valid names, comma separated.
        valid: String,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
