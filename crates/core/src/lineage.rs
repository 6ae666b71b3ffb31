//! Where an evaluation of population-based training starts from: the training state it continues
//! (its member's own last one, or a better member's it exploits) and the step that state is at.
//! Recorded with the individual, so that the journal, the trial tables and the report can follow
//! every member's line and a resumed run continues each member from the same state.

use serde::{Deserialize, Serialize};

use crate::identity::IndividualId;

/// An evaluation's place in its member's training.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lineage {
    /// The evaluation whose saved training state this one continues; `None`: a fresh member,
    /// trained from scratch.
    pub parent: Option<IndividualId>,
    /// Training steps already done in the state it continues (0 for a fresh member).
    pub step: u64,
    /// Training steps this evaluation does (the interval).
    pub steps: u64,
    /// True when the parent is another member's evaluation, copied because this member was among
    /// the worst (exploit); false when it continues its own member's last state or starts fresh.
    pub exploited: bool,
}

impl Lineage {
    /// A fresh member: no state to continue, `steps` to train.
    pub fn fresh(steps: u64) -> Self {
        Lineage { parent: None, step: 0, steps, exploited: false }
    }

    /// The steps done once this evaluation has trained: what a child continuing it starts at.
    pub fn step_after(&self) -> u64 {
        self.step.saturating_add(self.steps)
    }
}
