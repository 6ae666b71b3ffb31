//! A Gaussian process with the Matérn-5/2 kernel and one length scale per parameter, its kernel
//! fitted by maximum a posteriori: the model of Optuna's GPSampler and BoTorch. Parameters are
//! numbers on their unit interval or categoricals, whose distance is 0 for the same choice and 1
//! otherwise. The priors are Optuna 5's (read from its source, `optuna/_gp/prior.py`): on each
//! inverse squared length scale l, a density proportional to exp(-(0.1 / l + 0.1 l)) (neither
//! too short nor too long a scale), a Gamma(2, 1) on the kernel's scale and a Gamma(1.1, 30) on
//! the noise variance (little noise), for losses standardized to mean 0 and deviation 1.
//!
//! k(x, y) = scale * (1 + sqrt(5 q) + 5 q / 3) * exp(-sqrt(5 q)), q = sum_j l_j d_j(x, y)^2,
//! plus the noise on the diagonal.

use std::sync::{Arc, OnceLock};

use nalgebra::{Cholesky, DMatrix, DVector, Dyn};

use super::dense;
use super::lbfgs::{Stop, minimize};
use crate::condition::Activity;

/// Smallest noise variance: keeps the covariance invertible for repeated points.
const MIN_NOISE: f64 = 1e-6;
/// Bounds of the fitted parameters, in `ln`: inverse squared length scales, scale, noise.
const LN_INVERSE_SQUARED_LENGTH: (f64, f64) = (-9.2, 9.2); // 1e-4 .. 1e4
const LN_SCALE: (f64, f64) = (-6.9, 4.6); // 1e-3 .. 1e2
const LN_NOISE: (f64, f64) = (-13.8, 0.0); // 1e-6 .. 1
/// The fit's stopping rule: the likelihood of a few hundred points changes little after this.
const FIT_STOP: Stop = Stop { iterations: 60, gradient: 1e-5, relative_decrease: 1e-7 };

/// The kernel's parameters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hyper {
    /// One inverse squared length scale per coordinate.
    pub inverse_squared_lengths: Vec<f64>,
    pub scale: f64,
    pub noise: f64,
}

impl Hyper {
    /// Where the fit starts: Optuna's start (every scale 1) with a little noise.
    fn start(dims: usize) -> Self {
        Hyper { inverse_squared_lengths: vec![1.0; dims], scale: 1.0, noise: 1e-2 }
    }

    fn to_ln(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.inverse_squared_lengths.iter().map(|l| l.ln()).collect();
        v.push(self.scale.ln());
        v.push((self.noise - MIN_NOISE).max(MIN_NOISE).ln());
        v
    }

    fn from_ln(ln: &[f64]) -> Self {
        let d = ln.len() - 2;
        Hyper {
            inverse_squared_lengths: ln[..d].iter().map(|v| v.exp()).collect(),
            scale: ln[d].exp(),
            noise: MIN_NOISE + ln[d + 1].exp(),
        }
    }

    /// The log prior, and its gradient by the `ln` parameters.
    fn log_prior(&self) -> (f64, Vec<f64>) {
        let mut value = 0.0;
        let mut grad = Vec::with_capacity(self.inverse_squared_lengths.len() + 2);
        for l in &self.inverse_squared_lengths {
            value -= 0.1 / l + 0.1 * l;
            grad.push(0.1 / l - 0.1 * l);
        }
        // Gamma(2, 1): ln s - s. Gamma(1.1, 30): 0.1 ln n - 30 n (n = MIN_NOISE + e^t).
        value += self.scale.ln() - self.scale;
        grad.push(1.0 - self.scale);
        value += 0.1 * self.noise.ln() - 30.0 * self.noise;
        let dn = self.noise - MIN_NOISE;
        grad.push((0.1 / self.noise - 30.0) * dn);
        (value, grad)
    }
}

/// The Matérn-5/2 correlation at squared scaled distance `q`, and its derivative by `q`.
fn matern52(q: f64) -> (f64, f64) {
    let r = (5.0 * q).sqrt();
    let e = (-r).exp();
    ((1.0 + r + 5.0 * q / 3.0) * e, -5.0 / 6.0 * (1.0 + r) * e)
}

