//! The squared-exponential kernel with a length scale per coordinate (automatic relevance
//! determination, as in scikit-optimize's and Optuna's GP samplers): fitted by maximum marginal
//! likelihood, a coordinate the loss barely depends on gets a long scale and stops hiding the
//! trend of the ones it does depend on. friedrich's own kernels have one scale for all.

use friedrich::kernel::Kernel;
use friedrich::{SMatrix, SRowVector, SVector};
use nalgebra::{Dyn, U1, storage::Storage};

/// Shortest length scale used: the fit's multiplicative steps can shrink a scale towards zero (a
/// coordinate the loss changes sharply along), and a zero would divide by zero.
const MIN_LENGTH: f64 = 1e-9;

/// `amplitude * exp(-sum_i ((x_i - y_i) / lengths_i)^2 / 2)`.
#[derive(Debug, Clone, Default)]
pub(crate) struct PerAxisSquaredExp {
    lengths: Vec<f64>,
    amplitude: f64,
}

impl PerAxisSquaredExp {
    /// One length scale per coordinate of a `dims`-dimensional point, all 1; a fit
    /// (`LossModel::fitted`) replaces them by its start, the points' mean distance (friedrich's
    /// start for its isotropic kernel), before it moves them.
    pub(crate) fn new(dims: usize) -> Self {
        PerAxisSquaredExp { lengths: vec![1.0; dims], amplitude: 1.0 }
    }

    /// The fitted length scales, one per coordinate.
    #[cfg(test)]
    pub(crate) fn lengths(&self) -> Vec<f64> {
        self.lengths.iter().map(|l| l.abs()).collect()
    }

    /// Each coordinate's `((x_i - y_i) / l_i)^2`.
    fn scaled_squares<'a, S1: Storage<f64, U1, Dyn>, S2: Storage<f64, U1, Dyn>>(
        &'a self,
        x1: &'a SRowVector<S1>,
        x2: &'a SRowVector<S2>,
    ) -> impl Iterator<Item = f64> + 'a {
        self.lengths.iter().zip(x1.iter().zip(x2.iter())).map(|(l, (a, b))| ((a - b) / l.abs().max(MIN_LENGTH)).powi(2))
    }
}

impl Kernel for PerAxisSquaredExp {
    fn nb_parameters(&self) -> usize {
        self.lengths.len() + 1
    }

    // Scalable: after each gradient step (on the length scales and the amplitude) the fit
    // rescales the amplitude and the noise together by their optimal factor.
    fn is_scalable(&self) -> bool {
        true
    }

    fn rescale(&mut self, scale: f64) {
        self.amplitude *= scale;
    }

    fn kernel<S1: Storage<f64, U1, Dyn>, S2: Storage<f64, U1, Dyn>>(
        &self,
        x1: &SRowVector<S1>,
        x2: &SRowVector<S2>,
    ) -> f64 {
        // Called for every pair of points at every step of the fit: no allocation here.
        self.amplitude.abs() * (-0.5 * self.scaled_squares(x1, x2).sum::<f64>()).exp()
    }

    fn gradient<S1: Storage<f64, U1, Dyn>, S2: Storage<f64, U1, Dyn>>(
        &self,
        x1: &SRowVector<S1>,
        x2: &SRowVector<S2>,
    ) -> Vec<f64> {
        let scaled: Vec<f64> = self.scaled_squares(x1, x2).collect();
        let e = (-0.5 * scaled.iter().sum::<f64>()).exp();
        let k = self.amplitude.abs() * e;
        // d/dl_i of exp(-(d_i / l_i)^2 / 2) is exp(..) (d_i / l_i)^2 / l_i, with l_i's sign.
        let mut grad: Vec<f64> =
            self.lengths.iter().zip(scaled).map(|(l, s)| k * s / l.abs().max(MIN_LENGTH) * l.signum()).collect();
        grad.push(self.amplitude.signum() * e);
        grad
    }

    fn get_parameters(&self) -> Vec<f64> {
        let mut p = self.lengths.clone();
        p.push(self.amplitude);
        p
    }

    fn set_parameters(&mut self, parameters: &[f64]) {
        let (amplitude, lengths) = parameters.split_last().expect("the lengths and the amplitude");
        self.lengths = lengths.to_vec();
        self.amplitude = *amplitude;
    }

    fn heuristic_fit<SM: Storage<f64, Dyn, Dyn>, SV: Storage<f64, Dyn, U1>>(
        &mut self,
        inputs: &SMatrix<SM>,
        outputs: &SVector<SV>,
    ) {
        // friedrich's start for its own kernels (the mean distance between points) is private to
        // the crate: the same computed here.
        let n = inputs.nrows();
        let mut sum = 0.0;
        for i in 0..n {
            for j in i + 1..n {
                sum += (inputs.row(i) - inputs.row(j)).norm();
            }
        }
        let pairs = (n * n.saturating_sub(1) / 2).max(1) as f64;
        let mean_distance = sum / pairs;
        let start = if mean_distance > 0.0 && mean_distance.is_finite() { mean_distance } else { 1.0 };
        self.lengths = vec![start; inputs.ncols()];
        let variance = outputs.variance();
        self.amplitude = if variance > 0.0 && variance.is_finite() { variance } else { 1.0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::RowDVector;

    #[test]
    fn the_gradient_matches_finite_differences() {
        let mut k = PerAxisSquaredExp { lengths: vec![0.3, 1.7, -0.8], amplitude: 1.4 };
        let (x, y) = (RowDVector::from_vec(vec![0.1, 0.9, 0.4]), RowDVector::from_vec(vec![0.5, 0.2, 0.0]));
        let grad = k.gradient(&x, &y);
        let base = k.get_parameters();
        for p in 0..base.len() {
            let h = 1e-6;
            let mut at = base.clone();
            at[p] += h;
            k.set_parameters(&at);
            let up = k.kernel(&x, &y);
            at[p] -= 2.0 * h;
            k.set_parameters(&at);
            let down = k.kernel(&x, &y);
            k.set_parameters(&base);
            let numeric = (up - down) / (2.0 * h);
            assert!((grad[p] - numeric).abs() < 1e-6, "parameter {p}: {} vs {numeric}", grad[p]);
        }
    }

    #[test]
    fn equal_lengths_give_the_isotropic_kernel() {
        use friedrich::kernel::SquaredExp;
        let k = PerAxisSquaredExp { lengths: vec![0.4; 3], amplitude: 2.0 };
        let iso = SquaredExp::new(0.4, 2.0);
        let (x, y) = (RowDVector::from_vec(vec![0.1, 0.9, 0.4]), RowDVector::from_vec(vec![0.5, 0.2, 0.0]));
        assert!((k.kernel(&x, &y) - iso.kernel(&x, &y)).abs() < 1e-12);
        assert!((k.kernel(&x, &x) - 2.0).abs() < 1e-12);
    }
}
