//! A quadratic model of the loss, fitted in CMA-ES's own coordinates, whose minimum CMA-ES may
//! propose as a child (after Hansen's lq-CMA-ES, "A global surrogate assisted CMA-ES", GECCO 2019,
//! which fits such a model to the latest evaluations and trusts it while it ranks new ones right).
//!
//! Why: CMA-ES learns an ill-conditioned quadratic's shape one generation at a time (on BBOB's
//! rotated ellipsoid in 10-D, thousands of evaluations), while a least-squares fit of a full
//! quadratic to 1.5 times as many points as it has terms knows the shape, and its minimum, at
//! once. The model only proposes where it has just ranked the latest evaluations (which it was not
//! fitted to) nearly as they came out (Kendall's tau at least [`TRUSTED_TAU`]), and never further
//! from the mean than the update lets an injected step go: on a landscape it cannot describe
//! (multimodal, plateaus) it stays silent and CMA-ES breeds alone.
//!
//! Coordinates: `z = D^-1 B^T (x - m) / sigma`, the sampling distribution made round, so the
//! model's scale does not depend on how far the strategy has converged.

use nalgebra::{DMatrix, DVector};

use crate::propagator::normalized::symmetric_eigen;

/// The least Kendall's tau between the model's predictions and the losses of the evaluations held
/// out of its fit at which its minimum is proposed (lq-CMA-ES's threshold).
pub(crate) const TRUSTED_TAU: f64 = 0.85;

/// A model is fitted to at least this many points per term.
const POINTS_PER_TERM: f64 = 1.5;

/// The terms of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Terms {
    /// A constant, a linear and a square term per coordinate.
    Diagonal,
    /// A constant, the linear terms and every product of two coordinates.
    Full,
}

impl Terms {
    fn count(self, n: usize) -> usize {
        match self {
            Terms::Diagonal => 1 + 2 * n,
            Terms::Full => 1 + n + n * (n + 1) / 2,
        }
    }

    /// The richest terms `points` points in `n` coordinates support.
    fn supported(n: usize, points: usize) -> Option<Terms> {
        [Terms::Full, Terms::Diagonal].into_iter().find(|t| points as f64 >= POINTS_PER_TERM * t.count(n) as f64)
    }

    fn features(self, z: &[f64]) -> Vec<f64> {
        let n = z.len();
        let mut f = Vec::with_capacity(self.count(n));
        f.push(1.0);
        f.extend_from_slice(z);
        match self {
            Terms::Diagonal => f.extend(z.iter().map(|v| v * v)),
            Terms::Full => (0..n).for_each(|i| f.extend((i..n).map(|j| z[i] * z[j]))),
        }
        f
    }
}

/// The most points a model of `n` coordinates is fitted to: twice the full model's terms, the
/// latest evaluations, so that it describes where the search is now.
pub(crate) fn fitting_window(n: usize) -> usize {
    2 * Terms::Full.count(n)
}

/// A fitted quadratic `c + g^T z + z^T A z / 2`.
#[derive(Debug, Clone)]
pub(crate) struct Quadratic {
    terms: Terms,
    coeffs: Vec<f64>,
}

impl Quadratic {
    /// The least-squares fit of the richest model `points` (`(z, loss)`) support, or `None`: too
    /// few points, losses all equal or not finite.
    pub(crate) fn fit(points: &[(Vec<f64>, f64)]) -> Option<Quadratic> {
        let n = points.first()?.0.len();
        let terms = Terms::supported(n, points.len())?;
        let (rows, cols) = (points.len(), terms.count(n));
        // Standardized losses: the singular-value cut-off below is then relative.
        let mean = points.iter().map(|p| p.1).sum::<f64>() / rows as f64;
        let sd = (points.iter().map(|p| (p.1 - mean).powi(2)).sum::<f64>() / rows as f64).sqrt();
        if !(sd.is_finite() && sd > 0.0) {
            return None;
        }
        let x = DMatrix::from_row_iterator(rows, cols, points.iter().flat_map(|(z, _)| terms.features(z)));
        let y = DVector::from_iterator(rows, points.iter().map(|p| (p.1 - mean) / sd));
        let svd = x.svd(true, true);
        let cut = svd.singular_values.max() * 1e-10;
        let beta = svd.solve(&y, cut).ok()?;
        let mut coeffs: Vec<f64> = beta.iter().map(|b| b * sd).collect();
        coeffs[0] += mean;
        coeffs.iter().all(|c| c.is_finite()).then_some(Quadratic { terms, coeffs })
    }

