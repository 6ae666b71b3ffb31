//! Population-based training's states, as one worker root keeps them: a directory to save into
//! before each evaluation, the state renamed into place when it succeeded, and the worker's own
//! states deleted once nobody can need them (`crate::training_state` holds the layout on disk).
//!
//! A state of this worker is kept while it is one of the worker's two latest (the next evaluation
//! continues the latest), less than `keep_s` seconds (PBT's setting) past the moment its member
//! moved on (a peer that bred from it may not have said so yet: messages lag), the worker's best,
//! the island's best, what a running evaluation of the island continues (the peers announce each
//! child as it starts), or an individual that left the island (migration: another island may
//! exploit it). Anything else goes: a run keeps a few states per member, not one per evaluation.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use propulate_core::individual::{Individual, IndividualId};

use super::RootWorker;
use crate::error::{Error, Result};
use crate::observe::Event;

/// How many of a worker's latest states are always kept.
const LATEST_KEPT: usize = 2;

/// The states one worker root has on disk.
#[derive(Debug, Default)]
pub(crate) struct OwnStates {
    /// Its evaluations whose state is saved.
    saved: BTreeSet<IndividualId>,
    /// When each saved state stopped being its member's latest (a newer one was saved).
    superseded: BTreeMap<IndividualId, Instant>,
    /// Its lowest loss with a saved state.
    best: Option<(f64, IndividualId)>,
}

impl OwnStates {
    /// The states of a resumed worker's evaluations that are still on disk.
    pub fn resumed(evaluated: &[Individual], saved: impl Fn(IndividualId) -> bool) -> Self {
        let mut own = OwnStates::default();
        for ind in evaluated.iter().filter(|i| i.lineage.is_some() && i.failure.is_none()) {
            if saved(ind.id) {
                own.add(ind);
            }
        }
        own
    }

    fn add(&mut self, ind: &Individual) {
        if let Some(&latest) = self.saved.last() {
            self.superseded.entry(latest).or_insert_with(Instant::now);
        }
        self.saved.insert(ind.id);
        if self.best.is_none_or(|(loss, _)| ind.loss < loss) {
            self.best = Some((ind.loss, ind.id));
        }
    }
}

impl RootWorker<'_, '_> {
    /// Before `ind` is evaluated: its directory to save into, and the state it continues present;
    /// otherwise it fails without running, with the reason (its member then exploits another,
    /// retries from the state before, or starts afresh).
    pub(super) fn prepare_state(&mut self, ind: &mut Individual) {
        if let (Some(states), Some(lineage)) = (&self.run.states, &ind.lineage)
            && let Err(reason) = states.prepare(ind.id, lineage)
        {
            ind.failure = Some(reason);
        }
    }

    /// After `ind` was evaluated, before it is journaled: its state kept if it succeeded, removed
    /// if it failed. A state that cannot be renamed into place ends the run (a full or failing
    /// disk): everything journaled so far stays.
    pub(super) fn finish_state(&mut self, ind: &Individual) -> Result<()> {
        let (Some(states), Some(_)) = (&self.run.states, &ind.lineage) else { return Ok(()) };
        let succeeded = ind.failure.is_none();
        states.finish(ind.id, succeeded).map_err(|e| {
            Error::Checkpoint(format!(
                "could not keep the training state of {} in {}: {e}",
                ind.id,
                states.saved(ind.id).display()
            ))
        })?;
        if succeeded {
            self.own_states.add(ind);
        }
        Ok(())
    }

    /// Delete this worker's states that nobody can need any more (see the module documentation).
    pub(super) fn collect_states(&mut self) {
        let Some(states) = &self.run.states else { return };
        if self.own_states.saved.len() <= LATEST_KEPT {
            return;
        }
        let Some(keep_s) = self.propagator.training_state_keep_s() else { return };
        let keep_for = Duration::from_secs_f64(keep_s);
        let own = &self.own_states;
        let mut keep: BTreeSet<IndividualId> = own.saved.iter().rev().take(LATEST_KEPT).copied().collect();
        keep.extend(own.best.map(|(_, id)| id));
        keep.extend(self.population.iter_best().next().map(|i| i.id));
        keep.extend(self.population.running().filter_map(|i| i.lineage.as_ref().and_then(|l| l.parent)));
        let recent = |id: &IndividualId| own.superseded.get(id).is_none_or(|t| t.elapsed() < keep_for);
        // Left the island (inactive here): another island may still exploit it.
        let departed = |id: &IndividualId| !self.population.is_active(id) && self.population.get(id).is_some();
        let unneeded: Vec<IndividualId> =
            own.saved.iter().filter(|id| !keep.contains(id) && !recent(id) && !departed(id)).copied().collect();
        for id in unneeded {
            self.own_states.superseded.remove(&id);
            match states.remove(id) {
                Ok(()) => {
                    self.own_states.saved.remove(&id);
                }
                Err(e) => {
                    let path = states.saved(id);
                    let text =
                        format!("could not delete the training state {} (no longer needed): {e}", path.display());
                    self.observers.emit(&Event::Warning(&text));
                    // Not tried again: one warning per state.
                    self.own_states.saved.remove(&id);
                }
            }
        }
    }
}
