//! The dynamic stopper: the reference's freeze-thaw surrogate, rebuilt without its bugs. A global
//! Gaussian process maps a configuration (in the unit cube, categoricals one-hot; the reference's
//! kernel had one input per parameter, too few with categoricals) to its final loss, from the
//! island's completed evaluations; that prediction is the prior of the candidate's end value in a
//! Bayesian fit of its curve as a line in log time (scaled so that the longest completed curve
//! ends at 1), so early reports lean on what similar configurations reached, later ones on the
//! candidate's own trend. The evaluation stops when the optimistic forecast at the end (mean minus one
//! standard deviation, never above the best value seen) is worse than the island's best loss by
//! more than the margin (the reference compared with the worst loss, and refitted its processes'
//! hyperparameters on every report; here they follow from the data: the losses' spread, the
//! configurations' median distance).

use super::{EarlyStopper, Never, StopRule, StopSettings, best_until, horizon};
use crate::bayes::stats::mean_and_variance;
use crate::individual::Individual;
use crate::space::{SearchSpace, Value};
use crate::surrogate::{LossModel, encode};

/// The most completed evaluations (the island's best) the global process is fitted to.
const MAX_GLOBAL_POINTS: usize = 200;

/// Stops evaluations whose forecast final loss is hopeless.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DynamicStopper {
    /// Start-up, reports and margin.
    pub settings: StopSettings,
}

struct DynamicRule {
    /// The global process's mean and variance at the candidate.
    prior: (f64, f64),
    best_loss: f64,
    horizon: u64,
    settings: StopSettings,
}

/// The median distance between two of `xs` (a length scale that fits the data's spread).
fn median_distance(xs: &[Vec<f64>]) -> f64 {
    let mut d: Vec<f64> = Vec::new();
    for (i, a) in xs.iter().enumerate() {
        for b in &xs[i + 1..] {
            d.push(a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt());
        }
    }
    d.sort_by(f64::total_cmp);
    d.get(d.len() / 2).copied().unwrap_or(1.0).max(1e-3)
}

impl EarlyStopper for DynamicStopper {
    fn name(&self) -> &'static str {
        "dynamic"
    }
    fn validate(&self) -> crate::error::Result<()> {
        self.settings.validate()
    }
    fn rule(&self, completed: &[&Individual], space: &SearchSpace, candidate: &[Value]) -> Box<dyn StopRule> {
        let (Some(best), Some(horizon)) = (completed.first(), horizon(completed)) else { return Box::new(Never) };
        if completed.len() < self.settings.startup.max(2) {
            return Box::new(Never);
        }
        // The best ones describe where good configurations are; a bounded set keeps the O(n^3)
        // fit cheap however long the run.
        let completed = &completed[..completed.len().min(MAX_GLOBAL_POINTS)];
        let xs: Vec<Vec<f64>> = completed.iter().map(|i| encode(space, &i.values)).collect();
        let ys: Vec<f64> = completed.iter().map(|i| i.loss).collect();
        let (mean, variance) = mean_and_variance(ys.iter().copied());
        let variance = variance.max(1e-12);
        let length = median_distance(&xs);
        // Trainings are noisy: a tenth of the losses' spread is noise.
        match LossModel::fixed(xs, ys, mean, length, variance, 0.1 * variance) {
            Some(global) => Box::new(DynamicRule {
                prior: global.predict(&[encode(space, candidate)])[0],
                best_loss: best.loss,
                horizon,
                settings: self.settings,
            }),
            None => Box::new(Never),
        }
    }
}

/// The posterior mean and variance of a curve's end value `f` under the model
/// `y(t) = f + b (t - 1)` (t: log time, 1 at the horizon), with the prior `f ~ N(prior)`, a broad
/// prior on the slope `b`, and noise of variance `noise` on every value.
fn end_value(ts: &[f64], ys: &[f64], prior: (f64, f64), noise: f64) -> (f64, f64) {
    let spread = ys.iter().map(|y| (y - prior.0).powi(2)).fold(1.0, f64::max);
    // Posterior precision A = P0 + X^T X / noise and P0 mu0 + X^T y / noise, for rows [1, t - 1].
    let (pf, pb) = (1.0 / prior.1.max(1e-12), 1.0 / (100.0 * spread));
    let (mut a00, mut a01, mut a11) = (pf, 0.0, pb);
    let (mut r0, mut r1) = (pf * prior.0, 0.0);
    for (t, y) in ts.iter().zip(ys) {
        let u = t - 1.0;
        a00 += 1.0 / noise;
        a01 += u / noise;
        a11 += u * u / noise;
        r0 += y / noise;
        r1 += u * y / noise;
    }
    let det = a00 * a11 - a01 * a01;
    ((a11 * r0 - a01 * r1) / det, a11 / det)
}

impl StopRule for DynamicRule {
    fn should_stop(&mut self, points: &[(u64, f64)]) -> bool {
        let Some(&(step, _)) = points.last() else { return false };
        if points.len() < self.settings.min_reports {
            return false;
        }
        let end = (self.horizon.max(step).max(1) as f64).ln_1p();
        let ts: Vec<f64> = points.iter().map(|p| (p.0 as f64).ln_1p() / end).collect();
        let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
        // Training curves wobble from epoch to epoch, and a line in log time is only roughly their
        // shape: 5 % of their level as noise keeps a few early reports from outweighing the prior.
        let scale = ys.iter().map(|y| y.abs()).sum::<f64>() / ys.len() as f64;
        let (mean, variance) = end_value(&ts, &ys, self.prior, (0.05 * scale).powi(2).max(1e-12));
        let seen = best_until(points, step).unwrap_or(f64::INFINITY);
        let forecast = (mean - variance.sqrt()).min(seen);
        forecast.is_finite() && self.settings.hopeless(forecast, self.best_loss)
    }
}
