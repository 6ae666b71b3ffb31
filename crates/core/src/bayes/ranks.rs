//! Statistics of ranks, which read the order of losses and not their magnitudes: the normal
//! quantile, the losses' normal scores (a Gaussian copula) and Spearman's rank correlation.

use super::log_ei::log_normal_cdf;
use super::stats::mean_and_variance;

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
        let (log_cdf, slope) = log_normal_cdf(z);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bayes::stats::normal_cdf;

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
