//! Breeding: one offspring from the island population as this worker knows it, checked against
//! the search space and stamped with its identity; with population-based training, claimed: the
//! island hears of it before its worker checks that the state it continues is still there, so
//! that the state's owner, which keeps every state a running evaluation it has heard of
//! continues, deletes it between the check and the load only if the announcement took longer to
//! arrive than the owner keeps superseded states (`--pbt-keep-seconds`).

use std::collections::BTreeSet;

use propulate_core::error::Error as CoreError;
use propulate_core::individual::{Individual, IndividualId};
use propulate_core::propagator::Excluding;

use super::RootWorker;
use crate::error::Result;
use crate::transport::Communicator;

/// How many workers' members with a gone state one breeding leaves out before it gives up (the
/// evaluation then fails with the reason, and its member goes on at its next one).
const MAX_GONE: usize = 16;

impl RootWorker<'_, '_> {
    /// The child of `generation`, announced to the island when the propagator models running
    /// evaluations. A child that would exploit a member whose training state is gone (deleted by
    /// its owner while this worker's view of it lagged) is bred again without that member.
    pub(super) fn breed_and_announce(&mut self, generation: u64, roots: &mut dyn Communicator) -> Result<Individual> {
        let mut gone = BTreeSet::new();
        loop {
            let child = self.breed(generation, &gone)?;
            self.announce_running(roots, &child)?;
            match self.exploits_a_gone_state(&child) {
                Some(parent) if gone.len() < MAX_GONE => {
                    gone.insert(parent.worker);
                }
                _ => return Ok(child),
            }
        }
    }

    fn breed(&mut self, generation: u64, gone: &BTreeSet<u32>) -> Result<Individual> {
        let space = self.run.space;
        // Propagators that keep per-worker state in the population (PSO's particles) learn who breeds.
        let breeder = self.breeder(generation);
        let mut children = if let Some(values) = self.enqueued_for(generation) {
            vec![Individual::new(values.clone())]
        } else if gone.is_empty() {
            self.propagator.propagate_as(breeder, &self.population, space, &mut self.rng)?
        } else {
            let pool = Excluding { pool: &self.population, gone };
            self.propagator.propagate_as(breeder, &pool, space, &mut self.rng)?
        };
        if children.len() != 1 {
            return Err(CoreError::InvalidPropagator(format!(
                "the driver needs a propagator with one offspring, {} yielded {}",
                self.propagator.name(),
                children.len()
            ))
            .into());
        }
        let mut ind = children.remove(0);
        if !space.contains(&ind.values) {
            return Err(CoreError::InvalidPropagator(format!(
                "propagator {} bred values outside the search space: {:?}",
                self.propagator.name(),
                ind.values
            ))
            .into());
        }
        ind.id = IndividualId { island: self.island as u32, worker: self.worker as u32, generation };
        // A child has no result yet, whatever the propagator copied: a failure set here would be
        // taken for one the driver set before the evaluation (a training state that is missing).
        ind.loss = f64::INFINITY;
        ind.failure = None;
        ind.objectives.clear();
        ind.metrics.clear();
        ind.curve = None;
        ind.responsible_worker = self.index_in_island;
        ind.migration_steps = 0;
        ind.history = vec![self.island as u32];
        Ok(ind)
    }

    /// The configuration known in advance that is this worker's child of `generation`, if any:
    /// configuration k goes to worker `k mod workers` in its generation `k / workers`, counted
    /// from the run's first generation.
    pub(super) fn enqueued_for(&self, generation: u64) -> Option<&Vec<propulate_core::Value>> {
        let enqueued = &self.run.enqueued;
        if enqueued.is_empty() {
            return None;
        }
        let round = usize::try_from(generation.checked_sub(self.generation_offset)?).ok()?;
        let k = round.checked_mul(self.run.layout.workers())?.checked_add(self.worker)?;
        enqueued.get(k)
    }

    /// The member `child` would exploit, when its training state is no longer on disk.
    fn exploits_a_gone_state(&self, child: &Individual) -> Option<IndividualId> {
        let states = self.run.states.as_ref()?;
        let lineage = child.lineage.as_deref()?;
        let parent = lineage.parent.filter(|_| lineage.exploited)?;
        (!states.saved(parent).is_dir()).then_some(parent)
    }
}
