//! The log-linear stopper: a learning curve that falls like `a + b ln(1 + step)` is extrapolated to
//! the step where completed evaluations ended; when even that is worse than the island's best loss
//! by more than the margin, the evaluation is stopped.

use super::{EarlyStopper, Never, StopRule, StopSettings, best_until, horizon};
use crate::individual::Individual;
use crate::space::{SearchSpace, Value};

/// Stops evaluations whose extrapolated curve stays worse than the island's best.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogLinearStopper {
    /// Start-up, reports (at least 2 are used for a fit) and margin.
    pub settings: StopSettings,
}

impl Default for LogLinearStopper {
    fn default() -> Self {
        LogLinearStopper { settings: StopSettings { min_reports: 3, ..StopSettings::default() } }
    }
}

struct LogLinearRule {
    best_loss: f64,
    horizon: u64,
    settings: StopSettings,
}

impl EarlyStopper for LogLinearStopper {
    fn name(&self) -> &'static str {
        "log-linear"
    }
    fn validate(&self) -> crate::error::Result<()> {
        self.settings.validate()
    }
    fn rule(&self, completed: &[&Individual], _: &SearchSpace, _: &[Value]) -> Box<dyn StopRule> {
        match (completed.first(), horizon(completed)) {
            (Some(best), Some(horizon)) if completed.len() >= self.settings.startup => {
                Box::new(LogLinearRule { best_loss: best.loss, horizon, settings: self.settings })
            }
            _ => Box::new(Never),
        }
    }
}

/// Least-squares fit of `y = a + b x`; `None` when the `x` do not vary.
pub(crate) fn fit_line(xs: &[f64], ys: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    if sxx.is_nan() || sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

impl StopRule for LogLinearRule {
    fn should_stop(&mut self, points: &[(u64, f64)]) -> bool {
        let Some(&(step, _)) = points.last() else { return false };
        if points.len() < self.settings.min_reports.max(2) {
            return false;
        }
        let xs: Vec<f64> = points.iter().map(|p| (p.0 as f64).ln_1p()).collect();
        let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
        let Some((a, b)) = fit_line(&xs, &ys) else { return false };
        let at_horizon = a + b * (self.horizon.max(step) as f64).ln_1p();
        // The recorded loss is the best over the run, so the forecast is never above what was seen.
        let seen = best_until(points, step).unwrap_or(f64::INFINITY);
        let forecast = at_horizon.min(seen);
        forecast.is_finite() && self.settings.hopeless(forecast, self.best_loss)
    }
}
