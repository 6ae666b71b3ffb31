//! CMA-ES (covariance matrix adaptation evolution strategy) as a stateless propagator: every call
//! rebuilds the strategy's state by replaying the island's history, then samples one child.
//!
//! **What a call does.** The pool's individuals are put in breeding order (evaluation start, then
//! generation, worker, island) and mapped into the unit box (see `normalized.rs`: log floats in log
//! space, ints in equal bins). Consecutive runs of `lambda` of them are treated as the generations
//! of one CMA-ES. The strategy starts at the centre of the box with a step size of a sixth of each
//! range and a round covariance, as Optuna's CmaEsSampler does ([`CmaesConfig::centred_start`]);
//! when the replay window no longer reaches the start of the history, or after a restart, the
//! oldest generation it replays initialises the mean (weighted mean of its best `mu`), the step
//! size (RMS spread of the generation) and a diagonal covariance (its per-coordinate spread).
//! Every generation updates the state with Hansen's standard rules
//! (cumulative step-size adaptation, rank-one update through the evolution path, rank-`mu` update,
//! and with [`CovarianceUpdate::Active`] negative weights for the worst `lambda - mu`). The child
//! is drawn from `N(m, sigma^2 C)` through the eigendecomposition of `C` (cyclic Jacobi, in
//! `normalized.rs`), drawn again while it lies outside the box (up to `10 n` draws, then clipped:
//! [`CmaesConfig::resample_in_bounds`]) and mapped back, ints to the nearest integer's bin.
//!
//! **The quadratic model** ([`CmaesConfig::model_share`], half the children by default): a child
//! may instead be the lowest point of a quadratic fitted by least squares to the island's latest
//! evaluations (twice as many as a full quadratic has terms), in the strategy's round coordinates,
//! within the Mahalanobis distance the update lets an injected step go; only while that model,
//! fitted without the latest `lambda` evaluations, ranks those with a Kendall's tau of at least
//! 0.85, and never onto a point the island has or is evaluating (`quadratic.rs`, after Hansen's
//! lq-CMA-ES). Such a child enters the replay as any other, an injected solution. On an
//! ill-conditioned quadratic the model knows the shape CMA-ES learns over thousands of
//! evaluations; where it cannot describe the loss it ranks badly and CMA-ES breeds alone.
//!
//! **Defaults** (the reference's): `lambda = 4 + floor(3 ln n)`, `mu = lambda / 2`, log-rank weights
//! `ln((lambda + 1) / 2) - ln i` with the positive ones summing to 1, Hansen's learning rates.
//!
//! **Restarts.** When the step size collapses, i.e. `sigma * sqrt(largest eigenvalue of C)` (the
//! widest standard deviation, as a fraction of the parameter's range) falls below
//! [`CmaesConfig::min_step`], or the covariance becomes non-finite or worse conditioned than
//! `1e14`, the state is dropped: the call returns a uniformly random point, and the replay
//! re-initialises from the next complete generation (mostly such random points), so the restart
//! is itself a deterministic function of the history that every worker reconstructs the same way.
//!
//! **How this differs from sequential CMA-ES.** Workers breed asynchronously, so a generation of
//! the replay holds children sampled from states a little older than the one that updates with
//! them. They are treated as injected solutions (Hansen 2011): each step `y = (x - m) / sigma` is
//! shortened to a Mahalanobis norm of at most `sqrt(n) + 2n / (n + 2)` before it enters the update,
//! which keeps stale or clipped points from inflating the step size. The state after the last
//! complete generation is used, so the model moves every `lambda` evaluations, not every one. Only
//! the last [`CmaesConfig::max_generations`] generations are replayed, which bounds the cost of a
//! call (one `n x n` eigendecomposition per replayed generation) in long runs.
//!
//! **How this differs from the reference** (`propulate/propagators/cmaes.py`): the reference keeps
//! one CMA state per worker in memory, so a worker's state is lost on resume and never sees what
//! migration brings; here it is rebuilt from the island population every call. The reference
//! updates from a pool of the best `pool_size * lambda` individuals of all time (best one, random
//! others, worst ones), not from generations in breeding order; it starts from a uniform random
//! mean with `sigma = 0.2 x` the widest range (here the centre and a sixth), caps the condition
//! number at `1e5` (here `1e14`, as an ill-conditioned problem needs), does not keep children
//! inside the bounds and searches floats only. Here children are drawn inside the bounds, ints are
//! searched through their bins, and categoricals are refused by name.

pub(super) mod quadratic;

use serde::{Deserialize, Serialize};

use self::quadratic::{Quadratic, TRUSTED_TAU, fitting_window, kendall_tau};
use crate::error::{Error, Result};
use crate::individual::Individual;
use crate::propagator::normalized::{UnitBox, check_same_space, symmetric_eigen};
use crate::propagator::{Arity, Pool, Propagator};
use crate::rng::PropRng;
use crate::space::{SearchSpace, standard_normal};
use rand::RngExt;

/// Which covariance update CMA-ES uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CovarianceUpdate {
    /// Rank-one and rank-`mu` updates from the best `mu` of each generation (the reference's
    /// `BasicCMA`).
    Basic,
    /// As `Basic`, plus negative weights that shrink the covariance along the worst `lambda - mu`
    /// of each generation (the reference's `ActiveCMA`); usually faster on ill-conditioned problems.
    #[default]
    Active,
}

