//! Early stopping of hopeless evaluations: a loss reports intermediate values (a learning curve,
//! one value per step, e.g. the validation loss after every epoch), and after each report a rule
//! says whether the evaluation should go on.
//!
//! An [`EarlyStopper`] is pure, like a propagator: before an evaluation starts, the driver hands it
//! the island's completed evaluations (their curves travel with the individuals, through messages,
//! migrations and the journal) and the candidate's values; it returns a [`StopRule`] for that one
//! evaluation, which sees the candidate's curve after each report. Nothing is kept between
//! evaluations, so a stopper survives migration and resume, and workers share it without merging
//! state (the reference's surrogates merge state between workers and keep the worse baseline when
//! they do; here every rule starts from the island's population as it is).
//!
//! Stoppers (all but `halving` compare a candidate with completed evaluations only: not pruned,
//! not failed, with a curve; every one decides only after `min_reports` reports):
//! - [`MedianStopper`] (`median`): stop when the candidate's best value so far is worse than the
//!   median of the completed curves' best values up to the same step (Optuna's median pruner).
//! - [`StaticStopper`] (`static`): the reference's static surrogate, fixed: the baseline is the
//!   island's best completed curve; stop when the candidate is worse than the baseline at the same
//!   step by more than the margin.
//! - [`LogLinearStopper`] (`log-linear`): fit `a + b ln(1 + step)` to the candidate's curve,
//!   extrapolate to the longest completed curve's last step, stop when even that is worse than the
//!   island's best loss by more than the margin.
//! - [`DynamicStopper`] (`dynamic`): the reference's dynamic (freeze-thaw) surrogate, fixed: a
//!   Gaussian process over the search space predicts the candidate's final loss from the completed
//!   evaluations, and a Bayesian line fit of its curve in log time, with that prediction as the
//!   prior of its end, bends it towards the curve; stop when the optimistic end of the forecast
//!   (mean minus one standard deviation) is worse than the island's best loss by more than the
//!   margin (the reference compares with the worst loss).
//! - [`HalvingStopper`] (`halving`): asynchronous successive halving (ASHA): at steps 1, 3, 9, ...
//!   an evaluation goes on only if it is among the best third of the evaluations, pruned ones
//!   included, that reached the same step.
//!
//! No rule stops an evaluation at or past the last step of the island's longest completed curve
//! ([`before_the_end`]): the training is over by then, and stopping it would only lose its result.
//!
//! The margin `m` (default 0.8, the reference's) says how much worse counts: a value `v` is worse
//! than a reference value `r` by more than the margin when `v - r > (1/m - 1) |r|`, i.e. more than
//! 25 % worse for `m = 0.8` (the reference's `r < m v`, extended to losses of either sign). The
//! margin is relative: against a reference value of 0 every worse value counts, so for losses
//! that reach 0 the median stopper is the one to use.

mod dynamic;
mod halving;
mod log_linear;
mod median;
mod static_baseline;

pub use dynamic::DynamicStopper;
pub use halving::HalvingStopper;
pub use log_linear::LogLinearStopper;
pub use median::MedianStopper;
pub use static_baseline::StaticStopper;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::individual::{Individual, IndividualId};
use crate::space::{SearchSpace, Value};

/// The most reports one evaluation may make (a report per step of a long training is far fewer):
/// what a journal holds for one evaluation stays bounded.
pub const MAX_CURVE_POINTS: usize = 100_000;

pub use crate::curve::Curve;
pub(crate) use crate::curve::best_until;

/// What the driver answers a report with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Go on training.
    Continue,
    /// Stop now and return (the loss's return value is recorded, with the curve marked pruned).
    Stop,
}

impl Decision {
    /// True for [`Decision::Stop`].
    pub fn is_stop(self) -> bool {
        self == Decision::Stop
    }
}

/// The rule for one evaluation: asked after every report.
pub trait StopRule: Send {
    /// Whether the evaluation whose curve so far is `points` (newest last, at least one) should stop.
    fn should_stop(&mut self, points: &[(u64, f64)]) -> bool;
    /// Another evaluation of the island, still running or just finished, has reported `points` so
    /// far (its whole curve; a later call for the same `id` replaces it). Called only for
    /// stoppers that [hear running evaluations](EarlyStopper::hears_running), before the next
    /// [`StopRule::should_stop`].
    fn observe(&mut self, id: IndividualId, points: &[(u64, f64)]) {
        let _ = (id, points);
    }
}

/// Makes the [`StopRule`] of each evaluation from what the island knows.
pub trait EarlyStopper: Send + Sync + std::fmt::Debug {
    /// The stopper's name (as `--early-stop` takes it).
    fn name(&self) -> &'static str;
    /// The rule for an evaluation of `candidate` (values in `space`), given the island's completed
    /// evaluations, best first (see [`completed`]; with [`EarlyStopper::counts_pruned`], the pruned
    /// ones too: see [`reported`]).
    fn rule(&self, completed: &[&Individual], space: &SearchSpace, candidate: &[Value]) -> Box<dyn StopRule>;
    /// Whether [`EarlyStopper::rule`] is given the pruned evaluations too.
    fn counts_pruned(&self) -> bool {
        false
    }
    /// Whether the rules hear the reports of the evaluations the island's other workers are
    /// running ([`StopRule::observe`]): the driver then sends each report to the island's workers
    /// as it is made, so that a rule compares with evaluations in flight too, not only with
    /// finished ones.
    fn hears_running(&self) -> bool {
        false
    }
    /// Check the stopper's settings before a run; the error names the bad one.
    fn validate(&self) -> Result<()> {
        Ok(())
    }
}

