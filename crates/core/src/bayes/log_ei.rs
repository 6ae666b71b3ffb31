//! The logarithm of expected improvement, computed so that it stays finite and informative far
//! from the best point (Ament et al., "Unexpected improvements to expected improvement", NeurIPS
//! 2023; BoTorch's and Optuna's LogEI). Plain EI underflows to zero a few standard deviations
//! away, leaving an optimizer of the acquisition a flat landscape to climb; its logarithm keeps
//! the slope.
//!
//! For a normal belief with mean `mu` and deviation `sd`, minimizing, EI = sd * h(z) with
//! z = (best - mu) / sd and h(z) = z Phi(z) + phi(z).

use super::stats::{normal_cdf, normal_log_pdf};

/// Below this z, h is computed from its asymptotic series: the direct form cancels.
const SERIES_BELOW: f64 = -6.0;
/// Terms of the series used.
const TERMS: usize = 16;

/// log(h(z)) and its derivative d/dz, finite for every finite z.
pub(crate) fn log_h(z: f64) -> (f64, f64) {
    let log_phi = normal_log_pdf(z);
    if z >= SERIES_BELOW {
        let cdf = normal_cdf(z);
        let phi = log_phi.exp();
        let h = z * cdf + phi;
        // h'(z) = Phi(z).
        (h.ln(), cdf / h)
    } else {
        // With w = 1/z^2 and t_k = (-1)^k (2k - 1)!! w^k (t_0 = 1), as z -> -inf:
        // Phi(z) / phi(z) = -(t_0 + t_1 + ...) / z and h(z) / phi(z) = -(t_1 + t_2 + ...).
        // The terms shrink while (2k + 1) w < 1; sixteen of them keep the relative error below
        // 1e-5 from z = -6 on.
        let w = 1.0 / (z * z);
        let mut term = 1.0;
        let mut mills = 0.0;
        let mut tail = 0.0;
        for k in 0..TERMS {
            mills += term;
            if k > 0 {
                tail += term;
            }
            term *= -((2 * k + 1) as f64) * w;
        }
        let series = -(tail + term);
        let ratio = -mills / z;
        (log_phi + series.ln(), ratio / series)
    }
}

/// log Phi(z), the log of the standard normal's distribution function, with its derivative
/// phi(z) / Phi(z), finite for every finite z (the probability that a constraint holds, where the
/// belief puts it many deviations beyond its bound, keeps a slope to climb).
pub(crate) fn log_normal_cdf(z: f64) -> (f64, f64) {
    let log_phi = normal_log_pdf(z);
    if z >= SERIES_BELOW {
        let cdf = normal_cdf(z);
        (cdf.ln(), log_phi.exp() / cdf)
    } else {
        // Phi(z) / phi(z) = -(t_0 + t_1 + ...) / z, the series of `log_h`.
        let w = 1.0 / (z * z);
        let (mut term, mut mills) = (1.0, 0.0);
        for k in 0..TERMS {
            mills += term;
            term *= -((2 * k + 1) as f64) * w;
        }
        (log_phi + (mills / -z).ln(), -z / mills)
    }
}

