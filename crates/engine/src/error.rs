//! The engine's error type. Every message names the bad input and, where there is one, the fix.

use thiserror::Error;

/// Everything that can go wrong in a run: a bad definition (from the core), a bad option, a failed
/// transport, a checkpoint that does not fit, a file that cannot be read or written.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// A bad search space, propagator, layout, topology or name.
    #[error(transparent)]
    Core(#[from] propulate_core::Error),
    /// A run option is invalid (generations, limits, output directories, ...).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// The message transport (MPI or in-process) failed.
    #[error("transport: {0}")]
    Transport(String),
    /// A message could not be decoded: a version mismatch or a corrupted payload.
    #[error("decode: {0}")]
    Decode(String),
    /// A checkpoint is missing, corrupted, foreign or does not match the run.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// A report of an intermediate value that cannot be taken (a step that does not increase, too
    /// many reports, a stop rule that panicked).
    #[error("report: {0}")]
    Report(String),
    /// An observer could not start (a per-rank log file that cannot be opened, ...).
    #[error("{0}")]
    Observer(String),
    /// A loss ended the run ([`Interrupted`](crate::interrupt::Interrupted): Ctrl-C in a front); the
    /// checkpoint holds everything recorded before it.
    #[error("interrupted: {0}")]
    Interrupted(String),
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