/// The knobs of [`Cmaes`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CmaesConfig {
    /// Basic or active covariance update.
    pub update: CovarianceUpdate,
    /// The generation size `lambda`; `None` for the default `4 + floor(3 ln n)`.
    pub population_size: Option<usize>,
    /// How many generations of the history a call replays at most (bounds its cost).
    pub max_generations: usize,
    /// Restart when the widest standard deviation falls below this fraction of the ranges.
    pub min_step: f64,
    /// Start at the centre of the box with a step size of a sixth of each range and a round
    /// covariance, as Optuna's CmaEsSampler and the `cmaes` package do, from the first child on;
    /// false: the first `lambda` children are uniform and the strategy starts from their spread
    /// (about 0.29 of each range, so its first generations search wider than Optuna's). Absent
    /// from a configuration saved before it existed: false, the start those runs bred with.
    #[serde(default)]
    pub centred_start: bool,
    /// Keep children inside the bounds by drawing again (up to `10 n` times, then clipping the
    /// last draw to the bounds), as the `cmaes` package does; false: reflect each coordinate at
    /// the bound it crossed. Reflection never proposes a bound itself, so a minimum on the
    /// boundary (BBOB's linear slope f5: 45 against Optuna CMA-ES's 2.9 at 10-D) is approached
    /// but not reached. Absent from a configuration saved before it existed: false.
    #[serde(default)]
    pub resample_in_bounds: bool,
    /// Probability that a child is the lowest point of a quadratic model of the island's latest
    /// evaluations instead of a draw, where that model has just ranked the latest evaluations
    /// right (`quadratic.rs`, after lq-CMA-ES): within the longest step the update takes from an
    /// injected solution, in the strategy's coordinates. 0: CMA-ES alone. Absent from a
    /// configuration saved before it existed: 0, what those runs bred with.
    #[serde(default)]
    pub model_share: f64,
}

impl Default for CmaesConfig {
    fn default() -> Self {
        CmaesConfig {
            update: CovarianceUpdate::Active,
            population_size: None,
            max_generations: 200,
            min_step: 1e-8,
            centred_start: true,
            resample_in_bounds: true,
            model_share: MODEL_SHARE,
        }
    }
}

/// The default [`CmaesConfig::model_share`].
pub const MODEL_SHARE: f64 = 0.5;

/// The prior standard deviation of a warm start, as a fraction of each parameter's range
/// ([`State::from_source`]): WS-CMA-ES's default `alpha` of 0.1 on BBOB's range of 10.
const SOURCE_PRIOR: f64 = 0.01;

/// The step size of a centred start, in units of each parameter's range: Optuna's `sigma0`.
const CENTRED_SIGMA: f64 = 1.0 / 6.0;

/// The default generation size for `n` parameters: `4 + floor(3 ln n)`.
pub fn default_population_size(n: usize) -> usize {
    4 + (3.0 * (n.max(1) as f64).ln()).floor() as usize
}

/// The strategy constants, fixed by `n`, `lambda` and the update kind.
#[derive(Debug, Clone)]
struct Strategy {
    n: usize,
    lambda: usize,
    mu: usize,
    /// One weight per rank, best first: positive ones sum to 1, the rest are negative (active) or 0.
    weights: Vec<f64>,
    mueff: f64,
    cc: f64,
    cs: f64,
    c1: f64,
    cmu: f64,
    ds: f64,
    chi_n: f64,
    /// The longest step an injected solution may take, in Mahalanobis norm.
    max_step_norm: f64,
}

impl Strategy {
    fn new(n: usize, lambda: usize, update: CovarianceUpdate) -> Self {
        let nf = n as f64;
        let mu = lambda / 2;
        let raw: Vec<f64> = (1..=lambda).map(|i| ((lambda as f64 + 1.0) / 2.0).ln() - (i as f64).ln()).collect();
        let pos_sum: f64 = raw[..mu].iter().sum();
        let mueff = pos_sum.powi(2) / raw[..mu].iter().map(|w| w * w).sum::<f64>();
        let cc = (4.0 + mueff / nf) / (nf + 4.0 + 2.0 * mueff / nf);
        let cs = (mueff + 2.0) / (nf + mueff + 5.0);
        let c1 = 2.0 / ((nf + 1.3).powi(2) + mueff);
        let cmu = (1.0 - c1).min(2.0 * (mueff - 2.0 + 1.0 / mueff) / ((nf + 2.0).powi(2) + mueff));
        let ds = 1.0 + 2.0 * (((mueff - 1.0) / (nf + 1.0)).sqrt() - 1.0).max(0.0) + cs;
        let mut weights: Vec<f64> = raw.iter().map(|w| if *w > 0.0 { w / pos_sum } else { 0.0 }).collect();
        let neg = &raw[mu..];
        let neg_sum: f64 = neg.iter().map(|w| w.abs()).sum();
        if update == CovarianceUpdate::Active && neg_sum > 0.0 {
            // Hansen's tutorial: the negative weights sum to the smallest of three bounds, the last
            // of which keeps the covariance positive definite.
            let mueff_neg = neg_sum.powi(2) / neg.iter().map(|w| w * w).sum::<f64>();
            let alpha_mu = 1.0 + c1 / cmu;
            let alpha_mueff = 1.0 + 2.0 * mueff_neg / (mueff + 2.0);
            let alpha_posdef = (1.0 - c1 - cmu) / (nf * cmu);
            let total = alpha_mu.min(alpha_mueff).min(alpha_posdef);
            for (w, r) in weights[mu..].iter_mut().zip(neg) {
                if *r < 0.0 {
                    *w = total * r / neg_sum;
                }
            }
        }
        let chi_n = nf.sqrt() * (1.0 - 1.0 / (4.0 * nf) + 1.0 / (21.0 * nf * nf));
        let max_step_norm = nf.sqrt() + 2.0 * nf / (nf + 2.0);
        Strategy { n, lambda, mu, weights, mueff, cc, cs, c1, cmu, ds, chi_n, max_step_norm }
    }
}

