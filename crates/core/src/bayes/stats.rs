//! The statistics the model-based propagators share, spelled once: the standard normal
//! distribution (expected improvement, as its logarithm, is `log_ei`), and the mean, variance and
//! standardization of losses before a model fits them.

use std::f64::consts::{PI, SQRT_2};

/// The standard normal's distribution function Phi(z).
pub(crate) fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / SQRT_2)
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
