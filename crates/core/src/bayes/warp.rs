//! Output warping: the losses a process is fitted to, made closer to normal by a Yeo-Johnson power
//! transform (Yeo and Johnson 2000) whose exponent is fitted by maximum likelihood, as HEBO (the
//! NeurIPS 2020 black-box challenge's winner) does before fitting its process. A loss whose few
//! bad values are orders of magnitude above the good ones (an ill-conditioned ellipsoid, a
//! diverged training) otherwise makes the standardized good ones all look alike to the process,
//! which then has nothing to tell apart where the search goes on. The transform is increasing
//! whatever its exponent, so the best loss stays the best and expected improvement keeps its
//! meaning in the warped losses.

use super::stats::{mean_and_variance, standardized};

/// The exponents searched: the grid's range and step, then a golden-section search around the
/// grid's best (the likelihood of real data has one maximum there or at a bound).
const LAMBDA_RANGE: (f64, f64) = (-3.0, 4.0);
const GRID_STEP: f64 = 0.25;
const GOLDEN_ROUNDS: usize = 30;

/// The Yeo-Johnson transform of `y` with exponent `lambda`: `((y + 1)^lambda - 1) / lambda` for
/// `y >= 0`, `-((1 - y)^(2 - lambda) - 1) / (2 - lambda)` below (logarithms at 0 and 2).
pub(crate) fn yeo_johnson(y: f64, lambda: f64) -> f64 {
    const EPS: f64 = 1e-8;
    if y >= 0.0 {
        if lambda.abs() < EPS { y.ln_1p() } else { ((lambda * y.ln_1p()).exp() - 1.0) / lambda }
    } else if (lambda - 2.0).abs() < EPS {
        -(-y).ln_1p()
    } else {
        -(((2.0 - lambda) * (-y).ln_1p()).exp() - 1.0) / (2.0 - lambda)
    }
}

/// The profile log-likelihood of `lambda` for `ys` under a normal model of the transformed values
/// (the transform's Jacobian included), up to a constant.
fn log_likelihood(ys: &[f64], lambda: f64) -> f64 {
    let transformed: Vec<f64> = ys.iter().map(|&y| yeo_johnson(y, lambda)).collect();
    let (_, variance) = mean_and_variance(transformed.iter().copied());
    if !(variance > 0.0 && variance.is_finite()) {
        return f64::NEG_INFINITY;
    }
    let jacobian: f64 = ys.iter().map(|&y| y.signum() * y.abs().ln_1p()).sum();
    -0.5 * ys.len() as f64 * variance.ln() + (lambda - 1.0) * jacobian
}

