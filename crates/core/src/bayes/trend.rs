//! A process around a linear trend (universal kriging): the values' least-squares plane over the
//! continuous coordinates, and a Matérn process of what the plane leaves. For constraints: what
//! a training measures beside its loss (memory, latency, a budget) mostly grows steadily with the
//! parameters, and near the bound, where the search spends its time, any smooth constraint is
//! close to a plane. A process with a constant mean needs many points across the bound to place
//! it; the plane places it from a few and the process bends it where the values say so.

use nalgebra::{DMatrix, DVector};

use super::matern::{Belief, Coordinates, MaternGp};

/// The ridge's weight, relative to the design's mean squared singular value: a direction the
/// points spread along a thousandth as much as on average is hardly sloped.
const RIDGE: f64 = 1e-3;

/// A process of the residuals of a plane: value(x) = w . (x - centre) + intercept + gp(x).
#[derive(Debug, Clone)]
pub(crate) struct Trended {
    gp: MaternGp,
    /// The plane's slope per coordinate (0 for categorical ones, and everywhere while too few
    /// points fix a plane).
    weights: Vec<f64>,
    centre: Vec<f64>,
    intercept: f64,
}

impl Trended {
    /// The plane fitted by least squares to `xs` and `ys` (standardized), then the process of the
    /// residuals. The plane only with at least twice as many points as it has coefficients, so
    /// that the residuals still say something, and only where the space has no conditions (an
    /// inactive coordinate's dormant value is no value to slope along). `None` as
    /// [`MaternGp::fit`].
    pub(crate) fn fit(coordinates: Coordinates, xs: Vec<Vec<f64>>, ys: Vec<f64>) -> Option<Self> {
        let dims = coordinates.categorical.len();
        let sloped: Vec<usize> = (0..dims).filter(|&j| !coordinates.categorical[j]).collect();
        let n = xs.len();
        let centre: Vec<f64> =
            (0..dims).map(|j| if n == 0 { 0.0 } else { xs.iter().map(|x| x[j]).sum::<f64>() / n as f64 }).collect();
        let intercept = if n == 0 { 0.0 } else { ys.iter().sum::<f64>() / n as f64 };
        let mut weights = vec![0.0; dims];
        if coordinates.activity.is_none() && !sloped.is_empty() && n >= 2 * (sloped.len() + 1) {
            let design = DMatrix::from_fn(n, sloped.len(), |i, c| xs[i][sloped[c]] - centre[sloped[c]]);
            let targets = DVector::from_iterator(n, ys.iter().map(|y| y - intercept));
            // Ridge regression: points along a corridor (a trust region following a constraint's
            // edge) leave the slope across it unfixed, and least squares would make it up.
            let svd = design.svd(true, true);
            let (u, v_t) = (svd.u.as_ref()?, svd.v_t.as_ref()?);
            let s = &svd.singular_values;
            let ridge = RIDGE * s.iter().map(|v| v * v).sum::<f64>() / s.len() as f64;
            let projected = u.transpose() * &targets;
            let shrunk =
                DVector::from_fn(
                    s.len(),
                    |i, _| if s[i] > 0.0 { s[i] / (s[i] * s[i] + ridge) * projected[i] } else { 0.0 },
                );
            let slope = v_t.transpose() * shrunk;
            for (c, &j) in sloped.iter().enumerate() {
                weights[j] = slope[c];
            }
        }
        if weights.iter().any(|w| !w.is_finite()) {
            weights = vec![0.0; dims];
        }
        let plain = || MaternGp::fit(coordinates.clone(), xs.clone(), ys.clone());
        if weights.iter().all(|w| *w == 0.0) {
            return Some(Trended { gp: plain()?, weights, centre, intercept: 0.0 });
        }
        let plane = |x: &[f64]| plane_at(&weights, &centre, intercept, x);
        let residuals: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| y - plane(x)).collect();
        let sloped_gp = MaternGp::fit(coordinates.clone(), xs.clone(), residuals);
        let flat = plain();
        // The plane only where the values' evidence says so, less its coefficients' price (BIC's
        // half a log of the points each): a curved constraint (exponential in a parameter) is
        // better told by the process alone, whose mean bends with it.
        let price = 0.5 * sloped.len() as f64 * (n as f64).ln();
        match (sloped_gp, flat) {
            (Some(gp), Some(f)) if gp.log_evidence() - price > f.log_evidence() => {
                Some(Trended { gp, weights, centre, intercept })
            }
            (_, Some(f)) => Some(Trended { gp: f, weights: vec![0.0; dims], centre, intercept: 0.0 }),
            (gp, None) => gp.map(|gp| Trended { gp, weights, centre, intercept }),
        }
    }

    fn plane(&self, x: &[f64]) -> f64 {
        plane_at(&self.weights, &self.centre, self.intercept, x)
    }

    /// The predictive mean and variance at `x` (the plane taken as known).
    pub(crate) fn predict(&self, x: &[f64]) -> (f64, f64) {
        let (mean, variance) = self.gp.predict(x);
        (mean + self.plane(x), variance)
    }

    /// [`Trended::predict`] at each of `xs`.
    pub(crate) fn predict_many(&self, xs: &[Vec<f64>]) -> Vec<(f64, f64)> {
        self.gp.predict_many(xs).into_iter().zip(xs).map(|((m, v), x)| (m + self.plane(x), v)).collect()
    }

    /// The prediction at `x` with its gradient by each coordinate.
    pub(crate) fn belief(&self, x: &[f64]) -> Belief {
        let mut belief = self.gp.belief(x);
        belief.mean += self.plane(x);
        for (d, w) in belief.d_mean.iter_mut().zip(&self.weights) {
            *d += w;
        }
        belief
    }
}

