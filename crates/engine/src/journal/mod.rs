//! Checkpoints as an append-only journal: a manifest (format version, run config, search space,
//! layout, seed) written atomically, plus one JSON Lines journal per worker root recording what it
//! bred, evaluated, sent to other islands, received and deactivated. Appending is one `write` of one
//! line per event, O(1); resume replays every journal.
//!
//! Every start on an existing checkpoint opens new journal segments (`worker-00003.0002.jsonl`), so a
//! resume never rewrites or truncates what an earlier run wrote, even a torn last line.

mod manifest;
mod replay;
mod reshape;
mod writer;

pub use manifest::{CheckpointLayout, FORMAT, Manifest, VERSION};
pub use replay::{Replay, WorkerJournal, inspect_checkpoint, island_population, read_checkpoint, read_worker_journal};
pub use reshape::reshape;
pub use writer::{FsyncPolicy, JournalWriter, ensure_unlocked};

use serde::{Deserialize, Serialize};

use propulate_core::individual::{Individual, IndividualId};
use propulate_core::space::Value;

/// One line of a worker's journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "e", rename_all = "lowercase")]
pub enum Event {
    /// A child was bred and its evaluation starts (not yet evaluated).
    Bred {
        /// The child's identity.
        id: IndividualId,
        /// The child's values, in parameter order.
        values: Vec<Value>,
    },
    /// An evaluation finished (written before the result is sent to anyone).
    Eval {
        /// The evaluated individual.
        ind: Individual,
    },
    /// Individuals sent to island `to` (moved, or copied with pollination), as the receivers get them.
    Emig {
        /// Target island.
        to: u32,
        /// The migrants, with their new migration step and responsible worker.
        inds: Vec<Individual>,
    },
    /// Individuals carried over into island `to` from another checkpoint (`--reshape-from`),
    /// written once, before the run starts.
    Seed {
        /// The island they start on.
        to: u32,
        /// The individuals, with their responsible worker on that island.
        inds: Vec<Individual>,
    },
    /// Individuals received from another island (for readers; replay uses the sender's `emig`).
    Immig {
        /// The sending worker.
        from: u32,
        /// Identities and migration steps received.
        ids: Vec<(IndividualId, u32)>,
    },
    /// Identities this worker deactivated on its island (emigrants, or victims of pollination).
    Deact {
        /// Identity and migration step of each deactivated copy.
        ids: Vec<(IndividualId, u32)>,
    },
    /// The worker finished its generations and the run ended cleanly.
    Done {
        /// Generations this worker had evaluated at the end.
        generations: u64,
    },
}

/// The journal file of `worker`, segment `segment`.
pub fn segment_name(worker: usize, segment: u32) -> String {
    format!("worker-{worker:05}.{segment:04}.jsonl")
}

/// Parse a journal file name back into (worker, segment).
pub fn parse_segment_name(name: &str) -> Option<(usize, u32)> {
    let rest = name.strip_prefix("worker-")?.strip_suffix(".jsonl")?;
    let (w, s) = rest.split_once('.')?;
    if w.len() != 5 || s.len() != 4 {
        return None;
    }
    Some((w.parse().ok()?, s.parse().ok()?))
}
