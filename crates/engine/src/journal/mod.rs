//! Checkpoints as an append-only journal: a manifest (format version, run config, search space,
//! layout, seed) written atomically, plus one JSON Lines journal per worker root recording what it
//! bred, evaluated, sent to other islands, received and deactivated. Appending is one `write` of one
//! line per event, O(1); resume replays every journal.
//!
//! Every start on an existing checkpoint opens new journal segments (`worker-00003.0002.jsonl`), so a
//! resume never rewrites or truncates what an earlier run wrote, even a torn last line.

mod legacy_propagator;
mod lock;
mod manifest;
mod mirror;
mod replay;
mod reshape;
mod snapshot;
mod validate;
mod writer;

pub use lock::{JournalLock, LockMode};
pub use manifest::{
    CheckpointLayout, FORMAT, MAX_GENERATION_OFFSET, MAX_MANIFEST_BYTES, MAX_WORKERS, Manifest, VERSION,
};
pub use mirror::{JournalMirror, SegmentsRead};
pub use replay::{
    Replay, WorkerJournal, WorkerRead, inspect_checkpoint, island_population, island_populations, read_checkpoint,
    read_worker_journal,
};
pub use reshape::reshape;
pub(crate) use reshape::seed_checkpoint;
pub use snapshot::{JournalRef, WORTH_WRITING_VAR, write as write_snapshot};
pub use writer::{FsyncPolicy, JournalWriter, Rolled, SEGMENT_BYTES_VAR, ensure_unlocked, segment_bytes};

use serde::{Deserialize, Serialize};

use propulate_core::individual::{Individual, IndividualId};
use propulate_core::space::Value;

/// One line of a worker's journal: `{"e":"<kind>", <the record's fields>}`. Each kind is a named
/// record, and a reader parses a line straight into the record its tag names.
/// Events are made and written (or read and applied) one at a time, never held in bulk, so an
/// `eval` as large as its individual costs nothing a box would save.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "e", rename_all = "lowercase")]
pub enum Event {
    /// A child was bred and its evaluation starts (not yet evaluated).
    Bred(Bred),
    /// An evaluation finished (written before the result is sent to anyone).
    Eval(Eval),
    /// Individuals sent to another island (moved, or copied with pollination), as the receivers
    /// get them: with their new migration step and responsible worker.
    Emig(Migrants),
    /// Individuals carried over into an island from another checkpoint (`--reshape-from`), written
    /// once, before the run starts, with their responsible worker on that island.
    Seed(Migrants),
    /// Individuals received from another island (for readers; replay uses the sender's `emig`).
    Immig(Immig),
    /// Identities this worker deactivated on its island (emigrants, or victims of pollination).
    Deact(Deact),
    /// The worker finished its generations and the run ended cleanly.
    Done(Done),
}

/// A `bred` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bred {
    /// The child's identity.
    pub id: IndividualId,
    /// The child's values, in parameter order.
    pub values: Vec<Value>,
}

/// An `eval` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Eval {
    /// The evaluated individual.
    pub ind: Individual,
}

/// An `emig` or `seed` record: individuals for island `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Migrants {
    /// The island they go to.
    pub to: u32,
    /// The individuals.
    pub inds: Vec<Individual>,
}

/// An `immig` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Immig {
    /// The sending worker.
    pub from: u32,
    /// Identities and migration steps received.
    pub ids: Vec<(IndividualId, u32)>,
}

/// A `deact` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deact {
    /// Identity and migration step of each deactivated copy.
    pub ids: Vec<(IndividualId, u32)>,
}

/// A `done` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// Generations this worker had evaluated at the end.
    pub generations: u64,
}