fn plane_at(weights: &[f64], centre: &[f64], intercept: f64, x: &[f64]) -> f64 {
    intercept + weights.iter().zip(centre).zip(x).map(|((w, c), v)| w * (v - c)).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::PropRng;
    use rand::{RngExt, SeedableRng};

    fn points(n: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = PropRng::seed_from_u64(seed);
        (0..n).map(|_| (0..3).map(|_| rng.random::<f64>()).collect()).collect()
    }

    /// A plane is predicted exactly far from the points that fixed it, where a process with a
    /// constant mean falls back to that mean.
    #[test]
    fn a_plane_is_extrapolated_where_a_constant_mean_is_not() {
        let value = |x: &[f64]| 3.0 * x[0] - 2.0 * x[1] + 0.5;
        // Points in the corner [0, 0.3]^3; predicted at (0.9, 0.1, 0.9).
        let xs: Vec<Vec<f64>> = points(12, 1).into_iter().map(|x| x.iter().map(|v| 0.3 * v).collect()).collect();
        let ys: Vec<f64> = xs.iter().map(|x| value(x)).collect();
        let far = [0.9, 0.1, 0.9];
        let trended = Trended::fit(Coordinates::plain(vec![false; 3]), xs.clone(), ys.clone()).unwrap();
        let plain = MaternGp::fit(Coordinates::plain(vec![false; 3]), xs, ys).unwrap();
        let (mean, _) = trended.predict(&far);
        assert!((mean - value(&far)).abs() < 1e-2, "trended {mean} against {}", value(&far));
        assert!((plain.predict(&far).0 - value(&far)).abs() > 0.5, "the plain process extrapolated as well");
        let belief = trended.belief(&far);
        assert!((belief.d_mean[0] - 3.0).abs() < 1e-2 && (belief.d_mean[1] + 2.0).abs() < 1e-2, "{:?}", belief.d_mean);
        let many = trended.predict_many(&[far.to_vec()]);
        assert!((many[0].0 - mean).abs() < 1e-9);
    }

    /// Too few points for a plane (fewer than twice its coefficients): the plain process.
    #[test]
    fn too_few_points_fit_no_plane() {
        let xs = points(7, 2);
        let ys: Vec<f64> = xs.iter().map(|x| x[0]).collect();
        let trended = Trended::fit(Coordinates::plain(vec![false; 3]), xs, ys).unwrap();
        assert!(trended.weights.iter().all(|w| *w == 0.0), "{:?}", trended.weights);
    }

    /// A plane is kept only where the evidence asks for it: values exponential in a coordinate
    /// (the far ones dwarfing the near) are the process's alone.
    #[test]
    fn curved_values_fit_no_plane() {
        let xs = points(24, 3);
        let ys: Vec<f64> = xs.iter().map(|x| (12.0 * (x[0] - 0.5)).exp() - 1.0).collect();
        let trended =
            Trended::fit(Coordinates::plain(vec![false; 3]), xs, crate::bayes::stats::standardized(&ys)).unwrap();
        assert!(trended.weights.iter().all(|w| *w == 0.0), "{:?}", trended.weights);
    }
}