/// The coordinates of a configuration and which of them are categorical.
#[derive(Debug, Clone)]
pub(crate) struct Coordinates {
    pub categorical: Vec<bool>,
    /// A conditional space's conditions ([`crate::condition`]), the categorical coordinates
    /// holding their choice's index: a coordinate is compared only where it is active in both
    /// points; active in one of them only, it is as far as two different choices (1), in
    /// neither, no distance. So the dormant value of an inactive parameter is never taken for a
    /// value. `None`: every coordinate always counts.
    pub activity: Option<Arc<Activity>>,
}

impl Coordinates {
    /// Coordinates of a space without conditions.
    pub(crate) fn plain(categorical: Vec<bool>) -> Self {
        Coordinates { categorical, activity: None }
    }

    /// Which coordinates are active at `x`, in a conditional space.
    fn active(&self, x: &[f64]) -> Option<Vec<bool>> {
        self.activity.as_ref().map(|a| a.active_by(|i| x[i].round().max(0.0) as usize))
    }

    /// The per-coordinate distance, squared, of coordinates active at both points.
    fn squared(&self, j: usize, a: f64, b: f64) -> f64 {
        if self.categorical[j] { if a == b { 0.0 } else { 1.0 } } else { (a - b) * (a - b) }
    }

    /// The per-coordinate distance, squared, given which coordinates are active at each point
    /// (`None` where the space has no conditions).
    fn squared_where(&self, j: usize, a: f64, b: f64, active_a: Option<&[bool]>, active_b: Option<&[bool]>) -> f64 {
        match (active_a, active_b) {
            (Some(ma), Some(mb)) if !(ma[j] && mb[j]) => {
                if ma[j] == mb[j] {
                    0.0
                } else {
                    1.0
                }
            }
            _ => self.squared(j, a, b),
        }
    }

    /// Whether coordinate `j` moves the kernel between points with these activities.
    fn compared(j: usize, active_a: Option<&[bool]>, active_b: Option<&[bool]>) -> bool {
        active_a.is_none_or(|m| m[j]) && active_b.is_none_or(|m| m[j])
    }
}

/// A process fitted to points and their standardized losses.
#[derive(Debug, Clone)]
pub(crate) struct MaternGp {
    coordinates: Coordinates,
    hyper: Hyper,
    xs: Vec<Vec<f64>>,
    /// Which coordinates are active at each of `xs`, in a conditional space.
    active: Option<Vec<Vec<bool>>>,
    cholesky: Cholesky<f64, Dyn>,
    /// L^-1 for K = L L^T, computed when first needed: many predictions at once become one
    /// matrix product ([`MaternGp::predict_many`]).
    inverse_l: OnceLock<DMatrix<f64>>,
    /// K^-1 y.
    alpha: DVector<f64>,
}

/// A prediction with its gradient by the continuous coordinates.
#[derive(Debug, Clone)]
pub(crate) struct Belief {
    pub mean: f64,
    pub variance: f64,
    pub d_mean: Vec<f64>,
    pub d_variance: Vec<f64>,
}

impl MaternGp {
    /// The kernel fitted by MAP to `xs` and `ys` (standardize the losses first), then the process.
    /// `None` for no points, points of different lengths or non-finite data.
    pub(crate) fn fit(coordinates: Coordinates, xs: Vec<Vec<f64>>, ys: Vec<f64>) -> Option<Self> {
        let start = Hyper::start(coordinates.categorical.len());
        Self::fit_from(coordinates, xs, ys, &start)
    }

    /// [`MaternGp::fit`] with the search for the kernel starting at `start` (a fit of similar
    /// data: fewer steps), and from the usual start if that fails, as Optuna's cache does.
    pub(crate) fn fit_from(coordinates: Coordinates, xs: Vec<Vec<f64>>, ys: Vec<f64>, start: &Hyper) -> Option<Self> {
        let dims = coordinates.categorical.len();
        let usable = !xs.is_empty()
            && xs.len() == ys.len()
            && xs.iter().all(|x| x.len() == dims && x.iter().all(|v| v.is_finite()))
            && ys.iter().all(|y| y.is_finite());
        if !usable {
            return None;
        }
        let hyper = fit_hyper(&coordinates, &xs, &ys, start);
        Self::with_hyper(coordinates, hyper, xs, ys)
    }

