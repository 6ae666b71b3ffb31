//! Who bred an individual: the identity every record of it carries (the journal, messages, trial
//! tables), apart from the individual itself so that what refers to an individual (its lineage)
//! needs only this.

use serde::{Deserialize, Serialize};

/// Who bred an individual: unique across a run, because each worker counts its own generations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct IndividualId {
    /// The island the individual was born on.
    pub island: u32,
    /// The global index of the worker that bred it.
    pub worker: u32,
    /// That worker's generation counter when it bred it.
    pub generation: u64,
}

/// The worker of an individual a warm start imported (`--warm-start`): evaluated by an earlier run,
/// not by a worker of this one; its generation is its place among the imported ones.
pub const IMPORTED: u32 = u32::MAX;

impl IndividualId {
    /// True for an individual a warm start imported ([`IMPORTED`]).
    pub fn is_imported(&self) -> bool {
        self.worker == IMPORTED
    }
}

impl std::fmt::Display for IndividualId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.island, self.worker, self.generation)
    }
}
