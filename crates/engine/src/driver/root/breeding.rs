//! Breeding: one offspring from the island population as this worker knows it, checked against
//! the search space and stamped with its identity; with population-based training, claimed: the
//! island hears of it before its worker checks that the state it continues is still there, so
//! that the state's owner, which keeps every state a running evaluation it has heard of
//! continues, deletes it between the check and the load only if the announcement took longer to
//! arrive than the owner keeps superseded states (`--pbt-keep-seconds`).

use std::collections::BTreeSet;

use propulate_core::error::Error as CoreError;
use propulate_core::individual::{Individual, IndividualId};
use propulate_core::propagator::{Breeder, Excluding, WithPeers};

use super::RootWorker;
use crate::error::Result;
use crate::transport::Communicator;

/// How many workers' members with a gone state one breeding leaves out before it gives up (the
/// evaluation then fails with the reason, and its member goes on at its next one).
const MAX_GONE: usize = 16;

/// The most peers' children a worker works out before its first child of a start: each costs a
/// breed (the GP's up to about 0.2 s), once per start; a worker further down a large island
/// foresees the nearest before it.
const PEERS_FORESEEN: usize = 16;

impl RootWorker<'_, '_> {
    /// The child of `generation`, announced to the island when the propagator models running
    /// evaluations. A child that would continue a training state that is gone (a member's deleted
    /// by its owner while this worker's view of it lagged; this worker's own, deleted by hand or
    /// left in the checkpoint a run was reshaped from) is bred again without that member's worker.
    pub(super) fn breed_and_announce(&mut self, generation: u64, roots: &mut dyn Communicator) -> Result<Individual> {
        let mut gone = BTreeSet::new();
        loop {
            let child = self.breed(generation, &gone)?;
            self.announce_running(roots, &child)?;
            match self.continues_a_gone_state(&child) {
                Some(parent) if gone.len() < MAX_GONE => {
                    if parent.worker as usize == self.worker {
                        // Its own member's state: deleted by hand, or a run reshaped from another
                        // checkpoint (whose states stay there). Without it the member starts
                        // afresh: bred again without this worker, PBT finds no own member.
                        let text = format!(
                            "the training state of {parent} that this worker's member would continue is missing \
                             ({}): the member starts afresh",
                            self.run
                                .states
                                .as_ref()
                                .map_or_else(String::new, |s| s.saved(parent).display().to_string())
                        );
                        self.observers.emit(&crate::observe::Event::Warning(&text));
                    }
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
            let peers = self.peers_children(generation)?;
            let pool = WithPeers { pool: &self.population, peers: &peers };
            self.propagator.propagate_as(breeder, &pool, space, &mut self.rng)?
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

    /// The children the island's workers before this one breed at the same moment, when this is
    /// the first breed of a start (a resume, a warm start: every worker breeds at once, before any
    /// hears of another's child) of a propagator that models running evaluations: worked out in
    /// the island's order, each as running for the next ([`WithPeers`]), so that a model's
    /// argmax does not give every worker the same child. At most [`PEERS_FORESEEN`] of them (the
    /// nearest before this one); none elsewhere, and none in a fresh run (its first children are
    /// drawn at random). An enqueued configuration is that peer's child as it is.
    fn peers_children(&mut self, generation: u64) -> Result<Vec<Individual>> {
        let first_of_start = generation == self.breeder(generation).since;
        // Population-based training's children continue their workers' own members: nothing to
        // foresee, and a peer's member taken for running would change whom it ranks.
        let models = self.propagator.models_running() && self.propagator.training_state_keep_s().is_none();
        if !(first_of_start && models) || self.population.active_len() == 0 {
            return Ok(Vec::new());
        }
        let own = self.index_in_island as usize;
        let island_first = self.worker - own;
        let mut peers: Vec<Individual> = Vec::new();
        for peer in island_first + own.saturating_sub(PEERS_FORESEEN)..self.worker {
            // A peer whose child this worker has heard of already is among the running ones.
            if self.population.running().any(|r| r.id.worker as usize == peer) {
                continue;
            }
            let mut child = match self.enqueued_of(peer, generation) {
                Some(values) => Individual::new(values.clone()),
                None => {
                    let breeder = Breeder { worker: peer as u32, ..self.breeder(generation) };
                    let pool = WithPeers { pool: &self.population, peers: &peers };
                    match self.propagator.propagate_as(breeder, &pool, self.run.space, &mut self.rng) {
                        Ok(mut children) if children.len() == 1 => children.remove(0),
                        // A breed that fails fails with its reason when this worker breeds its own.
                        _ => return Ok(Vec::new()),
                    }
                }
            };
            child.id = IndividualId { island: self.island as u32, worker: peer as u32, generation };
            peers.push(child);
        }
        Ok(peers)
    }

    /// The configuration known in advance that is this worker's child of `generation`, if any.
    pub(super) fn enqueued_for(&self, generation: u64) -> Option<&Vec<propulate_core::Value>> {
        self.enqueued_of(self.worker, generation)
    }

    /// The configuration known in advance that is `worker`'s child of `generation`, if any:
    /// configuration k goes to worker `k mod workers` in its generation `k / workers`, counted
    /// from the run's first generation.
    fn enqueued_of(&self, worker: usize, generation: u64) -> Option<&Vec<propulate_core::Value>> {
        let enqueued = &self.run.enqueued;
        if enqueued.is_empty() {
            return None;
        }
        let round = usize::try_from(generation.checked_sub(self.generation_offset)?).ok()?;
        let k = round.checked_mul(self.run.layout.workers())?.checked_add(worker)?;
        enqueued.get(k)
    }

    /// The evaluation whose training state `child` would continue (a member it exploits, or its
    /// own), when that state is no longer on disk.
    fn continues_a_gone_state(&self, child: &Individual) -> Option<IndividualId> {
        let states = self.run.states.as_ref()?;
        let parent = child.lineage.as_deref()?.parent?;
        (!states.saved(parent).is_dir()).then_some(parent)
    }
}
