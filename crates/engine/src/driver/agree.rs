//! Agreement on errors before any rank goes on alone: every rank learns whether any rank failed,
//! and all return the lowest failing rank's error. An error crosses ranks as its kind and its own
//! message (not its display text), so the receiving rank rebuilds the same variant.

use serde::{Deserialize, Serialize};

use super::message::{decode, encode};
use crate::error::{Error, Result};
use crate::transport::Communicator;

/// An error as it travels between ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum WireError {
    Space(String),
    CoreConfig(String),
    Propagator(String),
    /// Core errors with static parts (unknown names, missing parents), kept as their text.
    CoreText(String),
    Config(String),
    Transport(String),
    Decode(String),
    Checkpoint(String),
    Observer(String),
    Report(String),
    Interrupted(String),
    Io {
        path: String,
        message: String,
    },
}

impl From<&Error> for WireError {
    fn from(e: &Error) -> Self {
        use propulate_core::Error as Core;
        match e {
            Error::Core(Core::InvalidSpace(m)) => WireError::Space(m.clone()),
            Error::Core(Core::InvalidConfig(m)) => WireError::CoreConfig(m.clone()),
            Error::Core(Core::InvalidPropagator(m)) => WireError::Propagator(m.clone()),
            Error::Core(other) => WireError::CoreText(other.to_string()),
            Error::InvalidConfig(m) => WireError::Config(m.clone()),
            Error::Transport(m) => WireError::Transport(m.clone()),
            Error::Decode(m) => WireError::Decode(m.clone()),
            Error::Checkpoint(m) => WireError::Checkpoint(m.clone()),
            Error::Observer(m) => WireError::Observer(m.clone()),
            Error::Report(m) => WireError::Report(m.clone()),
            Error::Interrupted(m) => WireError::Interrupted(m.clone()),
            Error::Io { path, source } => WireError::Io { path: path.clone(), message: source.to_string() },
        }
    }
}

impl From<WireError> for Error {
    fn from(w: WireError) -> Self {
        use propulate_core::Error as Core;
        match w {
            WireError::Space(m) => Error::Core(Core::InvalidSpace(m)),
            WireError::CoreConfig(m) => Error::Core(Core::InvalidConfig(m)),
            WireError::Propagator(m) => Error::Core(Core::InvalidPropagator(m)),
            WireError::CoreText(m) => Error::Core(Core::InvalidConfig(m)),
            WireError::Config(m) => Error::InvalidConfig(m),
            WireError::Transport(m) => Error::Transport(m),
            WireError::Decode(m) => Error::Decode(m),
            WireError::Checkpoint(m) => Error::Checkpoint(m),
            WireError::Observer(m) => Error::Observer(m),
            WireError::Report(m) => Error::Report(m),
            WireError::Interrupted(m) => Error::Interrupted(m),
            WireError::Io { path, message } => Error::Io { path, source: std::io::Error::other(message) },
        }
    }
}

/// Every rank learns every rank's outcome; all return the lowest failing rank's error, so that
/// rank 0 reports what went wrong anywhere and no rank goes on alone.
pub(crate) fn agree(world: &mut dyn Communicator, mine: Result<()>) -> Result<()> {
    let wire: Option<WireError> = mine.as_ref().err().map(WireError::from);
    let all = world.all_gather(encode(&wire))?;
    for (rank, bytes) in all.iter().enumerate() {
        if let Some(error) = decode::<Option<WireError>>(bytes, rank)? {
            return if rank == world.rank() { mine } else { Err(error.into()) };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::PointToPoint;
    use crate::transport::local::run_local;

    #[test]
    fn every_rank_returns_the_lowest_failing_ranks_error_as_the_same_variant() {
        let results = run_local(3, |mut c| {
            let mine = match c.rank() {
                0 => Ok(()),
                1 => Err(Error::Checkpoint("worker 1's journal is locked".into())),
                _ => Err(Error::InvalidConfig("rank 2's own problem".into())),
            };
            agree(&mut c, mine).map_err(|e| (matches!(e, Error::Checkpoint(_)), e.to_string()))
        });
        for r in results {
            let (is_checkpoint, text) = r.unwrap().unwrap_err();
            assert!(is_checkpoint, "{text}");
            assert_eq!(text, "checkpoint: worker 1's journal is locked");
        }
    }

    #[test]
    fn every_kind_survives_the_trip() {
        let errors = [
            Error::Core(propulate_core::Error::InvalidSpace("x".into())),
            Error::InvalidConfig("y".into()),
            Error::Observer("per-rank log: z".into()),
            Error::Report("reported step 1 after step 1".into()),
            Error::io("/a/b", std::io::Error::other("denied")),
        ];
        for e in errors {
            let back = Error::from(WireError::from(&e));
            assert_eq!(back.to_string(), e.to_string());
        }
    }
}
