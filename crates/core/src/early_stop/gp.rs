//! A small Gaussian-process regression with fixed hyperparameters, for the dynamic stopper: the
//! kernel matrix is factored once (Cholesky) and predictions are a mean and a variance. Sizes are
//! an island's completed evaluations (tens to hundreds), so the O(n^3) factorisation is cheap.

/// The Matérn 3/2 correlation at distance `d` with length scale `l` (smooth enough for losses,
/// rougher than a Gaussian kernel).
fn matern32(d: f64, l: f64) -> f64 {
    let s = 3f64.sqrt() * d / l;
    (1.0 + s) * (-s).exp()
}

/// A fitted process: a constant prior mean, `variance` times the Matérn 3/2 kernel, plus `noise`
/// on the diagonal.
pub(crate) struct Gp {
    xs: Vec<Vec<f64>>,
    length: f64,
    variance: f64,
    /// Lower Cholesky factor of the kernel matrix, row-major.
    chol: Vec<f64>,
    /// `K^-1 (y - mean)`.
    alpha: Vec<f64>,
    mean: f64,
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt()
}

/// Cholesky factor of the symmetric positive definite `n x n` matrix `a` (row-major), or `None`
/// when it is not positive definite.
fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum();
            if i == j {
                let d = a[i * n + i] - s;
                if d.is_nan() || d <= 0.0 {
                    return None;
                }
                l[i * n + i] = d.sqrt();
            } else {
                l[i * n + j] = (a[i * n + j] - s) / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Solve `L z = b` (forward) for the lower triangular `l`.
fn forward(l: &[f64], n: usize, b: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; n];
    for i in 0..n {
        let s: f64 = (0..i).map(|k| l[i * n + k] * z[k]).sum();
        z[i] = (b[i] - s) / l[i * n + i];
    }
    z
}

/// Solve `L^T x = z` (backward) for the lower triangular `l`.
fn backward(l: &[f64], n: usize, z: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k * n + i] * x[k]).sum();
        x[i] = (z[i] - s) / l[i * n + i];
    }
    x
}

impl Gp {
    /// Fit to points `xs` with values `ys` around the prior `mean`; `None` when the data are
    /// unusable (empty, not finite, or a kernel matrix that is not positive definite).
    pub(crate) fn fit(xs: Vec<Vec<f64>>, ys: &[f64], mean: f64, length: f64, variance: f64, noise: f64) -> Option<Gp> {
        let n = xs.len();
        if n == 0 || !(length > 0.0 && variance > 0.0 && noise >= 0.0) || ys.iter().any(|y| !y.is_finite()) {
            return None;
        }
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                k[i * n + j] = variance * matern32(distance(&xs[i], &xs[j]), length);
            }
            k[i * n + i] += noise;
        }
        let chol = cholesky(&k, n)?;
        let centred: Vec<f64> = ys.iter().map(|y| y - mean).collect();
        let alpha = backward(&chol, n, &forward(&chol, n, &centred));
        Some(Gp { xs, length, variance, chol, alpha, mean })
    }

    /// Predictive mean and variance (of the latent function, without the noise) at `x`.
    pub(crate) fn predict(&self, x: &[f64]) -> (f64, f64) {
        let n = self.xs.len();
        let k: Vec<f64> = self.xs.iter().map(|xi| self.variance * matern32(distance(xi, x), self.length)).collect();
        let mean = self.mean + k.iter().zip(&self.alpha).map(|(a, b)| a * b).sum::<f64>();
        let v = forward(&self.chol, n, &k);
        let variance = (self.variance - v.iter().map(|x| x * x).sum::<f64>()).max(0.0);
        (mean, variance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_its_data_and_returns_to_the_prior_far_away() {
        let xs = vec![vec![0.0], vec![0.5], vec![1.0]];
        let ys = [1.0, 2.0, 0.5];
        let gp = Gp::fit(xs, &ys, 0.0, 0.3, 1.0, 1e-9).unwrap();
        for (x, y) in [(0.0, 1.0), (0.5, 2.0), (1.0, 0.5)] {
            let (m, v) = gp.predict(&[x]);
            assert!((m - y).abs() < 1e-5 && v < 1e-5, "at {x}: {m} {v}");
        }
        let (m, v) = gp.predict(&[50.0]);
        assert!(m.abs() < 1e-9 && (v - 1.0).abs() < 1e-9, "far away: {m} {v}");
    }

    #[test]
    fn cholesky_solves_a_known_system() {
        // [[4, 2], [2, 3]] = L L^T with L = [[2, 0], [1, sqrt 2]].
        let l = cholesky(&[4.0, 2.0, 2.0, 3.0], 2).unwrap();
        assert!((l[0] - 2.0).abs() < 1e-12 && (l[2] - 1.0).abs() < 1e-12 && (l[3] - 2f64.sqrt()).abs() < 1e-12);
        let x = backward(&l, 2, &forward(&l, 2, &[2.0, 1.0]));
        assert!((x[0] - 0.5).abs() < 1e-12 && x[1].abs() < 1e-12, "{x:?}");
        assert!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2).is_none(), "indefinite");
    }
}
