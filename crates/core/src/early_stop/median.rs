//! The median stopper: an evaluation whose best value so far is worse than the median of the
//! completed evaluations' best values up to the same step is stopped (Optuna's median pruner,
//! without its warm-up in steps: `min_reports` counts reports instead).

use super::{EarlyStopper, Never, StopRule, StopSettings, best_until};
use crate::individual::Individual;
use crate::space::{SearchSpace, Value};

/// Stops evaluations worse than the median at the same step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MedianStopper {
    /// Start-up, reports and margin (the margin is not used: the median is the bar).
    pub settings: StopSettings,
}

struct MedianRule {
    /// Each completed evaluation's curve.
    curves: Vec<Vec<(u64, f64)>>,
    settings: StopSettings,
}

impl EarlyStopper for MedianStopper {
    fn name(&self) -> &'static str {
        "median"
    }
    fn validate(&self) -> crate::error::Result<()> {
        self.settings.validate()
    }
    fn rule(&self, completed: &[&Individual], _: &SearchSpace, _: &[Value]) -> Box<dyn StopRule> {
        if completed.len() < self.settings.startup.max(1) {
            return Box::new(Never);
        }
        let curves = completed.iter().filter_map(|i| i.curve.as_ref()).map(|c| c.points.clone()).collect();
        Box::new(MedianRule { curves, settings: self.settings })
    }
}

impl StopRule for MedianRule {
    fn should_stop(&mut self, points: &[(u64, f64)]) -> bool {
        let Some(&(step, _)) = points.last() else { return false };
        if points.len() < self.settings.min_reports {
            return false;
        }
        let mut others: Vec<f64> = self.curves.iter().filter_map(|c| best_until(c, step)).collect();
        if others.len() < self.settings.startup.max(1) {
            return false;
        }
        others.sort_by(f64::total_cmp);
        let n = others.len();
        let median = if n.is_multiple_of(2) { 0.5 * (others[n / 2 - 1] + others[n / 2]) } else { others[n / 2] };
        best_until(points, step).is_some_and(|best| best > median)
    }
}