    /// The process with given kernel parameters (what fantasies use: more points, the same kernel).
    pub(crate) fn with_hyper(coordinates: Coordinates, hyper: Hyper, xs: Vec<Vec<f64>>, ys: Vec<f64>) -> Option<Self> {
        let (k, _) = FitData::new(&coordinates, &xs, &ys).matrices(&hyper);
        let cholesky = Cholesky::new(k)?;
        let alpha = cholesky.solve(&DVector::from_vec(ys));
        let active = coordinates.activity.as_ref().map(|_| xs.iter().filter_map(|x| coordinates.active(x)).collect());
        Some(MaternGp { coordinates, hyper, xs, active, cholesky, inverse_l: OnceLock::new(), alpha })
    }

    pub(crate) fn hyper(&self) -> &Hyper {
        &self.hyper
    }

    pub(crate) fn points(&self) -> &[Vec<f64>] {
        &self.xs
    }

    /// Which coordinates are active at point `i`, in a conditional space.
    fn active_at(&self, i: usize) -> Option<&[bool]> {
        self.active.as_ref().map(|a| a[i].as_slice())
    }

    /// The scaled squared distance between `x` (with its activity) and point `i`.
    fn distance_to(&self, x: &[f64], active_x: Option<&[bool]>, i: usize) -> f64 {
        scaled_distance(&self.coordinates, &self.hyper, x, &self.xs[i], active_x, self.active_at(i))
    }

    /// The kernel between `x` and every point, and its derivative by `q` at each.
    fn cross(&self, x: &[f64]) -> (DVector<f64>, Vec<f64>) {
        let n = self.xs.len();
        let mut k = DVector::zeros(n);
        let mut dk = vec![0.0; n];
        let active_x = self.coordinates.active(x);
        for i in 0..n {
            let q = self.distance_to(x, active_x.as_deref(), i);
            let (c, dc) = matern52(q);
            k[i] = self.hyper.scale * c;
            dk[i] = self.hyper.scale * dc;
        }
        (k, dk)
    }

    /// The predictive mean and variance (of the loss, without noise) at `x`.
    pub(crate) fn predict(&self, x: &[f64]) -> (f64, f64) {
        let (k, _) = self.cross(x);
        let mean = k.dot(&self.alpha);
        // `l_dirty`: the solve reads only the lower triangle, which `l()` would copy out first.
        let v = self.cholesky.l_dirty().solve_lower_triangular(&k).unwrap_or_else(|| DVector::zeros(k.len()));
        (mean, (self.hyper.scale - v.dot(&v)).max(0.0))
    }

    /// [`MaternGp::predict`] at each of `xs`, a block of them at a time: the kernels between the
    /// block and the points as one matrix, the variances from its product with L^-1 (a matrix
    /// product, several times faster than a triangular solve per point).
    pub(crate) fn predict_many(&self, xs: &[Vec<f64>]) -> Vec<(f64, f64)> {
        const BLOCK: usize = 256;
        let n = self.xs.len();
        let inverse_l = self.inverse_l.get_or_init(|| dense::lower_inverse(self.cholesky.l_dirty()));
        let mut out = Vec::with_capacity(xs.len());
        for block in xs.chunks(BLOCK) {
            let mut cross = DMatrix::zeros(n, block.len());
            for (c, x) in block.iter().enumerate() {
                let active_x = self.coordinates.active(x);
                for i in 0..n {
                    cross[(i, c)] = self.hyper.scale * matern52(self.distance_to(x, active_x.as_deref(), i)).0;
                }
            }
            let v = inverse_l * &cross;
            for c in 0..block.len() {
                let mean = cross.column(c).dot(&self.alpha);
                let explained = v.column(c).norm_squared();
                out.push((mean, (self.hyper.scale - explained).max(0.0)));
            }
        }
        out
    }

    /// The log marginal likelihood of the process's values under its kernel (the evidence two
    /// models of the same values are compared by): with K = L L^T and alpha = K^-1 y,
    /// y^T K^-1 y = |L^T alpha|^2.
    pub(crate) fn log_evidence(&self) -> f64 {
        let l = self.cholesky.l();
        let fit = l.tr_mul(&self.alpha).norm_squared();
        let n = self.xs.len() as f64;
        let log_det: f64 = (0..self.xs.len()).map(|i| l[(i, i)].ln()).sum::<f64>() * 2.0;
        -0.5 * fit - 0.5 * log_det - 0.5 * n * (2.0 * std::f64::consts::PI).ln()
    }

