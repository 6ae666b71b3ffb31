//! The static stopper: the reference's static surrogate with its bugs fixed. The baseline is the
//! island's best completed curve (the reference merges baselines between workers and keeps the
//! worse one); values are matched by step, not by the order of reports (the reference needs every
//! run to report equally often); and the comparison holds for losses of either sign.

use super::{EarlyStopper, Never, StopRule, StopSettings, best_until};
use crate::individual::Individual;
use crate::space::{SearchSpace, Value};

/// Stops evaluations worse than the island's best curve at the same step by more than the margin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StaticStopper {
    /// Start-up, reports and margin.
    pub settings: StopSettings,
}

impl Default for StaticStopper {
    /// The reference's: one completed evaluation is enough for a baseline.
    fn default() -> Self {
        StaticStopper { settings: StopSettings { startup: 1, ..StopSettings::default() } }
    }
}

struct StaticRule {
    baseline: Vec<(u64, f64)>,
    settings: StopSettings,
}

impl EarlyStopper for StaticStopper {
    fn name(&self) -> &'static str {
        "static"
    }
    fn validate(&self) -> crate::error::Result<()> {
        self.settings.validate()
    }
    fn rule(&self, completed: &[&Individual], _: &SearchSpace, _: &[Value]) -> Box<dyn StopRule> {
        match completed.first().and_then(|best| best.curve.as_ref()) {
            Some(curve) if completed.len() >= self.settings.startup => {
                Box::new(StaticRule { baseline: curve.points.clone(), settings: self.settings })
            }
            _ => Box::new(Never),
        }
    }
}

impl StopRule for StaticRule {
    fn should_stop(&mut self, points: &[(u64, f64)]) -> bool {
        let Some(&(step, _)) = points.last() else { return false };
        if points.len() < self.settings.min_reports {
            return false;
        }
        match (best_until(points, step), best_until(&self.baseline, step)) {
            (Some(mine), Some(baseline)) => self.settings.hopeless(mine, baseline),
            _ => false,
        }
    }
}
