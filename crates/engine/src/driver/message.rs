//! What worker roots say to each other, and its compact binary encoding (postcard). One data tag
//! carries all four kinds, so that one probe drains the inbox and messages between two workers
//! keep their order.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::transport::Tag;
use propulate_core::individual::{Individual, IndividualId};

/// Tag of data messages between worker roots (counted by the termination protocol).
pub const TAG_DATA: Tag = 1;
/// Tag of the evaluated trials sent to rank 0 at the end.
pub const TAG_TRIALS: Tag = 2;
/// Tag of the island shares exchanged by the worker roots on resume.
pub const TAG_RESUME: Tag = 3;

/// A message between worker roots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Message {
    /// A freshly evaluated individual, for the island peers of its breeder.
    Evaluated(Individual),
    /// Individuals arriving from another island (moved or, with pollination, copied).
    Migrants(Vec<Individual>),
    /// Identities to deactivate, with the migration step of the copy to deactivate.
    Deactivate(Vec<(IndividualId, u32)>),
    /// A report of an evaluation its breeder is still running, for the island peers' early
    /// stoppers (only with a stopper that hears running evaluations).
    Progress {
        /// The running evaluation.
        id: IndividualId,
        /// The training step it reached.
        step: u64,
        /// The value it reported at that step.
        value: f64,
    },
    /// A child its breeder has started evaluating, for the island peers' models (only with a
    /// propagator that models running evaluations: the GP's fantasies). Never journaled: a resume
    /// breeds the unfinished children again, and their peers hear of them then.
    Running(Individual),
}

/// Encode any serde value for the wire.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).expect("in-memory encoding cannot fail")
}

/// Decode a value received from `source`.
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8], source: usize) -> Result<T> {
    postcard::from_bytes(bytes)
        .map_err(|e| Error::Decode(format!("message from worker {source} ({} bytes): {e}", bytes.len())))
}