    /// The predictive means at the process's own points, at once: with K the covariance (noise
    /// on its diagonal) and alpha = K^-1 y, they are (K - noise I) alpha = L (L^T alpha) - noise
    /// alpha, without a variance per point.
    pub(crate) fn means_at_points(&self) -> Vec<f64> {
        let l = self.cholesky.l();
        let k_alpha = &l * (l.transpose() * &self.alpha);
        k_alpha.iter().zip(self.alpha.iter()).map(|(ka, a)| ka - self.hyper.noise * a).collect()
    }

    /// The prediction at `x` with its gradient by each coordinate (zero for categorical ones).
    pub(crate) fn belief(&self, x: &[f64]) -> Belief {
        let (k, dk) = self.cross(x);
        let mean = k.dot(&self.alpha);
        let w = self.cholesky.solve(&k);
        let variance = (self.hyper.scale - k.dot(&w)).max(0.0);
        let dims = x.len();
        let mut d_mean = vec![0.0; dims];
        let mut d_variance = vec![0.0; dims];
        let active_x = self.coordinates.active(x);
        for (i, p) in self.xs.iter().enumerate() {
            for j in 0..dims {
                // An inactive coordinate's distance is a constant.
                if self.coordinates.categorical[j] || !Coordinates::compared(j, active_x.as_deref(), self.active_at(i))
                {
                    continue;
                }
                // dk_i/dx_j = dk/dq * 2 l_j (x_j - p_j)
                let dkij = dk[i] * 2.0 * self.hyper.inverse_squared_lengths[j] * (x[j] - p[j]);
                d_mean[j] += self.alpha[i] * dkij;
                d_variance[j] -= 2.0 * w[i] * dkij;
            }
        }
        Belief { mean, variance, d_mean, d_variance }
    }
}

fn scaled_distance(
    c: &Coordinates,
    h: &Hyper,
    a: &[f64],
    b: &[f64],
    active_a: Option<&[bool]>,
    active_b: Option<&[bool]>,
) -> f64 {
    (0..a.len()).map(|j| h.inverse_squared_lengths[j] * c.squared_where(j, a[j], b[j], active_a, active_b)).sum()
}

/// What the fit needs of the data: the points' per-coordinate squared distances (reused at every
/// step) and the losses. Pairs (i, j), i > j, are visited column by column (j, then i), the
/// order of nalgebra's column-major storage: every matrix below is read and written contiguously.
struct FitData {
    n: usize,
    dims: usize,
    squared: Vec<f64>,
    y: DVector<f64>,
}

impl FitData {
    fn new(c: &Coordinates, xs: &[Vec<f64>], ys: &[f64]) -> Self {
        let n = xs.len();
        let dims = c.categorical.len();
        let mut squared = vec![0.0; n * n * dims];
        let active: Vec<Option<Vec<bool>>> = xs.iter().map(|x| c.active(x)).collect();
        for j in 0..n {
            for i in j + 1..n {
                for d in 0..dims {
                    squared[(j * n + i) * dims + d] =
                        c.squared_where(d, xs[i][d], xs[j][d], active[i].as_deref(), active[j].as_deref());
                }
            }
        }
        FitData { n, dims, squared, y: DVector::from_column_slice(ys) }
    }

    /// The squared distances of the pair (i, j), i > j, per coordinate.
    fn pair(&self, i: usize, j: usize) -> &[f64] {
        &self.squared[(j * self.n + i) * self.dims..(j * self.n + i + 1) * self.dims]
    }

    /// The covariance of the points under `h` (noise on the diagonal) on and below its diagonal
    /// (all that nalgebra's Cholesky reads; zeros above), and below the diagonal the kernel's
    /// derivative by the scaled squared distance (for the length scales' gradients).
    fn matrices(&self, h: &Hyper) -> (DMatrix<f64>, DMatrix<f64>) {
        let n = self.n;
        let mut k = DMatrix::zeros(n, n);
        let mut dq = DMatrix::zeros(n, n);
        for j in 0..n {
            k[(j, j)] = h.scale + h.noise;
            for i in j + 1..n {
                let q: f64 = self.pair(i, j).iter().zip(&h.inverse_squared_lengths).map(|(a, b)| a * b).sum();
                let (m, dm) = matern52(q);
                k[(i, j)] = h.scale * m;
                dq[(i, j)] = h.scale * dm;
            }
        }
        (k, dq)
    }