/// The exponent of largest likelihood for `ys` in [`LAMBDA_RANGE`].
pub(crate) fn fitted_lambda(ys: &[f64]) -> f64 {
    let ll = |l: f64| log_likelihood(ys, l);
    let steps = ((LAMBDA_RANGE.1 - LAMBDA_RANGE.0) / GRID_STEP).round() as usize;
    let grid = (0..=steps).map(|k| LAMBDA_RANGE.0 + k as f64 * GRID_STEP);
    let best = grid.map(|l| (l, ll(l))).fold((1.0, ll(1.0)), |b, c| if c.1 > b.1 { c } else { b }).0;
    // Golden-section search in the grid cell on either side of its best.
    let (mut lo, mut hi) = ((best - GRID_STEP).max(LAMBDA_RANGE.0), (best + GRID_STEP).min(LAMBDA_RANGE.1));
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..GOLDEN_ROUNDS {
        let (a, b) = (hi - ratio * (hi - lo), lo + ratio * (hi - lo));
        if ll(a) >= ll(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    let found = (lo + hi) / 2.0;
    if ll(found) >= ll(best) { found } else { best }
}

/// `ys` standardized, warped by the Yeo-Johnson transform of largest likelihood, and standardized
/// again: what the process is fitted to. The exponent compresses the side with the long tail (an
/// exponent below 1 pulls a few huge losses in, so that the good ones are told apart again) and
/// leaves losses close to normal nearly as they were. Never reverses the order (losses that differ
/// beyond what a float resolves after the warp may tie).
pub(crate) fn warped(ys: &[f64]) -> Vec<f64> {
    let z = standardized(ys);
    let lambda = fitted_lambda(&z);
    let w: Vec<f64> = z.iter().map(|&y| yeo_johnson(y, lambda)).collect();
    if w.iter().all(|v| v.is_finite()) { standardized(&w) } else { z }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;
    use crate::space::standard_normal;

    fn skewness(ys: &[f64]) -> f64 {
        let (mean, variance) = mean_and_variance(ys.iter().copied());
        ys.iter().map(|y| ((y - mean) / variance.sqrt()).powi(3)).sum::<f64>() / ys.len() as f64
    }

    #[test]
    fn the_transform_is_increasing_and_continuous_for_every_exponent() {
        for lambda in [-3.0, -1.0, 0.0, 1e-9, 0.5, 1.0, 2.0 - 1e-9, 2.0, 3.0, 4.0] {
            let ys: Vec<f64> = (-400..=400).map(|k| f64::from(k) / 40.0).collect();
            let t: Vec<f64> = ys.iter().map(|&y| yeo_johnson(y, lambda)).collect();
            assert!(t.windows(2).all(|w| w[0] < w[1]), "lambda {lambda}: not increasing");
            assert_eq!(yeo_johnson(0.0, lambda), 0.0);
            let near = yeo_johnson(1e-12, lambda) - yeo_johnson(-1e-12, lambda);
            assert!(near.abs() < 1e-10, "lambda {lambda}: a jump at 0");
        }
        // At 1 the transform is the identity.
        assert!((yeo_johnson(3.5, 1.0) - 3.5).abs() < 1e-12 && (yeo_johnson(-2.0, 1.0) + 2.0).abs() < 1e-12);
    }

    #[test]
    fn normal_data_keeps_an_exponent_near_one_and_a_long_tail_is_pulled_in() {
        let mut rng = worker_rng(4, 0);
        let normal: Vec<f64> = (0..400).map(|_| standard_normal(&mut rng)).collect();
        let lambda = fitted_lambda(&normal);
        assert!((lambda - 1.0).abs() < 0.3, "normal data: lambda {lambda}");
        // A heavy right tail (log-normal, as the losses of an ill-conditioned function are).
        let heavy: Vec<f64> = normal.iter().map(|z| (2.0 * z).exp()).collect();
        let before = skewness(&standardized(&heavy));
        let after = skewness(&warped(&heavy));
        assert!(before > 10.0 && after.abs() < before / 5.0, "skewness {before} before, {after} after");
        assert!(fitted_lambda(&standardized(&heavy)) < 0.0);
        // Normal losses are barely warped.
        let w = warped(&normal);
        let s = standardized(&normal);
        let most = w.iter().zip(&s).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(most < 0.5, "normal losses moved by up to {most} standard deviations");
    }

    #[test]
    fn warping_keeps_the_order_and_degenerate_data_stays_finite() {
        let mut rng = worker_rng(5, 0);
        let ys: Vec<f64> = (0..60).map(|k| 10f64.powf(6.0 * standard_normal(&mut rng)) + f64::from(k % 3)).collect();
        let w = warped(&ys);
        for i in 0..ys.len() {
            for j in 0..ys.len() {
                assert!(ys[i] >= ys[j] || w[i] <= w[j], "{i} {j}: the order reversed");
                assert!(ys[i] != ys[j] || w[i] == w[j], "{i} {j}: a tie broken");
            }
        }
        assert_eq!(warped(&[2.0, 2.0, 2.0]), vec![0.0; 3]);
        assert!(warped(&[1e300, -1e300, 0.0, 5.0]).iter().all(|v| v.is_finite()));
    }
}