/// One generation: unit-box points with their losses.
type Generation<'a> = &'a [(Vec<f64>, f64)];

/// The dynamic state of the strategy after some generations.
#[derive(Debug, Clone)]
struct State {
    mean: Vec<f64>,
    sigma: f64,
    /// Row-major `n x n`.
    cov: Vec<f64>,
    ps: Vec<f64>,
    pc: Vec<f64>,
    generations: u32,
    /// Square roots of the eigenvalues of `cov`.
    scales: Vec<f64>,
    /// Eigenvectors of `cov` as columns, row-major.
    basis: Vec<f64>,
}

/// Ranks of a generation, best first; ties keep breeding order, so the result is deterministic.
fn ranking(generation: Generation<'_>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..generation.len()).collect();
    order.sort_by(|&a, &b| generation[a].1.total_cmp(&generation[b].1));
    order
}

impl State {
    /// The state a generation implies on its own, or `None` if it has no spread left.
    fn from_generation(s: &Strategy, generation: Generation<'_>, min_step: f64) -> Option<State> {
        let n = s.n;
        let order = ranking(generation);
        let mut mean = vec![0.0; n];
        for (&i, w) in order.iter().zip(&s.weights[..s.mu]) {
            for (m, x) in mean.iter_mut().zip(&generation[i].0) {
                *m += w * x;
            }
        }
        let count = generation.len() as f64;
        let variances: Vec<f64> = (0..n)
            .map(|j| {
                let avg = generation.iter().map(|(x, _)| x[j]).sum::<f64>() / count;
                generation.iter().map(|(x, _)| (x[j] - avg).powi(2)).sum::<f64>() / count
            })
            .collect();
        let sigma = (variances.iter().sum::<f64>() / n as f64).sqrt();
        if !(sigma.is_finite() && sigma >= min_step) {
            return None;
        }
        let mut cov = vec![0.0; n * n];
        for (j, v) in variances.iter().enumerate() {
            // A coordinate the generation did not vary (ints stuck in one bin) keeps some width.
            cov[j * n + j] = (v / (sigma * sigma)).max(1e-4);
        }
        State::started(mean, sigma, cov, min_step)
    }

    /// A state at `mean` with step size `sigma` and covariance `cov` and no evolution paths yet,
    /// decomposed; `None` if it has collapsed or broken down.
    fn started(mean: Vec<f64>, sigma: f64, cov: Vec<f64>, min_step: f64) -> Option<State> {
        let n = mean.len();
        let mut state = State {
            mean,
            sigma,
            cov,
            ps: vec![0.0; n],
            pc: vec![0.0; n],
            generations: 0,
            scales: vec![],
            basis: vec![],
        };
        state.decompose(min_step).then_some(state)
    }

    /// The state at the centre of the unit box with step size [`CENTRED_SIGMA`] and the identity
    /// covariance.
    fn centred(n: usize, min_step: f64) -> Option<State> {
        let mut cov = vec![0.0; n * n];
        (0..n).for_each(|j| cov[j * n + j] = 1.0);
        State::started(vec![0.5; n], CENTRED_SIGMA, cov, min_step)
    }

    /// The state that takes over a search another propagator began: Nomura et al.'s warm start
    /// (WS-CMA-ES, AAAI 2021) from the best tenth of `source` (at least `lambda` of them): their
    /// mean, and the covariance `alpha^2 I + cov(best)` with `alpha` = [`SOURCE_PRIOR`], the step
    /// size its determinant's `2n`-th root and the shape the rest. The prior keeps the start from
    /// inheriting the shape of a cluster tighter than it (a model's refinements of its incumbent):
    /// a shape learnt from a few near-identical points, orders of magnitude narrower along some
    /// axes, took CMA-ES hundreds of evaluations to unlearn (measured on BBOB). `None` when the
    /// covariance breaks down.
    fn from_source(s: &Strategy, source: &[(Vec<f64>, f64)], min_step: f64) -> Option<State> {
        let n = s.n;
        let k = s.lambda.max(source.len().div_ceil(10)).min(source.len());
        let mut order: Vec<usize> = (0..source.len()).collect();
        order.sort_by(|&a, &b| source[a].1.total_cmp(&source[b].1));
        let best: Vec<&Vec<f64>> = order[..k].iter().map(|&i| &source[i].0).collect();
        let mean: Vec<f64> = (0..n).map(|j| best.iter().map(|x| x[j]).sum::<f64>() / k as f64).collect();
        let mut cov = vec![0.0; n * n];
        for x in &best {
            for i in 0..n {
                for j in 0..n {
                    cov[i * n + j] += (x[i] - mean[i]) * (x[j] - mean[j]) / k as f64;
                }
            }
        }
        for j in 0..n {
            cov[j * n + j] += SOURCE_PRIOR * SOURCE_PRIOR;
        }
        let (values, _) = symmetric_eigen(&cov, n);
        let log_det: f64 = values.iter().map(|v| v.max(f64::MIN_POSITIVE).ln()).sum();
        let sigma = (log_det / (2 * n) as f64).exp();
        if !(sigma.is_finite() && sigma >= min_step) {
            return None;
        }
        cov.iter_mut().for_each(|c| *c /= sigma * sigma);
        State::started(mean, sigma, cov, min_step)
    }

