//! The statistics the model-based propagators share, spelled once: the standard normal
//! distribution (expected improvement, as its logarithm, is `log_ei`), and the mean, variance and
//! standardization of losses before a model fits them.

use std::f64::consts::{PI, SQRT_2};

/// The standard normal's distribution function Phi(z).
pub(crate) fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / SQRT_2)
}

/// The standard normal's quantile function, the inverse of [`normal_cdf`], for `p` in (0, 1):
/// Newton's steps on log Phi (smooth and concave, so that they converge in the far tail too) from
/// the logistic distribution's quantile; the upper half by symmetry.
pub(crate) fn normal_quantile(p: f64) -> f64 {
    if p > 0.5 {
        return -normal_quantile(1.0 - p);
    }
    let target = p.ln();
    let mut z = (p / (1.0 - p)).ln() / 1.702;
    for _ in 0..100 {
        let (log_cdf, slope) = crate::bayes::log_ei::log_normal_cdf(z);
        let step = (log_cdf - target) / slope;
        z -= step;
        if step.is_nan() || step.abs() <= 1e-13 {
            break;
        }
    }
    z
}

/// The normal scores of `ys`: each one's rank among them (ties sharing their mean rank) as the
/// standard normal's quantile of (rank + 1/2) / n. A monotone map of the losses that spaces their
/// order evenly whatever their magnitudes (a Gaussian copula, as in Salinas et al. 2020).
pub(crate) fn normal_scores(ys: &[f64]) -> Vec<f64> {
    let n = ys.len() as f64;
    ranks(ys).into_iter().map(|rank| normal_quantile((rank + 0.5) / n)).collect()
}

/// Each of `ys`'s rank among them from 0, ties sharing their mean rank.
fn ranks(ys: &[f64]) -> Vec<f64> {
    let n = ys.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| ys[a].total_cmp(&ys[b]));
    let mut ranks = vec![0.0; n];
    let mut start = 0;
    while start < n {
        let end = (start..n).find(|&k| ys[order[k]] != ys[order[start]]).unwrap_or(n);
        for &k in &order[start..end] {
            ranks[k] = (start + end - 1) as f64 / 2.0;
        }
        start = end;
    }
    ranks
}

/// Spearman's rank correlation of `a` and `b` (paired): the correlation of their ranks, in
/// [-1, 1]; 0 where either has no spread.
pub(crate) fn rank_correlation(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let (ma, va) = mean_and_variance(ra.iter().copied());
    let (mb, vb) = mean_and_variance(rb.iter().copied());
    if !(va > 0.0 && vb > 0.0) {
        return 0.0;
    }
    let covariance = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum::<f64>() / ra.len() as f64;
    covariance / (va * vb).sqrt()
}

/// log phi(z), finite where phi(z) underflows.
pub(crate) fn normal_log_pdf(z: f64) -> f64 {
    -0.5 * z * z - 0.5 * (2.0 * PI).ln()
}

/// The mean and the (population) variance of `ys`, what a model's prior and standardization
/// start from; NaN for none.
pub(crate) fn mean_and_variance(ys: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = ys.clone().count() as f64;
    let mean = ys.clone().sum::<f64>() / n;
    (mean, ys.map(|y| (y - mean).powi(2)).sum::<f64>() / n)
}

/// `ys` standardized (mean 0, standard deviation 1; all equal: all 0), after dividing by the
/// largest magnitude, so that the variance of values beyond about 1e154 does not overflow (which
/// would leave a model nothing to learn). What the Matérn models are fitted to.
pub(crate) fn standardized(ys: &[f64]) -> Vec<f64> {
    let magnitude = ys.iter().map(|y| y.abs()).fold(0.0, f64::max);
    let magnitude = if magnitude > 0.0 { magnitude } else { 1.0 };
    let (mean, variance) = mean_and_variance(ys.iter().map(|y| y / magnitude));
    let sd = if variance > 0.0 { variance.sqrt() } else { 1.0 };
    ys.iter().map(|y| (y / magnitude - mean) / sd).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_inverts_the_distribution_function() {
        for p in [1e-9, 0.0025, 0.1, 0.5, 0.8, 0.9975] {
            let back = normal_cdf(normal_quantile(p));
            assert!((back - p).abs() < 1e-12 * p.min(1.0 - p), "{p}: {back}");
        }
        assert!((normal_quantile(0.975) - 1.959963984540054).abs() < 1e-9);
    }

    #[test]
    fn rank_correlation_reads_the_order_only() {
        let a = [1.0, 2.0, 3.0, 4.0];
        assert!((rank_correlation(&a, &[10.0, 1e3, 1e4, 1e9]) - 1.0).abs() < 1e-12);
        assert!((rank_correlation(&a, &[4.0, 3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(rank_correlation(&a, &[1.0; 4]), 0.0);
    }

    #[test]
    fn normal_scores_follow_the_order_and_share_ties() {
        let s = normal_scores(&[5.0, 1e9, -1.0, 5.0]);
        assert!(s[2] < s[0] && s[0] == s[3] && s[3] < s[1], "{s:?}");
        assert!((s[0] - 0.0).abs() < 1e-12, "the middle two ranks' mean is the median: {s:?}");
        assert!((s[2] + s[1]).abs() < 1e-12, "symmetric: {s:?}");
    }
}
