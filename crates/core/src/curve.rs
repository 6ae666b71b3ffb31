//! A learning curve: what an evaluation reported while it ran. An individual carries its curve
//! and the early stoppers read curves; it sits below both (`early_stop::Curve` re-exports it).

use serde::{Deserialize, Serialize};

/// What an evaluation reported while it ran: `(step, value)` pairs with increasing steps (finite
/// values only), and whether it was told to stop (after its last report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// The reported values, steps strictly increasing.
    pub points: Vec<(u64, f64)>,
    /// True when an early stopper ended the evaluation after its last point.
    pub pruned: bool,
}

impl Curve {
    /// The step of the last report.
    pub fn last_step(&self) -> Option<u64> {
        self.points.last().map(|p| p.0)
    }

    /// The lowest value reported at or before `step`, if any.
    pub fn best_until(&self, step: u64) -> Option<f64> {
        best_until(&self.points, step)
    }
}

/// The lowest value of `points` at or before `step`.
pub(crate) fn best_until(points: &[(u64, f64)], step: u64) -> Option<f64> {
    points.iter().take_while(|p| p.0 <= step).map(|p| p.1).min_by(f64::total_cmp)
}