    /// Refresh the eigendecomposition; false if the state has collapsed or broken down.
    fn decompose(&mut self, min_step: f64) -> bool {
        let n = self.mean.len();
        if !self.cov.iter().all(|c| c.is_finite()) || !self.sigma.is_finite() {
            return false;
        }
        let (values, basis) = symmetric_eigen(&self.cov, n);
        let largest = values.iter().copied().fold(f64::MIN, f64::max);
        let smallest = values.iter().copied().fold(f64::MAX, f64::min);
        if largest.is_nan() || largest <= 0.0 || smallest <= largest * 1e-14 || self.sigma * largest.sqrt() < min_step {
            return false;
        }
        self.scales = values.iter().map(|v| v.sqrt()).collect();
        self.basis = basis;
        true
    }

    /// `C^(-1/2) y = B D^(-1) B^T y`.
    fn whiten(&self, y: &[f64]) -> Vec<f64> {
        let n = y.len();
        let coeffs: Vec<f64> =
            (0..n).map(|k| (0..n).map(|i| self.basis[i * n + k] * y[i]).sum::<f64>() / self.scales[k]).collect();
        (0..n).map(|i| (0..n).map(|k| self.basis[i * n + k] * coeffs[k]).sum()).collect()
    }

    /// One generation's update; false if the state collapsed (the caller restarts).
    fn update(&mut self, s: &Strategy, generation: Generation<'_>, min_step: f64) -> bool {
        let n = s.n;
        // Steps from the current mean, shortened like injected solutions (see the module doc).
        let mut steps = Vec::with_capacity(generation.len());
        for (x, _) in generation {
            let mut y: Vec<f64> = x.iter().zip(&self.mean).map(|(x, m)| (x - m) / self.sigma).collect();
            let mut norm = norm2(&self.whiten(&y));
            if norm > s.max_step_norm {
                let shrink = s.max_step_norm / norm;
                y.iter_mut().for_each(|v| *v *= shrink);
                norm = s.max_step_norm;
            }
            steps.push((y, norm));
        }
        let order = ranking(generation);
        let mut yw = vec![0.0; n];
        for (&i, w) in order.iter().zip(&s.weights[..s.mu]) {
            for (a, y) in yw.iter_mut().zip(&steps[i].0) {
                *a += w * y;
            }
        }
        for (m, y) in self.mean.iter_mut().zip(&yw) {
            *m += self.sigma * y;
        }
        let ws = self.whiten(&yw);
        let ps_gain = (s.cs * (2.0 - s.cs) * s.mueff).sqrt();
        for (p, w) in self.ps.iter_mut().zip(&ws) {
            *p = (1.0 - s.cs) * *p + ps_gain * w;
        }
        self.generations += 1;
        let ps_norm = norm2(&self.ps);
        let bias = (1.0 - (1.0 - s.cs).powi(2 * self.generations as i32)).sqrt();
        // Stall the rank-one path while the step size is growing fast (Hansen's h_sigma).
        let hs = ps_norm / bias < (1.4 + 2.0 / (n as f64 + 1.0)) * s.chi_n;
        let pc_gain = if hs { (s.cc * (2.0 - s.cc) * s.mueff).sqrt() } else { 0.0 };
        for (p, y) in self.pc.iter_mut().zip(&yw) {
            *p = (1.0 - s.cc) * *p + pc_gain * y;
        }
        let delta = if hs { 0.0 } else { s.cc * (2.0 - s.cc) };
        let weight_sum: f64 = s.weights.iter().sum();
        let keep = 1.0 + s.c1 * delta - s.c1 - s.cmu * weight_sum;
        for c in self.cov.iter_mut() {
            *c *= keep;
        }
        for i in 0..n {
            for j in 0..n {
                self.cov[i * n + j] += s.c1 * self.pc[i] * self.pc[j];
            }
        }
        for (&idx, &w) in order.iter().zip(&s.weights) {
            if w == 0.0 {
                continue;
            }
            let (y, norm) = &steps[idx];
            // Negative weights act on steps rescaled to the typical length sqrt(n), so a far-off
            // bad point cannot remove more variance than a near one (Hansen's tutorial).
            let w = if w < 0.0 { w * n as f64 / norm.powi(2).max(1e-300) } else { w };
            for i in 0..n {
                for j in 0..n {
                    self.cov[i * n + j] += s.cmu * w * y[i] * y[j];
                }
            }
        }
        // Rounding leaves the matrix slightly asymmetric; Jacobi assumes symmetry.
        for i in 0..n {
            for j in i + 1..n {
                let avg = 0.5 * (self.cov[i * n + j] + self.cov[j * n + i]);
                self.cov[i * n + j] = avg;
                self.cov[j * n + i] = avg;
            }
        }
        // A step size beyond the box width only draws outside it: cap it there.
        self.sigma = (self.sigma * ((s.cs / s.ds) * (ps_norm / s.chi_n - 1.0)).exp()).min(1.0);
        self.decompose(min_step)
    }

