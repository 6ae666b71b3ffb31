//! The dynamic early stopper's prior over a search space, on the `friedrich` crate: the
//! coordinates a configuration has in it, and a Gaussian process with fixed hyperparameters
//! (Matérn 3/2). (The GP propagator's older squared-exponential model lived here too until it was
//! retired on 2026-11-28; the propagator's model is crate::bayes.)

use friedrich::gaussian_process::GaussianProcess;
use friedrich::kernel::{Kernel, Matern1};
use friedrich::prior::ConstantPrior;

use crate::propagator::unit_coordinate;
use crate::space::{Domain, SearchSpace, Value};

/// Where a pivot of a covariance's Cholesky factor is zero, negative or NaN (duplicate points, a
/// kernel too wide), nalgebra puts the square root of this in its place, so that any data give a
/// model instead of the crate panicking.
const CHOLESKY_EPSILON: f64 = 1e-9;

/// `values` as a point of the unit cube: each float and int on its unit interval by the crate's one
/// rule (`propagator::unit_coordinate`: log floats in `ln`, an int at the centre of its bin), each
/// categorical as one coordinate per choice.
pub(crate) fn encode(space: &SearchSpace, values: &[Value]) -> Vec<f64> {
    let mut point = Vec::with_capacity(values.len());
    for (p, v) in space.params().iter().zip(values) {
        match (&p.domain, *v) {
            (Domain::Categorical { choices }, Value::Cat(c)) => {
                point.extend((0..choices.len()).map(|i| if i == c as usize { 1.0 } else { 0.0 }))
            }
            // Values that do not match their domain are refused where they enter; neutral
            // coordinates (as many as a matching value has) keep this total and every point of a
            // space the same length, which the models need.
            (Domain::Categorical { choices }, _) => {
                point.extend(std::iter::repeat_n(1.0 / choices.len() as f64, choices.len()))
            }
            (Domain::Float { .. }, Value::Float(_)) | (Domain::Int { .. }, Value::Int(_)) => {
                point.push(unit_coordinate(&p.domain, v).filter(|u| u.is_finite()).unwrap_or(0.5))
            }
            _ => point.push(0.5),
        }
    }
    point
}

/// A Gaussian process fitted to points in model coordinates and their losses.
pub(crate) struct LossModel<K: Kernel> {
    gp: GaussianProcess<K, ConstantPrior>,
}

/// Whether `xs` and `ys` can make a model: as many points as values, at least one, all finite.
fn usable(xs: &[Vec<f64>], ys: &[f64]) -> bool {
    !xs.is_empty() && xs.len() == ys.len() && ys.iter().chain(xs.iter().flatten()).all(|v| v.is_finite())
}

impl LossModel<Matern1> {
    /// A process around the prior `mean` with the Matérn 3/2 kernel of `length` and `variance`,
    /// and `noise` (a variance) on every point; `None` for unusable data or settings (a variance
    /// that overflowed included: losses near `f64::MAX`).
    pub(crate) fn fixed(
        xs: Vec<Vec<f64>>,
        ys: Vec<f64>,
        mean: f64,
        length: f64,
        variance: f64,
        noise: f64,
    ) -> Option<Self> {
        let finite = mean.is_finite() && length.is_finite() && variance.is_finite() && noise.is_finite();
        if !(usable(&xs, &ys) && finite && length > 0.0 && variance > 0.0 && noise >= 0.0) {
            return None;
        }
        let gp = GaussianProcess::builder(xs, ys)
            .set_prior(ConstantPrior::new(mean))
            .set_kernel(Matern1::new(length, variance))
            // The crate adds the square of its noise to the diagonal.
            .set_noise(noise.sqrt())
            .set_cholesky_epsilon(Some(CHOLESKY_EPSILON))
            .train();
        Some(LossModel { gp })
    }
}

impl<K: Kernel> LossModel<K> {
    /// The predictive mean and variance (of the loss itself, without the noise) at each point.
    pub(crate) fn predict(&self, xs: &[Vec<f64>]) -> Vec<(f64, f64)> {
        let (mean, variance) = self.gp.predict_mean_variance(&xs.to_vec());
        mean.into_iter().zip(variance.into_iter().map(|v| v.max(0.0))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoding_puts_every_value_in_the_unit_cube() {
        let space = SearchSpace::builder()
            .log_float("lr", 1e-4, 1e-2)
            .int("n", 2, 10)
            .categorical("act", &["a", "b", "c"])
            .build()
            .unwrap();
        let x = encode(&space, &[Value::Float(1e-3), Value::Int(10), Value::Cat(2)]);
        assert_eq!(x.len(), 5);
        // The int at the centre of its bin (the last of 9), as every model of the crate sees it.
        assert!((x[0] - 0.5).abs() < 1e-12 && (x[1] - 8.5 / 9.0).abs() < 1e-12 && x[2..] == [0.0, 0.0, 1.0], "{x:?}");
        // A mistyped value keeps the point's length.
        let y = encode(&space, &[Value::Float(1e-3), Value::Int(10), Value::Float(1.0)]);
        assert_eq!(y.len(), 5, "{y:?}");
    }

    #[test]
    fn a_fixed_process_interpolates_its_data_and_returns_to_the_prior_far_away() {
        let xs = vec![vec![0.0], vec![0.5], vec![1.0]];
        let model = LossModel::fixed(xs, vec![1.0, 2.0, 0.5], 0.0, 0.3, 1.0, 1e-9).unwrap();
        let at = model.predict(&[vec![0.0], vec![0.5], vec![1.0], vec![50.0]]);
        for ((m, v), y) in at.iter().zip([1.0, 2.0, 0.5]) {
            assert!((m - y).abs() < 1e-4 && *v < 1e-4, "{m} {v} for {y}");
        }
        let (m, v) = at[3];
        assert!(m.abs() < 1e-9 && (v - 1.0).abs() < 1e-9, "far away: {m} {v}");
        // `noise` is a variance: one point at 1 with prior 0, variance 1 and noise 0.25 has the
        // posterior mean 1 / 1.25 = 0.8 there (0.94 if the noise were taken as a deviation).
        let model = LossModel::fixed(vec![vec![0.0]], vec![1.0], 0.0, 0.3, 1.0, 0.25).unwrap();
        let (m, _) = model.predict(&[vec![0.0]])[0];
        assert!((m - 0.8).abs() < 1e-9, "{m}");
    }

    #[test]
    fn duplicate_points_and_bad_data() {
        let xs = vec![vec![0.2, 0.3]; 4];
        let fixed = |xs: Vec<Vec<f64>>, ys: Vec<f64>| LossModel::fixed(xs, ys, 0.0, 0.3, 1.0, 0.1);
        assert!(fixed(xs.clone(), vec![1.0, 1.1, 0.9, 1.0]).is_some(), "duplicates are fine");
        assert!(fixed(xs.clone(), vec![1.0, f64::NAN, 0.9, 1.0]).is_none());
        assert!(fixed(Vec::new(), Vec::new()).is_none());
        assert!(LossModel::fixed(xs.clone(), vec![1.0; 4], 0.0, 0.0, 1.0, 0.1).is_none(), "zero length scale");
        assert!(LossModel::fixed(xs, vec![1.0; 4], 0.0, 0.3, f64::INFINITY, 0.1).is_none(), "overflowed variance");
    }
}
