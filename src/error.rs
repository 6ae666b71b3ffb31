//! The library's one error type. Every message names the bad input and, where there is one, the fix.

use thiserror::Error;

/// Everything that can go wrong in the library, from a bad search space to a failed transport.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A search-space definition is invalid (empty, bad bounds, duplicate names, no choices).
    #[error("invalid search space: {0}")]
    InvalidSpace(String),
    /// A run option is invalid (generations, island sizes, topology, probabilities, ...).
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
    /// The message transport (MPI or in-process) failed.
    #[error("transport: {0}")]
    Transport(String),
    /// A message could not be decoded: a version mismatch or a corrupted payload.
    #[error("decode: {0}")]
    Decode(String),
    /// A checkpoint is missing, corrupted, foreign or does not match the run.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// The rendezvous store could not be served, reached or used.
    #[error("TCP store: {0}")]
    Store(String),
    /// Training data is missing or malformed.
    #[error("data: {0}")]
    Data(String),
    /// A per-rank log file could not be opened.
    #[error("per-rank log: {0}")]
    RankLog(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        Error::Io { path: path.as_ref().display().to_string(), source }
    }
}