    /// `x` in the strategy's round coordinates: `D^-1 B^T (x - m) / sigma`, where a draw is
    /// standard normal.
    fn to_round(&self, x: &[f64]) -> Vec<f64> {
        let n = x.len();
        (0..n)
            .map(|k| {
                let along: f64 = (0..n).map(|i| self.basis[i * n + k] * (x[i] - self.mean[i])).sum();
                along / (self.sigma * self.scales[k])
            })
            .collect()
    }

    /// The unit-box point at round coordinates `z`: `m + sigma B D z`.
    fn unit_at_round(&self, z: &[f64]) -> Vec<f64> {
        let n = z.len();
        (0..n)
            .map(|i| {
                self.mean[i] + self.sigma * (0..n).map(|k| self.basis[i * n + k] * self.scales[k] * z[k]).sum::<f64>()
            })
            .collect()
    }

    /// A draw from `N(m, sigma^2 C)`, in unit-box coordinates (not yet reflected).
    fn sample(&self, rng: &mut PropRng) -> Vec<f64> {
        let n = self.mean.len();
        let z: Vec<f64> = (0..n).map(|k| self.scales[k] * standard_normal(rng)).collect();
        (0..n).map(|i| self.mean[i] + self.sigma * (0..n).map(|k| self.basis[i * n + k] * z[k]).sum::<f64>()).collect()
    }

    /// The first of `10 n` draws that lies in the unit box, or the last one clipped to it: the
    /// `cmaes` package's bound handling.
    fn sample_inside(&self, rng: &mut PropRng) -> Vec<f64> {
        let inside = |x: &[f64]| x.iter().all(|v| (0.0..=1.0).contains(v));
        let mut x = self.sample(rng);
        for _ in 1..10 * self.mean.len() {
            if inside(&x) {
                return x;
            }
            x = self.sample(rng);
        }
        x.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0));
        x
    }
}