/// log EI below `best` for a belief (`mean`, `sd`), with its derivatives by the mean and by the
/// deviation. A deviation of zero gives the limit: the log of the plain improvement, or minus
/// infinity where there is none.
pub(crate) fn log_expected_improvement(mean: f64, sd: f64, best: f64) -> (f64, f64, f64) {
    // A deviation that is zero or NaN.
    if sd.is_nan() || sd <= 0.0 {
        let gain = best - mean;
        return if gain > 0.0 { (gain.ln(), -1.0 / gain, 0.0) } else { (f64::NEG_INFINITY, 0.0, 0.0) };
    }
    let z = (best - mean) / sd;
    let (log_h, slope) = log_h(z);
    // d z / d mean = -1 / sd; d z / d sd = -z / sd.
    (sd.ln() + log_h, -slope / sd, 1.0 / sd - slope * z / sd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    fn h_direct(z: f64) -> f64 {
        let cdf = crate::bayes::stats::normal_cdf(z);
        z * cdf + (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
    }

    #[test]
    fn matches_the_direct_form_where_that_is_accurate_and_joins_the_series_smoothly() {
        for z in [-5.9, -3.0, -1.0, 0.0, 0.5, 2.0, 8.0] {
            let (l, _) = log_h(z);
            assert!((l - h_direct(z).ln()).abs() < 1e-10, "z = {z}: {l} vs {}", h_direct(z).ln());
        }
        // Across the switch the value and the slope barely move.
        let (below, slope_below) = log_h(SERIES_BELOW - 1e-9);
        let (above, slope_above) = log_h(SERIES_BELOW + 1e-9);
        assert!((below - above).abs() < 1e-5, "{below} vs {above}");
        assert!((slope_below - slope_above).abs() / slope_above.abs() < 1e-4, "{slope_below} vs {slope_above}");
    }

    #[test]
    fn stays_finite_and_decreasing_far_below_where_plain_ei_underflows() {
        let mut last = f64::INFINITY;
        for z in [-10.0, -40.0, -100.0, -1e3, -1e6] {
            let (l, slope) = log_h(z);
            assert!(l.is_finite() && slope > 0.0 && l < last, "z = {z}: {l} {slope}");
            last = l;
        }
        assert_eq!(h_direct(-40.0), 0.0, "the plain form underflows here");
    }

    #[test]
    fn the_derivatives_match_finite_differences() {
        for (mean, sd, best) in [(0.3, 0.5, 0.0), (-1.0, 0.2, 0.0), (4.0, 0.3, 0.0), (0.0, 2.0, 1.0)] {
            let (_, d_mean, d_sd) = log_expected_improvement(mean, sd, best);
            let e = 1e-6;
            let num_mean = (log_expected_improvement(mean + e, sd, best).0
                - log_expected_improvement(mean - e, sd, best).0)
                / (2.0 * e);
            let num_sd = (log_expected_improvement(mean, sd + e, best).0
                - log_expected_improvement(mean, sd - e, best).0)
                / (2.0 * e);
            assert!((d_mean - num_mean).abs() < 1e-5 * num_mean.abs().max(1.0), "{d_mean} vs {num_mean}");
            assert!((d_sd - num_sd).abs() < 1e-5 * num_sd.abs().max(1.0), "{d_sd} vs {num_sd}");
        }
    }

    #[test]
    fn the_log_normal_cdf_is_accurate_and_smooth_across_its_series() {
        for z in [-40.0, -8.0, -6.5, -5.5, -2.0, 0.0, 1.5, 8.0] {
            let (v, d) = log_normal_cdf(z);
            let direct = crate::bayes::stats::normal_cdf(z).ln();
            if z > -30.0 {
                assert!((v - direct).abs() < 1e-5 * direct.abs().max(1.0), "{z}: {v} vs {direct}");
            }
            let h = 1e-6;
            let numeric = (log_normal_cdf(z + h).0 - log_normal_cdf(z - h).0) / (2.0 * h);
            assert!((d - numeric).abs() < 1e-4 * d.abs().max(1.0), "{z}: {d} vs {numeric}");
        }
        assert!(log_normal_cdf(-40.0).0.is_finite() && log_normal_cdf(-40.0).0 < log_normal_cdf(-39.0).0);
        let (below, above) = (log_normal_cdf(-6.0 - 1e-12), log_normal_cdf(-6.0));
        assert!((below.0 - above.0).abs() < 1e-6 && (below.1 - above.1).abs() < 1e-5, "{below:?} {above:?}");
    }

    #[test]
    fn a_belief_without_spread_promises_its_gain() {
        assert_eq!(log_expected_improvement(1.0, 0.0, 3.0).0, 2.0f64.ln());
        assert_eq!(log_expected_improvement(3.0, 0.0, 1.0).0, f64::NEG_INFINITY);
    }
}