/// Settings every stopper shares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StopSettings {
    /// Completed evaluations the island must hold before any evaluation is stopped.
    pub startup: usize,
    /// Reports an evaluation makes before it can be stopped.
    pub min_reports: usize,
    /// How much worse counts as hopeless (0 < margin <= 1; see the module's documentation).
    pub margin: f64,
}

impl Default for StopSettings {
    fn default() -> Self {
        StopSettings { startup: 3, min_reports: 2, margin: 0.8 }
    }
}

impl StopSettings {
    /// Check the settings; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        if !(self.margin > 0.0 && self.margin <= 1.0) {
            return Err(Error::InvalidConfig(format!(
                "early stopping margin {} is outside (0, 1]: 0.8 stops evaluations 25 % worse than the reference, 1 any worse one",
                self.margin
            )));
        }
        if self.min_reports == 0 {
            return Err(Error::InvalidConfig(
                "early stopping needs at least 1 report before it stops an evaluation (min_reports >= 1)".into(),
            ));
        }
        Ok(())
    }

    /// True when `value` is worse than `reference` by more than the margin.
    pub fn hopeless(&self, value: f64, reference: f64) -> bool {
        value - reference > (1.0 / self.margin - 1.0) * reference.abs()
    }
}

/// The evaluations of `island` (any order) a stopper compares with, best first: not failed, not
/// pruned, with a curve.
pub fn completed<'a>(island: impl Iterator<Item = &'a Individual>) -> Vec<&'a Individual> {
    reported(island).into_iter().filter(|i| i.curve.as_ref().is_some_and(|c| !c.pruned)).collect()
}

/// The evaluations of `island` (any order) with a curve that did not fail, pruned or not, best
/// first: what a stopper that [counts pruned ones](EarlyStopper::counts_pruned) compares with.
pub fn reported<'a>(island: impl Iterator<Item = &'a Individual>) -> Vec<&'a Individual> {
    let mut done: Vec<&Individual> =
        island.filter(|i| i.failure.is_none() && i.curve.as_ref().is_some_and(|c| !c.points.is_empty())).collect();
    done.sort_by(|a, b| a.loss.total_cmp(&b.loss).then(a.id.cmp(&b.id)));
    done
}

/// Where the island's trainings end, as far as it knows: the last step of the longest curve among
/// its evaluations that ran to their end (not pruned, not failed); `None` before one has.
pub fn training_end<'a>(island: impl Iterator<Item = &'a Individual>) -> Option<u64> {
    island.filter(|i| i.failure.is_none()).filter_map(|i| i.curve.as_ref().filter(|c| !c.pruned)?.last_step()).max()
}

/// `rule`, except that it never stops an evaluation at or past `end` (see [`training_end`]): a
/// training that reported its last step has nothing left to save, and stopping it there would
/// only throw away its own result (e.g. a command trial's result file and metrics) and record it
/// as pruned. Rules asked at rungs (halving at 1, 3, 9, ...) would otherwise prune a training of
/// 3 or 9 steps at its very end.
pub fn before_the_end(rule: Box<dyn StopRule>, end: Option<u64>) -> Box<dyn StopRule> {
    match end {
        None => rule,
        Some(end) => Box::new(BeforeTheEnd { rule, end }),
    }
}

struct BeforeTheEnd {
    rule: Box<dyn StopRule>,
    end: u64,
}

impl StopRule for BeforeTheEnd {
    fn should_stop(&mut self, points: &[(u64, f64)]) -> bool {
        // The rule is asked anyway: rules that keep state between reports (the next rung) see them all.
        let stop = self.rule.should_stop(points);
        stop && points.last().is_some_and(|p| p.0 < self.end)
    }

    fn observe(&mut self, id: IndividualId, points: &[(u64, f64)]) {
        self.rule.observe(id, points);
    }
}

/// The names [`by_name`] knows.
pub const STOPPER_NAMES: [&str; 5] = ["median", "static", "log-linear", "dynamic", "halving"];

/// The stopper called `name`, with `settings`; an unknown name lists the known ones.
pub fn by_name(name: &str, settings: StopSettings) -> Result<Box<dyn EarlyStopper>> {
    settings.validate()?;
    Ok(match name {
        "median" => Box::new(MedianStopper { settings }),
        "static" => Box::new(StaticStopper { settings }),
        "log-linear" => Box::new(LogLinearStopper { settings }),
        "dynamic" => Box::new(DynamicStopper { settings }),
        "halving" => {
            let stopper = HalvingStopper { settings, ..HalvingStopper::default() };
            stopper.validate()?;
            Box::new(stopper)
        }
        _ => {
            return Err(Error::UnknownName {
                kind: "early stopper",
                name: name.into(),
                valid: STOPPER_NAMES.join(", "),
            });
        }
    })
}

/// A rule that never stops (too few completed evaluations to compare with).
pub(crate) struct Never;

impl StopRule for Never {
    fn should_stop(&mut self, _: &[(u64, f64)]) -> bool {
        false
    }
}

/// The last step of the longest completed curve: how far an evaluation is expected to go.
pub(crate) fn horizon(completed: &[&Individual]) -> Option<u64> {
    completed.iter().filter_map(|i| i.curve.as_ref()?.last_step()).max()
}

#[cfg(test)]
pub(crate) mod tests;