fn norm2(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// CMA-ES whose state every worker rebuilds from the island population (see the module doc).
#[derive(Debug, Clone)]
pub struct Cmaes {
    space: SearchSpace,
    unit: UnitBox,
    strategy: Strategy,
    config: CmaesConfig,
    /// The first this many evaluations of the island's history (in breeding order) were bred by
    /// another propagator: the strategy starts from their best (see [`Cmaes::taking_over_after`]).
    source: usize,
}

impl Cmaes {
    /// CMA-ES for `space`. Refuses categorical parameters (naming the first), a generation size
    /// below 2 and a non-positive `min_step`.
    pub fn new(space: &SearchSpace, config: CmaesConfig) -> Result<Self> {
        let unit = UnitBox::new(space, "CMA-ES")?;
        let n = unit.dims();
        let lambda = config.population_size.unwrap_or_else(|| default_population_size(n));
        if lambda < 2 {
            return Err(Error::InvalidPropagator(format!(
                "CMA-ES needs a population size of at least 2 (mu = lambda / 2 parents), got {lambda}"
            )));
        }
        if !(config.min_step.is_finite() && config.min_step > 0.0) {
            return Err(Error::InvalidPropagator(format!(
                "CMA-ES needs a positive finite min_step, got {}",
                config.min_step
            )));
        }
        if config.max_generations == 0 {
            return Err(Error::InvalidPropagator("CMA-ES needs max_generations >= 1".into()));
        }
        crate::propagator::check_probability("CMA-ES's model share", config.model_share)?;
        let strategy = Strategy::new(n, lambda, config.update);
        Ok(Cmaes { space: space.clone(), unit, strategy, config, source: 0 })
    }

    /// This CMA-ES takes over from another propagator that bred the first `source` evaluations of
    /// the island: it starts from the best of those (mean, shape and step size of their best tenth)
    /// and replays only the generations bred after them, instead of starting from the spread of
    /// the first generation. Once more than `max_generations` have followed, the replay window
    /// starts past the hand-over and the strategy starts from its oldest generation, as always.
    pub fn taking_over_after(mut self, source: usize) -> Self {
        self.source = source;
        self
    }

    /// The generation size `lambda`.
    pub fn population_size(&self) -> usize {
        self.strategy.lambda
    }

    /// The number of positively weighted parents `mu`.
    pub fn parents_per_generation(&self) -> usize {
        self.strategy.mu
    }

    /// The recombination weights, best rank first: the first `mu` are positive and sum to 1; the
    /// rest are negative with the active update, 0 with the basic one.
    pub fn weights(&self) -> &[f64] {
        &self.strategy.weights
    }

    /// The state after replaying the pool's complete generations, or `None` (no complete
    /// generation yet, or collapsed in the last one).
    fn rebuild(&self, pool: &dyn Pool) -> Option<State> {
        let lambda = self.strategy.lambda;
        // The complete generations of the history in breeding order bred after the source, at
        // most the last `max_generations + 1`: taken from the latest end, past the incomplete one.
        let size = pool.size();
        let source = self.source.min(size);
        let complete = (size - source) / lambda;
        // The source starts the strategy while every generation after it fits the window.
        let warm = source > 0 && complete <= self.config.max_generations;
        let first = if warm { 0 } else { complete.saturating_sub(self.config.max_generations + 1) };
        let mut points: Vec<(Vec<f64>, f64)> = pool
            .iter_latest_bred()
            .skip((size - source) % lambda)
            .take((complete - first) * lambda + if warm { source } else { 0 })
            .map(|i| (self.unit.to_unit(&i.values), i.loss))
            .collect();
        points.reverse();
        let min_step = self.config.min_step;
        let (source, generations) = points.split_at(if warm { source } else { 0 });
        let mut state = if warm {
            State::from_source(&self.strategy, source, min_step)
        } else if first == 0 && self.config.centred_start {
            State::centred(self.strategy.n, min_step)
        } else {
            None
        };
        for generation in generations.chunks_exact(lambda) {
            state = match state {
                None => State::from_generation(&self.strategy, generation, min_step),
                Some(mut s) => s.update(&self.strategy, generation, min_step).then_some(s),
            };
        }
        state
    }
}

impl Cmaes {
    /// The lowest point of a quadratic model of the island's latest evaluations (`quadratic.rs`)
    /// within the longest step an injected solution takes, in unit-box coordinates, or `None`: too
    /// few evaluations, a model that ranked the latest `lambda` (held out of its fit) with a
    /// Kendall's tau below [`TRUSTED_TAU`], or a lowest point the island has already evaluated or
    /// is evaluating now.
    fn model_child(&self, state: &State, pool: &dyn Pool) -> Option<Vec<f64>> {
        let (n, lambda) = (self.strategy.n, self.strategy.lambda);
        let round = |i: &Individual| state.to_round(&self.unit.to_unit(&i.values));
        let latest: Vec<(Vec<f64>, f64)> = pool
            .iter_latest_bred()
            .filter(|i| i.loss.is_finite())
            .take(fitting_window(n) + lambda)
            .map(|i| (round(i), i.loss))
            .collect();
        let (held_out, fitted) = latest.split_at(lambda.min(latest.len()));
        let earlier = Quadratic::fit(fitted)?;
        let predicted: Vec<f64> = held_out.iter().map(|(z, _)| earlier.predict(z)).collect();
        let losses: Vec<f64> = held_out.iter().map(|p| p.1).collect();
        if kendall_tau(&predicted, &losses) < TRUSTED_TAU {
            return None;
        }
        let z = Quadratic::fit(&latest[..latest.len().min(fitting_window(n))])?
            .minimum_within(n, self.strategy.max_step_norm)?;
        // Within a thousandth of a step of a point the island has: evaluating it again teaches
        // nothing, and workers breeding at once would propose twins.
        let known = latest.iter().map(|(z, _)| z.clone()).chain(pool.iter_running().map(round));
        if known.into_iter().any(|k| k.iter().zip(&z).map(|(a, b)| (a - b).powi(2)).sum::<f64>() < 1e-6) {
            return None;
        }
        Some(state.unit_at_round(&z).into_iter().map(|u| u.clamp(0.0, 1.0)).collect())
    }

    /// The model's child ([`Cmaes::model_child`]) for a search another propagator breeds (the
    /// GP's: [`GpConfig::quadratic_share`](crate::propagator::GpConfig::quadratic_share)), in the frame of
    /// the warm start a hand-over would begin from now: the best tenth of the island's evaluations.
    fn model_child_before_hand_over(&self, pool: &dyn Pool) -> Option<Vec<crate::space::Value>> {
        let points: Vec<(Vec<f64>, f64)> = pool
            .iter_latest_bred()
            .filter(|i| i.loss.is_finite())
            .map(|i| (self.unit.to_unit(&i.values), i.loss))
            .collect();
        let state = State::from_source(&self.strategy, &points, self.config.min_step)?;
        self.model_child(&state, pool).map(|u| self.unit.point_at(&u))
    }
}

/// CMA-ES's quadratic model as a propagator of its own, for a search another propagator breeds:
/// its child is the model's ([`Cmaes::model_child_before_hand_over`]) where the model has just
/// ranked the latest evaluations right, and it has none to offer (an empty result) otherwise. The
/// GP puts it in front of its process ([`GpConfig::quadratic_share`](crate::propagator::GpConfig::quadratic_share),
/// `combinators::Attempt`).
#[derive(Debug)]
pub(crate) struct QuadraticModel(Cmaes);

impl QuadraticModel {
    /// The model for `space`; `None` for a space CMA-ES cannot search (a categorical parameter).
    pub(crate) fn new(space: &SearchSpace) -> Option<Self> {
        Cmaes::new(space, CmaesConfig::default()).ok().map(QuadraticModel)
    }
}

impl Propagator for QuadraticModel {
    fn name(&self) -> &'static str {
        "quadratic model"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, _rng: &mut PropRng) -> Result<Vec<Individual>> {
        check_same_space(&self.0.space, space, "the quadratic model")?;
        Ok(self.0.model_child_before_hand_over(pool).map(|child| vec![Individual::new(child)]).unwrap_or_default())
    }
}

