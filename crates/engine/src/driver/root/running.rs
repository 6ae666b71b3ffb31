//! Early stopping's view of the island: the rule of each evaluation, made from the island's
//! finished evaluations and, for a stopper that hears running evaluations, kept up to date with
//! the reports the island's other workers make while it runs (`Message::Progress`).
//!
//! A report travels as soon as it is made: the reporting root sends it to its island peers, then
//! drains its own inbox (all messages, in order, as between generations) and hands the rule what
//! changed. No report is journaled: a curve in flight is lost with a killed run, and the finished
//! evaluation carries its whole curve anyway.

use std::collections::HashMap;

use super::RootWorker;
use crate::context::{HeardCurves, IslandReports};
use crate::driver::message::{Message, encode};
use crate::error::{Error, Result};
use crate::transport::Communicator;
use propulate_core::early_stop::{EarlyStopper, StopRule, before_the_end, completed, reported, training_end};
use propulate_core::individual::{Individual, IndividualId};

/// What a worker root heard of its island peers' running evaluations.
#[derive(Default)]
pub(crate) struct RunningCurves {
    /// The curve so far of each evaluation a peer is running (dropped when it finishes).
    curves: HashMap<IndividualId, Vec<(u64, f64)>>,
    /// Curves that changed since the last [`RunningCurves::take_changes`], with their evaluation.
    changed: HeardCurves,
}

impl RunningCurves {
    /// A peer's evaluation `id` reported `value` at `step`.
    pub fn progress(&mut self, id: IndividualId, step: u64, value: f64) {
        let curve = self.curves.entry(id).or_default();
        // Messages from one peer keep their order, so steps only grow; a repeat changes nothing.
        if curve.last().is_none_or(|p| p.0 < step) {
            curve.push((step, value));
            self.changed.push((id, curve.clone()));
        }
    }

    /// A peer's evaluation finished: its final curve replaces the running one (a failed one
    /// keeps what it reported while it ran).
    pub fn finished(&mut self, ind: &Individual) {
        self.curves.remove(&ind.id);
        if let (None, Some(curve)) = (&ind.failure, &ind.curve) {
            self.changed.push((ind.id, curve.points.clone()));
        }
    }

    fn take_changes(&mut self) -> HeardCurves {
        std::mem::take(&mut self.changed)
    }
}

impl RootWorker<'_, '_> {
    /// The rule for evaluating `ind` under `stopper`: from the island's finished evaluations and
    /// what the peers have reported of their running ones.
    pub(super) fn stop_rule(&mut self, stopper: &dyn EarlyStopper, ind: &Individual) -> Box<dyn StopRule> {
        let island = if stopper.counts_pruned() {
            reported(self.population.iter_best())
        } else {
            completed(self.population.iter_best())
        };
        // `island` holds the finished, not failed evaluations with a curve (pruned ones too for
        // some stoppers): its completed ones say where trainings end, without another pass.
        let end = training_end(island.iter().copied());
        let mut rule = before_the_end(stopper.rule(&island, self.run.space, &ind.values), end);
        self.running.take_changes();
        if stopper.hears_running() {
            for (id, points) in &self.running.curves {
                rule.observe(*id, points);
            }
        }
        rule
    }
}

/// The worker root's line to its island peers while its worker evaluates one individual.
pub(super) struct ReportLink<'w, 'a, 'o> {
    pub worker: &'w mut RootWorker<'a, 'o>,
    pub roots: &'w mut dyn Communicator,
    /// The evaluation that reports.
    pub id: IndividualId,
    /// What went wrong sending or handling messages: an error of the run, not of the evaluation
    /// (a corrupted message aborts the job wherever it is read), returned once the worker agreed.
    pub error: Option<Error>,
}

impl IslandReports for ReportLink<'_, '_, '_> {
    fn exchange(&mut self, step: u64, value: f64) -> Result<HeardCurves> {
        let progress = encode(&Message::Progress { id: self.id, step, value });
        let sent = self.worker.send_to_island_peers(self.roots, progress);
        match sent.and_then(|()| self.worker.drain_inbox(self.roots)) {
            Ok(()) => Ok(self.worker.running.take_changes()),
            Err(e) => {
                let message = e.to_string();
                self.error = Some(e);
                Err(Error::Report(message))
            }
        }
    }
}