    /// The model's loss at `z`.
    pub(crate) fn predict(&self, z: &[f64]) -> f64 {
        self.terms.features(z).iter().zip(&self.coeffs).map(|(f, c)| f * c).sum()
    }

    /// The gradient at 0 and the Hessian (row-major).
    fn gradient_and_hessian(&self, n: usize) -> (Vec<f64>, Vec<f64>) {
        let gradient = self.coeffs[1..=n].to_vec();
        let mut hessian = vec![0.0; n * n];
        let squares = &self.coeffs[1 + n..];
        match self.terms {
            Terms::Diagonal => (0..n).for_each(|i| hessian[i * n + i] = 2.0 * squares[i]),
            Terms::Full => {
                let mut k = 0;
                for i in 0..n {
                    for j in i..n {
                        if i == j {
                            hessian[i * n + i] = 2.0 * squares[k];
                        } else {
                            hessian[i * n + j] = squares[k];
                            hessian[j * n + i] = squares[k];
                        }
                        k += 1;
                    }
                }
            }
        }
        (gradient, hessian)
    }

    /// The model's lowest point within distance `radius` of 0 in `n` coordinates (the trust-region
    /// step: the Newton step where the model is convex and that step is inside, otherwise the point
    /// on the sphere `-(A + mu I)^-1 g` with `mu` found by bisection). `None` in the "hard case"
    /// (a model whose gradient has no part along a direction of negative curvature: no unique
    /// answer) and for a flat model.
    pub(crate) fn minimum_within(&self, n: usize, radius: f64) -> Option<Vec<f64>> {
        let (gradient, hessian) = self.gradient_and_hessian(n);
        let (curvatures, basis) = symmetric_eigen(&hessian, n);
        // The gradient in the eigenbasis (the basis holds eigenvectors as columns).
        let g: Vec<f64> = (0..n).map(|k| (0..n).map(|i| basis[i * n + k] * gradient[i]).sum()).collect();
        let length = |mu: f64| g.iter().zip(&curvatures).map(|(g, c)| (g / (c + mu)).powi(2)).sum::<f64>().sqrt();
        let lowest = curvatures.iter().copied().fold(f64::INFINITY, f64::min);
        let scale = curvatures.iter().map(|c| c.abs()).fold(0.0, f64::max);
        if scale.is_nan() || scale <= 0.0 || g.iter().all(|v| *v == 0.0) {
            return None;
        }
        let mu = if lowest > 1e-12 * scale && length(0.0) <= radius {
            0.0
        } else {
            // The length falls from +inf just above `floor` to 0: bisect for `radius`.
            let floor = (-lowest).max(0.0);
            let mut lo = floor + 1e-12 * scale;
            if length(lo) < radius {
                return None;
            }
            let mut hi = floor + scale.max(1e-300);
            while length(hi) > radius {
                hi = floor + 2.0 * (hi - floor);
            }
            for _ in 0..100 {
                let mid = 0.5 * (lo + hi);
                if length(mid) > radius { lo = mid } else { hi = mid }
            }
            hi
        };
        let step: Vec<f64> = g.iter().zip(&curvatures).map(|(g, c)| -g / (c + mu)).collect();
        let z: Vec<f64> = (0..n).map(|i| (0..n).map(|k| basis[i * n + k] * step[k]).sum()).collect();
        z.iter().all(|v| v.is_finite()).then_some(z)
    }
}