impl Propagator for Cmaes {
    fn name(&self) -> &'static str {
        "CMA-ES"
    }
    fn models_running(&self) -> bool {
        self.config.model_share > 0.0
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        check_same_space(&self.space, space, "CMA-ES")?;
        let values = match self.rebuild(pool) {
            Some(state) => {
                // No draw for the share without a model: a seed breeds what it bred before.
                let modelled = self.config.model_share > 0.0 && rng.random::<f64>() < self.config.model_share;
                let child = modelled.then(|| self.model_child(&state, pool)).flatten();
                let u = child.unwrap_or_else(|| {
                    if self.config.resample_in_bounds { state.sample_inside(rng) } else { state.sample(rng) }
                });
                self.unit.point_at(&u)
            }
            None => space.sample(rng),
        };
        Ok(vec![Individual::new(values)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_reference() {
        for (n, lambda) in [(1, 4), (2, 6), (3, 7), (5, 8), (10, 10), (20, 12), (50, 15)] {
            assert_eq!(default_population_size(n), lambda, "n = {n}");
            for update in [CovarianceUpdate::Basic, CovarianceUpdate::Active] {
                let s = Strategy::new(n, lambda, update);
                assert_eq!(s.mu, lambda / 2);
                let positive: f64 = s.weights[..s.mu].iter().sum();
                assert!((positive - 1.0).abs() < 1e-12, "{:?}", s.weights);
                assert!(s.weights[..s.mu].windows(2).all(|w| w[0] > w[1] && w[1] > 0.0));
                let rest = &s.weights[s.mu..];
                match update {
                    CovarianceUpdate::Basic => assert!(rest.iter().all(|w| *w == 0.0)),
                    CovarianceUpdate::Active => {
                        assert!(rest.iter().filter(|w| **w != 0.0).all(|w| *w < 0.0));
                        assert!(rest.last().unwrap() < &0.0);
                        // The positive-definiteness bound holds.
                        let neg: f64 = rest.iter().map(|w| w.abs()).sum();
                        assert!(neg <= (1.0 - s.c1 - s.cmu) / (n as f64 * s.cmu) + 1e-12);
                    }
                }
                assert!(s.c1 + s.cmu <= 1.0 && s.mueff > 1.0);
            }
        }
    }

    #[test]
    fn a_configuration_saved_before_the_centred_start_keeps_the_old_start_reflection_and_no_model() {
        let old = r#"{"update":"active","population_size":null,"max_generations":200,"min_step":1e-8}"#;
        let config: CmaesConfig = serde_json::from_str(old).unwrap();
        assert!(!config.centred_start && !config.resample_in_bounds && config.model_share == 0.0);
        let new = CmaesConfig::default();
        assert!(new.centred_start && new.resample_in_bounds && new.model_share == MODEL_SHARE);
        let again: CmaesConfig = serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert_eq!(again, new);
    }

    #[test]
    fn categoricals_are_refused_by_name() {
        let space = SearchSpace::builder().float("lr", 0.0, 1.0).categorical("act", &["relu", "tanh"]).build().unwrap();
        let e = Cmaes::new(&space, CmaesConfig::default()).unwrap_err().to_string();
        assert!(e.contains("CMA-ES") && e.contains("'act'"), "{e}");
    }

    /// `n` individuals in breeding order, drawn uniformly from `space`, with `loss`.
    fn history(space: &SearchSpace, n: u64, loss: impl Fn(&[f64]) -> f64) -> Vec<Individual> {
        let mut rng = crate::rng::worker_rng(11, 0);
        (0..n)
            .map(|g| {
                let mut i = Individual::new(space.sample(&mut rng));
                let x: Vec<f64> = i.values.iter().map(|v| v.as_f64()).collect();
                i.loss = loss(&x);
                i.id.generation = g;
                i
            })
            .collect()
    }

    #[test]
    fn a_take_over_starts_from_the_best_of_what_came_before_until_the_window_passes_it() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        let target = [0.3, 0.7];
        let distance = |x: &[f64]| ((x[0] - target[0]).powi(2) + (x[1] - target[1]).powi(2)).sqrt();
        let plain = Cmaes::new(&space, CmaesConfig::default()).unwrap();
        // A whole number of generations, so that both replays cut the history alike below.
        let lambda = plain.population_size() as u64;
        let source = 33 * lambda;
        let pool = history(&space, source, distance);
        let warm = plain.clone().taking_over_after(source as usize);
        // Nothing bred since the hand-over: the state is the best tenth's (20 points within about
        // 0.18 of the target, a spread of about 0.1 per coordinate), where a plain replay starts
        // from the spread of a uniform generation (0.29).
        let state = warm.rebuild(&pool).unwrap();
        assert!(distance(&state.mean) < 0.05 && state.sigma < 0.13, "{:?} {}", state.mean, state.sigma);
        let plain_state = plain.rebuild(&pool).unwrap();
        assert!(plain_state.sigma > 1.5 * state.sigma, "{} against {}", plain_state.sigma, state.sigma);
        // Its children land near the target.
        let mut rng = crate::rng::worker_rng(12, 0);
        let near = (0..50)
            .filter(|_| {
                let child = warm.propagate(&pool, &space, &mut rng).unwrap().remove(0);
                distance(&child.values.iter().map(|v| v.as_f64()).collect::<Vec<_>>()) < 0.2
            })
            .count();
        assert!(near >= 35, "{near} of 50 children within 0.2 of the target (uniform ones: 1 in 8)");
        // Once more generations than the window holds followed the hand-over, the replay is the
        // plain one's: the source has left the window.
        let long = history(&space, source + lambda * (CmaesConfig::default().max_generations as u64 + 2), distance);
        let (a, b) = (warm.rebuild(&long).unwrap(), plain.rebuild(&long).unwrap());
        assert_eq!((a.mean, a.sigma), (b.mean, b.sigma));
    }

    #[test]
    fn a_collapsed_generation_restarts_with_a_random_point() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        // A restart starts from a generation's spread, as a start without the centred one does.
        let config = CmaesConfig { centred_start: false, ..CmaesConfig::default() };
        let cmaes = Cmaes::new(&space, config).unwrap();
        // Every individual at the same point: no spread, so no state and a random child.
        let pool: Vec<Individual> = (0..cmaes.population_size() as u64 * 3)
            .map(|g| {
                let mut i = Individual::new(vec![crate::space::Value::Float(0.5); 2]);
                i.loss = g as f64;
                i.id.generation = g;
                i
            })
            .collect();
        assert!(cmaes.rebuild(&pool).is_none());
        let mut rng = crate::rng::worker_rng(3, 0);
        let off =
            (0..20).filter(|_| cmaes.propagate(&pool, &space, &mut rng).unwrap()[0].values[0].as_f64() != 0.5).count();
        assert_eq!(off, 20);
    }

    /// Unit coordinates of `count` children of `cmaes` bred from `pool`.
    fn children(cmaes: &Cmaes, pool: &Vec<Individual>, space: &SearchSpace, count: usize) -> Vec<Vec<f64>> {
        let mut rng = crate::rng::worker_rng(5, 0);
        (0..count).map(|_| cmaes.unit.to_unit(&cmaes.propagate(pool, space, &mut rng).unwrap()[0].values)).collect()
    }

    /// Per coordinate: mean and standard deviation.
    fn moments(points: &[Vec<f64>]) -> Vec<(f64, f64)> {
        let count = points.len() as f64;
        (0..points[0].len())
            .map(|j| {
                let mean = points.iter().map(|x| x[j]).sum::<f64>() / count;
                let var = points.iter().map(|x| (x[j] - mean).powi(2)).sum::<f64>() / count;
                (mean, var.sqrt())
            })
            .collect()
    }

    #[test]
    fn a_fresh_strategy_breeds_around_the_centre_with_a_sixth_of_each_range() {
        let space =
            SearchSpace::builder().float("x", -5.0, 5.0).log_float("lr", 1e-5, 1e-1).int("n", 0, 9).build().unwrap();
        let empty: Vec<Individual> = vec![];
        // From the first child on: mean 0.5 and standard deviation 1/6 in unit coordinates (the
        // int's bins and the log axis alike), standard errors about 0.004 here.
        let centred = Cmaes::new(&space, CmaesConfig::default()).unwrap();
        for (j, (mean, sd)) in moments(&children(&centred, &empty, &space, 2000)).into_iter().enumerate() {
            assert!((mean - 0.5).abs() < 0.02 && (sd - 1.0 / 6.0).abs() < 0.015, "axis {j}: {mean} {sd}");
        }
        // Without the centred start the first generation is uniform: standard deviation 0.29.
        let uniform = Cmaes::new(&space, CmaesConfig { centred_start: false, ..CmaesConfig::default() }).unwrap();
        for (j, (_, sd)) in moments(&children(&uniform, &empty, &space, 2000)).into_iter().enumerate() {
            assert!((sd - 12f64.sqrt().recip()).abs() < 0.02, "axis {j}: {sd}");
        }
    }

    #[test]
    fn a_state_beyond_a_bound_proposes_the_bound_itself_when_resampling() {
        let space = SearchSpace::builder().float("x", -5.0, 5.0).float("y", -5.0, 5.0).build().unwrap();
        let cmaes = Cmaes::new(&space, CmaesConfig::default()).unwrap();
        // The mean lies past x's upper bound; y is well inside.
        let state = State::started(vec![1.3, 0.5], 0.1, vec![1.0, 0.0, 0.0, 1.0], 1e-8).unwrap();
        let mut rng = crate::rng::worker_rng(7, 0);
        let resampled: Vec<Vec<f64>> = (0..200).map(|_| state.sample_inside(&mut rng)).collect();
        assert!(resampled.iter().flatten().all(|u| (0.0..=1.0).contains(u)));
        // x falls inside in about 0.1% of draws, so almost every child is a clipped last draw:
        // exactly the bound, -5..5's 5.0 once mapped back.
        let at_bound = resampled.iter().filter(|u| cmaes.unit.point_at(u)[0].as_f64() == 5.0).count();
        assert!(at_bound >= 150, "{at_bound} of 200 at x = 5");
        // Reflection folds the same draws back inside and never reaches the bound.
        let reflected = (0..200).filter(|_| cmaes.unit.point_at(&state.sample(&mut rng))[0].as_f64() == 5.0).count();
        assert_eq!(reflected, 0);
    }
}
