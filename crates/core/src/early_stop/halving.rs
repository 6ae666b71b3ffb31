//! The halving stopper: asynchronous successive halving (ASHA; Optuna's `SuccessiveHalvingPruner`,
//! Ray Tune's `ASHAScheduler`). Steps `first_rung x reduction^k` are rungs; an evaluation that
//! reaches a rung goes on only if its best value so far is among the best `1 / reduction` of the
//! evaluations that reached that rung before it, itself included. Unlike the other stoppers it
//! counts pruned evaluations too (they reached the rungs below the one that stopped them): that is
//! what makes it stop most evaluations after a step or two while the best few train to the end.
//! And it hears the evaluations the island's other workers are running: an evaluation counts at a
//! rung as soon as it reports there (as in ASHA, where a rung records each trial when it reaches
//! it), so that a worker need not wait for its peers' evaluations to finish before it can compare.

use std::collections::HashMap;

use super::{EarlyStopper, StopRule, StopSettings, best_until};
use crate::error::{Error, Result};
use crate::individual::{Individual, IndividualId};
use crate::space::{SearchSpace, Value};

/// Keeps the best `1 / reduction` at every rung; stops the rest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HalvingStopper {
    /// `startup`: evaluations that must have reached a rung before it stops anything there;
    /// `min_reports`: reports before the first decision; the margin is not used.
    pub settings: StopSettings,
    /// Share kept at each rung (1 / reduction) and the factor between rungs.
    pub reduction: u64,
    /// The first rung's step.
    pub first_rung: u64,
}

impl Default for HalvingStopper {
    /// Rungs at steps 1, 3, 9, 27, ... keeping a third at each, from the first report on, once
    /// three evaluations reached the rung.
    fn default() -> Self {
        HalvingStopper {
            settings: StopSettings { startup: 3, min_reports: 1, ..StopSettings::default() },
            reduction: 3,
            first_rung: 1,
        }
    }
}

struct HalvingRule {
    /// The curve of every other evaluation of the island with one, pruned, finished or running.
    curves: HashMap<IndividualId, Vec<(u64, f64)>>,
    stopper: HalvingStopper,
    /// The next rung the candidate has not yet passed (none past `u64::MAX`).
    next_rung: Option<u64>,
}

impl EarlyStopper for HalvingStopper {
    fn name(&self) -> &'static str {
        "halving"
    }
    fn validate(&self) -> Result<()> {
        self.settings.validate()?;
        if self.reduction < 2 || self.first_rung < 1 {
            return Err(Error::InvalidConfig(format!(
                "halving needs a reduction of at least 2 and a first rung of at least step 1 (got {} and {})",
                self.reduction, self.first_rung
            )));
        }
        Ok(())
    }
    fn counts_pruned(&self) -> bool {
        true
    }
    fn hears_running(&self) -> bool {
        true
    }
    fn rule(&self, reported: &[&Individual], _: &SearchSpace, _: &[Value]) -> Box<dyn StopRule> {
        let curves = reported.iter().filter_map(|i| Some((i.id, i.curve.as_ref()?.points.clone()))).collect();
        Box::new(HalvingRule { curves, stopper: *self, next_rung: Some(self.first_rung) })
    }
}

impl HalvingRule {
    /// Whether a candidate whose best value up to `rung` is `mine` goes on past it.
    fn promoted(&self, rung: u64, mine: f64) -> bool {
        let mut reached: Vec<f64> = self
            .curves
            .values()
            .filter(|c| c.last().is_some_and(|p| p.0 >= rung))
            .filter_map(|c| best_until(c, rung))
            .collect();
        if reached.len() < self.stopper.settings.startup.max(1) {
            return true;
        }
        reached.push(mine);
        reached.sort_by(f64::total_cmp);
        let kept = (reached.len() / self.stopper.reduction as usize).max(1);
        mine <= reached[kept - 1]
    }
}

impl StopRule for HalvingRule {
    fn observe(&mut self, id: IndividualId, points: &[(u64, f64)]) {
        self.curves.insert(id, points.to_vec());
    }

    fn should_stop(&mut self, points: &[(u64, f64)]) -> bool {
        let Some(&(step, _)) = points.last() else { return false };
        // Every rung this report reached or passed is decided once, in order.
        while let Some(rung) = self.next_rung.filter(|&r| r <= step) {
            self.next_rung = rung.checked_mul(self.stopper.reduction);
            if points.len() < self.stopper.settings.min_reports {
                continue;
            }
            if let Some(mine) = best_until(points, rung)
                && !self.promoted(rung, mine)
            {
                return true;
            }
        }
        false
    }
}
