//! The CNN task's error type: data that cannot be read, a bad hyperparameter or setting, and the
//! data-parallel layer underneath.

use thiserror::Error;

/// What can go wrong while loading data or training the network.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// Training data is missing or malformed.
    #[error("data: {0}")]
    Data(String),
    /// A bad setting or hyperparameter.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A name that is not known (activation, ...).
    #[error("unknown {kind} '{name}'; valid: {valid}")]
    UnknownName {
        /// What kind of name this is.
        kind: &'static str,
        /// The name given.
        name: String,
        /// The valid names, comma separated.
        valid: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Gradient averaging or the rendezvous failed.
    #[error(transparent)]
    Ddp(#[from] propulate_ddp::Error),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        Error::Io { path: path.as_ref().display().to_string(), source }
    }
}