/// Kendall's tau between `a` and `b` (paired): the share of concordant pairs minus that of
/// discordant ones; a tie in either counts as neither.
pub(crate) fn kendall_tau(a: &[f64], b: &[f64]) -> f64 {
    let pairs = a.len() * a.len().saturating_sub(1) / 2;
    if pairs == 0 {
        return 0.0;
    }
    let mut score = 0.0;
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            score += ((a[i] - a[j]) * (b[i] - b[j])).signum() * f64::from(a[i] != a[j] && b[i] != b[j]);
        }
    }
    score / pairs as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;
    use crate::space::standard_normal;

    /// `count` points around 0 in `n` coordinates with `loss`.
    fn points(n: usize, count: usize, loss: impl Fn(&[f64]) -> f64) -> Vec<(Vec<f64>, f64)> {
        let mut rng = worker_rng(1, 0);
        (0..count)
            .map(|_| {
                let z: Vec<f64> = (0..n).map(|_| standard_normal(&mut rng)).collect();
                let l = loss(&z);
                (z, l)
            })
            .collect()
    }

    /// A rotated ellipsoid of condition 1e6 with its minimum (value 3) at `at`.
    fn ellipsoid(at: Vec<f64>) -> impl Fn(&[f64]) -> f64 {
        move |z: &[f64]| {
            let n = z.len();
            let d: Vec<f64> = z.iter().zip(&at).map(|(z, a)| z - a).collect();
            // A rotation that mixes every pair: successive Givens rotations by 0.7 rad.
            let mut r = d.clone();
            for i in 0..n - 1 {
                let (c, s) = (0.7f64.cos(), 0.7f64.sin());
                let (a, b) = (r[i], r[i + 1]);
                r[i] = c * a - s * b;
                r[i + 1] = s * a + c * b;
            }
            3.0 + r.iter().enumerate().map(|(i, v)| 1e6f64.powf(i as f64 / (n - 1) as f64) * v * v).sum::<f64>()
        }
    }

    #[test]
    fn a_full_model_finds_an_ill_conditioned_quadratics_minimum() {
        let at = vec![0.3, -0.2, 0.5, 0.1, -0.4];
        let loss = ellipsoid(at.clone());
        // 32 points support the full model of 5 coordinates (21 terms), 20 only the diagonal one.
        let model = Quadratic::fit(&points(5, 32, &loss)).unwrap();
        assert_eq!(model.terms, Terms::Full);
        let z = model.minimum_within(5, 10.0).unwrap();
        for (z, a) in z.iter().zip(&at) {
            assert!((z - a).abs() < 1e-6, "{z:?} against {at:?}");
        }
        assert!((model.predict(&z) - 3.0).abs() < 1e-6);
        assert_eq!(Quadratic::fit(&points(5, 20, &loss)).unwrap().terms, Terms::Diagonal);
        assert!(Quadratic::fit(&points(5, 15, &loss)).is_none(), "15 points support no model");
    }

    #[test]
    fn a_minimum_beyond_the_radius_becomes_the_lowest_point_on_the_sphere() {
        let loss = |z: &[f64]| (z[0] - 4.0).powi(2) + 10.0 * (z[1] + 3.0).powi(2);
        let model = Quadratic::fit(&points(2, 12, loss)).unwrap();
        let z = model.minimum_within(2, 1.0).unwrap();
        assert!((z[0].hypot(z[1]) - 1.0).abs() < 1e-9, "{z:?}");
        // Lower than every other point of the sphere.
        for k in 0..360 {
            let t = (k as f64).to_radians();
            assert!(loss(&z) <= loss(&[t.cos(), t.sin()]) + 1e-9);
        }
    }

    #[test]
    fn a_saddle_is_left_along_its_falling_direction() {
        // Negative curvature along the second coordinate: the lowest point within 2 lies on the
        // sphere, on the side the gradient points away from.
        let loss = |z: &[f64]| z[0] * z[0] - z[1] * z[1] + 0.5 * z[1];
        let model = Quadratic::fit(&points(2, 12, loss)).unwrap();
        let z = model.minimum_within(2, 2.0).unwrap();
        assert!((z[0].hypot(z[1]) - 2.0).abs() < 1e-9 && z[1] < -1.9, "{z:?}");
        // A saddle with no slope along its falling direction has no single lowest point.
        let flat = Quadratic::fit(&points(2, 12, |z: &[f64]| z[0] * z[0] - z[1] * z[1] + z[0])).unwrap();
        assert!(flat.minimum_within(2, 2.0).is_none());
    }

    #[test]
    fn equal_losses_fit_no_model() {
        assert!(Quadratic::fit(&points(2, 12, |_| 1.0)).is_none());
        assert!(Quadratic::fit(&points(2, 12, |_| f64::NAN)).is_none());
    }

    #[test]
    fn kendall_tau_counts_concordant_pairs() {
        assert_eq!(kendall_tau(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
        assert_eq!(kendall_tau(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
        // Pairs (1,2) and (1,3) concordant, (2,3) discordant.
        assert!((kendall_tau(&[1.0, 2.0, 3.0], &[1.0, 3.0, 2.0]) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(kendall_tau(&[1.0], &[1.0]), 0.0);
    }
}