    /// Minus the log of (marginal likelihood times prior) at the `ln` parameters, and its
    /// gradient; NaN where the covariance is not positive definite.
    fn objective(&self, ln: &[f64]) -> (f64, Vec<f64>) {
        let (n, dims) = (self.n, self.dims);
        let h = Hyper::from_ln(ln);
        let (k, dq) = self.matrices(&h);
        let Some((l, inverse_l)) = dense::cholesky_and_inverse(&k) else {
            return (f64::NAN, vec![f64::NAN; ln.len()]);
        };
        // K^-1 y = L^-T (L^-1 y).
        let alpha = inverse_l.tr_mul(&(&inverse_l * &self.y));
        let log_det: f64 = l.diagonal().iter().map(|v| v.ln()).sum::<f64>() * 2.0;
        let log_likelihood =
            -0.5 * self.y.dot(&alpha) - 0.5 * log_det - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
        let inverse = dense::spd_inverse_lower(&inverse_l);
        // W = alpha alpha^T - K^-1: d log L / d theta = 0.5 tr(W dK/dtheta).
        let mut grad = vec![0.0; ln.len()];
        for j in 0..n {
            let wjj = alpha[j] * alpha[j] - inverse[(j, j)];
            grad[dims] += wjj * h.scale;
            grad[dims + 1] += wjj * (h.noise - MIN_NOISE);
            for i in j + 1..n {
                // Off-diagonal pairs count twice (W and dK are symmetric).
                let wij = 2.0 * (alpha[i] * alpha[j] - inverse[(i, j)]);
                grad[dims] += wij * k[(i, j)];
                let w_dq = wij * dq[(i, j)];
                for (g, s) in grad.iter_mut().zip(self.pair(i, j)) {
                    *g += w_dq * s;
                }
            }
        }
        for (g, l) in grad.iter_mut().zip(&h.inverse_squared_lengths) {
            *g *= l;
        }
        let (prior, prior_grad) = h.log_prior();
        let grad = grad.iter().zip(prior_grad).map(|(g, p)| -(0.5 * g + p)).collect();
        (-(log_likelihood + prior), grad)
    }
}

/// The kernel parameters that maximize the marginal likelihood times the prior, by L-BFGS in
/// `ln` space from `start`, else from [`Hyper::start`]; that start itself if both fail.
fn fit_hyper(c: &Coordinates, xs: &[Vec<f64>], ys: &[f64], start: &Hyper) -> Hyper {
    let data = FitData::new(c, xs, ys);
    let dims = data.dims;
    let mut lo = vec![LN_INVERSE_SQUARED_LENGTH.0; dims];
    let mut hi = vec![LN_INVERSE_SQUARED_LENGTH.1; dims];
    lo.extend([LN_SCALE.0, LN_NOISE.0]);
    hi.extend([LN_SCALE.1, LN_NOISE.1]);
    let default = Hyper::start(dims);
    for from in [start, &default] {
        let found = minimize(|ln| data.objective(ln), &from.to_ln(), &lo, &hi, FIT_STOP);
        if found.value.is_finite() {
            return Hyper::from_ln(&found.x);
        }
        if from == &default {
            break;
        }
    }
    default
}

#[cfg(test)]
mod tests {
    use super::*;

    fn continuous(d: usize) -> Coordinates {
        Coordinates::plain(vec![false; d])
    }

