//! A limited-memory BFGS minimizer inside a box (projected L-BFGS: the quasi-Newton direction on
//! the coordinates not held at a bound, a backtracking Armijo search along the projected path).
//! What the GP propagator fits its kernel with and climbs its acquisition function with, as
//! scipy's L-BFGS-B does for Optuna and BoTorch. Written here because no maintained pure-Rust crate
//! has bounds (argmin's L-BFGS has none; the L-BFGS-B crates wrap Fortran); a few dozen
//! iterations on at most a few dozen coordinates is all either use needs.

/// Pairs of steps and gradient changes kept for the inverse-Hessian estimate.
const MEMORY: usize = 10;
/// Armijo's sufficient-decrease constant.
const ARMIJO: f64 = 1e-4;
/// Halvings of a step before a line search gives up.
const BACKTRACKS: usize = 30;

/// When to stop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stop {
    /// Most iterations (gradient evaluations beyond the line searches).
    pub iterations: usize,
    /// Stop once the projected gradient's largest component is below this.
    pub gradient: f64,
    /// Stop once an iteration lowers the value by less than this times max(|f|, 1).
    pub relative_decrease: f64,
}

/// The minimum found: where, and the value there.
#[derive(Debug, Clone)]
pub(crate) struct Minimum {
    pub x: Vec<f64>,
    pub value: f64,
}

/// Minimize `f` (returning the value and the gradient) from `x0` inside `[lo, hi]` per
/// coordinate. A non-finite value or gradient ends the search at the last finite point; the
/// start is clipped into the box first, and the result never leaves it.
pub(crate) fn minimize(
    mut f: impl FnMut(&[f64]) -> (f64, Vec<f64>),
    x0: &[f64],
    lo: &[f64],
    hi: &[f64],
    stop: Stop,
) -> Minimum {
    let project = |x: &mut [f64]| {
        for ((v, l), h) in x.iter_mut().zip(lo).zip(hi) {
            *v = v.clamp(*l, *h);
        }
    };
    let mut x = x0.to_vec();
    project(&mut x);
    let (mut value, mut grad) = f(&x);
    if !value.is_finite() || grad.iter().any(|g| !g.is_finite()) {
        return Minimum { x, value };
    }
    let mut memory: Vec<(Vec<f64>, Vec<f64>, f64)> = Vec::with_capacity(MEMORY);
    for iteration in 0..stop.iterations {
        // Coordinates at a bound with the gradient pushing outwards are held there.
        let free: Vec<bool> =
            (0..x.len()).map(|i| !((x[i] <= lo[i] && grad[i] > 0.0) || (x[i] >= hi[i] && grad[i] < 0.0))).collect();
        let projected: Vec<f64> = grad.iter().zip(&free).map(|(g, &f)| if f { *g } else { 0.0 }).collect();
        let largest = projected.iter().fold(0.0f64, |m, g| m.max(g.abs()));
        if largest < stop.gradient {
            break;
        }
        let mut direction = two_loop(&projected, &memory);
        for (d, &f) in direction.iter_mut().zip(&free) {
            if !f {
                *d = 0.0;
            }
        }
        if dot(&direction, &projected) >= 0.0 {
            direction = projected.iter().map(|g| -g).collect();
        }
        // Without curvature yet, a first step of at most one unit in the largest coordinate.
        let mut step = if memory.is_empty() { 1.0 / largest.max(1.0) } else { 1.0 };
        let mut accepted = None;
        for _ in 0..BACKTRACKS {
            let mut trial: Vec<f64> = x.iter().zip(&direction).map(|(a, d)| a + step * d).collect();
            project(&mut trial);
            let moved: Vec<f64> = trial.iter().zip(&x).map(|(t, a)| t - a).collect();
            let decrease = dot(&grad, &moved);
            if decrease >= 0.0 && moved.iter().all(|m| *m == 0.0) {
                break;
            }
            let (v, g) = f(&trial);
            if v.is_finite() && g.iter().all(|x| x.is_finite()) && v <= value + ARMIJO * decrease.min(0.0) {
                accepted = Some((trial, v, g, moved));
                break;
            }
            step *= 0.5;
        }
        let Some((next, next_value, next_grad, moved)) = accepted else { break };
        let change: Vec<f64> = next_grad.iter().zip(&grad).map(|(a, b)| a - b).collect();
        let curvature = dot(&moved, &change);
        if curvature > 1e-12 * dot(&change, &change).sqrt().max(1e-300) {
            if memory.len() == MEMORY {
                memory.remove(0);
            }
            memory.push((moved, change, 1.0 / curvature));
        }
        let gained = value - next_value;
        x = next;
        value = next_value;
        grad = next_grad;
        if iteration > 0 && gained < stop.relative_decrease * value.abs().max(1.0) {
            break;
        }
    }
    Minimum { x, value }
}