    #[test]
    fn the_fit_finds_the_relevant_coordinate_and_the_data() {
        // The loss follows coordinate 0 and ignores coordinate 1.
        let xs: Vec<Vec<f64>> = (0..30).map(|k| vec![(k % 6) as f64 / 5.0, ((k * 7) % 13) as f64 / 12.0]).collect();
        let ys: Vec<f64> = xs.iter().map(|x| (4.0 * x[0]).sin()).collect();
        let (m, s) = crate::bayes::stats::mean_and_variance(ys.iter().copied());
        let ys: Vec<f64> = ys.iter().map(|y| (y - m) / s.sqrt()).collect();
        let gp = MaternGp::fit(continuous(2), xs.clone(), ys.clone()).unwrap();
        let l = &gp.hyper().inverse_squared_lengths;
        assert!(l[0] > 10.0 * l[1], "coordinate 0 matters far more: {l:?}");
        assert!(gp.hyper().noise < 0.05, "{:?}", gp.hyper());
        for (x, y) in xs.iter().zip(&ys).take(6) {
            let (mean, var) = gp.predict(x);
            assert!((mean - y).abs() < 0.05 && var < 0.05, "{mean} {var} for {y}");
        }
        // The means at the points at once are the predictions there.
        for (x, at_once) in xs.iter().zip(gp.means_at_points()) {
            assert!((gp.predict(x).0 - at_once).abs() < 1e-9, "{} {at_once}", gp.predict(x).0);
        }
        // Many predictions at once are the predictions one by one, across the blocks.
        let many: Vec<Vec<f64>> = (0..600).map(|k| vec![(k as f64 * 0.013) % 1.0, (k as f64 * 0.029) % 1.0]).collect();
        for (x, (mean, var)) in many.iter().zip(gp.predict_many(&many)) {
            let (m, v) = gp.predict(x);
            assert!((m - mean).abs() < 1e-9 && (v - var).abs() < 1e-9, "{m} {v} against {mean} {var}");
        }
        // Unsure far from the data along coordinate 0's direction than at a data point.
        let (_, far) = gp.predict(&[0.1, 0.5]);
        let (_, near) = gp.predict(&[0.2, 0.5]);
        assert!(far > near, "{far} {near}");
    }

    #[test]
    fn the_fits_gradient_and_the_beliefs_gradient_match_finite_differences() {
        let coordinates = Coordinates::plain(vec![false, false, true]);
        let xs: Vec<Vec<f64>> =
            (0..12).map(|k| vec![(k as f64 * 0.37) % 1.0, (k as f64 * 0.61) % 1.0, (k % 3) as f64]).collect();
        let ys: Vec<f64> = xs.iter().map(|x| x[0] - x[1] * x[1] + 0.3 * x[2] - 0.4).collect();
        let gp = MaternGp::fit(coordinates.clone(), xs.clone(), ys.clone()).unwrap();
        let at = [0.42, 0.17, 1.0];
        let b = gp.belief(&at);
        for j in 0..2 {
            let e = 1e-6;
            let mut up = at;
            up[j] += e;
            let mut down = at;
            down[j] -= e;
            let (mu, vu) = gp.predict(&up);
            let (md, vd) = gp.predict(&down);
            assert!((b.d_mean[j] - (mu - md) / (2.0 * e)).abs() < 1e-5, "mean {j}");
            assert!((b.d_variance[j] - (vu - vd) / (2.0 * e)).abs() < 1e-5, "variance {j}");
        }
        assert_eq!(b.d_mean[2], 0.0);
        let (mean, variance) = gp.predict(&at);
        assert!((b.mean - mean).abs() < 1e-10 && (b.variance - variance).abs() < 1e-10);
    }

    #[test]
    fn repeated_points_and_bad_data() {
        let xs = vec![vec![0.2, 0.3]; 5];
        assert!(MaternGp::fit(continuous(2), xs.clone(), vec![1.0, 1.1, 0.9, 1.0, 1.0]).is_some());
        assert!(MaternGp::fit(continuous(2), xs.clone(), vec![1.0, f64::NAN, 0.9, 1.0, 1.0]).is_none());
        assert!(MaternGp::fit(continuous(2), Vec::new(), Vec::new()).is_none());
        assert!(MaternGp::fit(continuous(3), xs, vec![0.0; 5]).is_none(), "points of another length");
    }

    #[test]
    fn the_fits_objective_has_the_gradient_it_claims() {
        let coordinates = Coordinates::plain(vec![false, true]);
        let xs: Vec<Vec<f64>> = (0..9).map(|k| vec![(k as f64 * 0.29) % 1.0, (k % 2) as f64]).collect();
        let ys: Vec<f64> = xs.iter().map(|x| (3.0 * x[0]).cos() + 0.5 * x[1] - 0.6).collect();
        let data = FitData::new(&coordinates, &xs, &ys);
        let at = [0.3, -1.1, 0.2, -3.0];
        let (_, grad) = data.objective(&at);
        for p in 0..at.len() {
            let e = 1e-6;
            let mut up = at;
            up[p] += e;
            let mut down = at;
            down[p] -= e;
            let numeric = (data.objective(&up).0 - data.objective(&down).0) / (2.0 * e);
            assert!(
                (grad[p] - numeric).abs() < 1e-4 * numeric.abs().max(1.0),
                "parameter {p}: {} vs {numeric}",
                grad[p]
            );
        }
    }
}