/// The L-BFGS two-loop recursion: minus the inverse-Hessian estimate times `grad`.
fn two_loop(grad: &[f64], memory: &[(Vec<f64>, Vec<f64>, f64)]) -> Vec<f64> {
    let mut q = grad.to_vec();
    let mut alphas = Vec::with_capacity(memory.len());
    for (s, y, rho) in memory.iter().rev() {
        let a = rho * dot(s, &q);
        for (qi, yi) in q.iter_mut().zip(y) {
            *qi -= a * yi;
        }
        alphas.push(a);
    }
    if let Some((s, y, _)) = memory.last() {
        let gamma = dot(s, y) / dot(y, y);
        for qi in &mut q {
            *qi *= gamma;
        }
    }
    for ((s, y, rho), a) in memory.iter().zip(alphas.into_iter().rev()) {
        let b = rho * dot(y, &q);
        for (qi, si) in q.iter_mut().zip(s) {
            *qi += (a - b) * si;
        }
    }
    q.iter().map(|v| -v).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STOP: Stop = Stop { iterations: 200, gradient: 1e-9, relative_decrease: 0.0 };

    fn rosenbrock(x: &[f64]) -> (f64, Vec<f64>) {
        let (a, b) = (x[0], x[1]);
        let v = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
        (v, vec![-2.0 * (1.0 - a) - 400.0 * a * (b - a * a), 200.0 * (b - a * a)])
    }

    #[test]
    fn finds_rosenbrocks_valley_floor_without_bounds_in_the_way() {
        let m = minimize(rosenbrock, &[-1.2, 1.0], &[-5.0, -5.0], &[5.0, 5.0], STOP);
        assert!((m.x[0] - 1.0).abs() < 1e-4 && (m.x[1] - 1.0).abs() < 1e-4, "{m:?}");
    }

    #[test]
    fn stops_at_the_bound_a_minimum_lies_beyond() {
        // (x - 3)^2 + (y + 0.5)^2 in [0, 1]^2: the minimum in the box is (1, 0).
        let f = |x: &[f64]| ((x[0] - 3.0).powi(2) + (x[1] + 0.5).powi(2), vec![2.0 * (x[0] - 3.0), 2.0 * (x[1] + 0.5)]);
        let m = minimize(f, &[0.5, 0.5], &[0.0, 0.0], &[1.0, 1.0], STOP);
        assert_eq!(m.x, vec![1.0, 0.0]);
        // A coordinate held at its bound still lets the others move: (x - 3)^2 + (y - 0.3)^2.
        let g = |x: &[f64]| ((x[0] - 3.0).powi(2) + (x[1] - 0.3).powi(2), vec![2.0 * (x[0] - 3.0), 2.0 * (x[1] - 0.3)]);
        let m = minimize(g, &[0.9, 0.9], &[0.0, 0.0], &[1.0, 1.0], STOP);
        assert!(m.x[0] == 1.0 && (m.x[1] - 0.3).abs() < 1e-8, "{m:?}");
    }

    #[test]
    fn a_start_outside_the_box_is_clipped_and_a_nan_ends_the_search_at_a_finite_point() {
        let f = |x: &[f64]| (x[0] * x[0], vec![2.0 * x[0]]);
        let m = minimize(f, &[7.0], &[-1.0], &[2.0], STOP);
        assert!(m.x[0].abs() < 1e-6, "{m:?}");
        // NaN below 0.5: the search stays where the values are finite.
        let g = |x: &[f64]| if x[0] < 0.5 { (f64::NAN, vec![f64::NAN]) } else { (x[0], vec![1.0]) };
        let m = minimize(g, &[0.9], &[0.0], &[1.0], STOP);
        assert!(m.value.is_finite() && m.x[0] >= 0.5, "{m:?}");
    }
}
