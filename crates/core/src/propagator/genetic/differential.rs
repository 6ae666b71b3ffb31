//! A differential-evolution step (DE/rand/1/bin): a child is a random parent moved by the scaled
//! difference of two others, in a random subset of its parameters. Difference vectors take the
//! shape of the pool, so the steps shrink as it converges and follow a curved valley that
//! coordinate-wise mutations crawl along.

use rand::RngExt;

use crate::error::{Error, Result};
use crate::individual::Individual;
use crate::propagator::{Arity, Pool, Propagator};
use crate::rng::PropRng;
use crate::space::{Domain, SearchSpace, Value};

/// DE/rand/1/bin over the whole pool it is given: child = a + F (b - c) in each parameter taken
/// with probability `crossover` (and in one parameter always), a's value elsewhere. F is drawn
/// uniformly from `scale` per child (dithering, which keeps a small pool from repeating the same
/// steps). Floats move in their own scale (log-scale ones in log space), integers are rounded to
/// the nearest integer, and both are clipped to their bounds; categorical parameters keep a's
/// choice (a difference of choices means nothing).
#[derive(Debug, Clone)]
pub struct DifferentialStep {
    scale: (f64, f64),
    crossover: f64,
}

impl DifferentialStep {
    /// Difference weights drawn from `[lo, hi)`, each parameter moved with probability `crossover`.
    pub fn new(lo: f64, hi: f64, crossover: f64) -> Result<Self> {
        if !(lo.is_finite() && hi.is_finite() && 0.0 < lo && lo < hi) {
            return Err(Error::InvalidPropagator(format!(
                "DifferentialStep needs weights 0 < lo < hi, got {lo}..{hi}"
            )));
        }
        let crossover = crate::propagator::check_probability("differential crossover", crossover)?;
        Ok(DifferentialStep { scale: (lo, hi), crossover })
    }
}

impl Propagator for DifferentialStep {
    fn name(&self) -> &'static str {
        "DifferentialStep"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        let size = pool.size();
        if size < 3 {
            return Err(Error::NotEnoughParents { name: self.name(), needed: 3, got: size });
        }
        let [a, b, c]: [Individual; 3] = pool.sample(3, rng).try_into().expect("3 distinct from a pool of 3 or more");
        let weight = rng.random_range(self.scale.0..self.scale.1);
        let always = rng.random_range(0..space.len());
        let mut child = a.child();
        for (i, param) in space.params().iter().enumerate() {
            if i != always && !rng.random_bool(self.crossover) {
                continue;
            }
            let moved = |x: f64, y: f64, z: f64| x + weight * (y - z);
            let (x, y, z) = (a.values[i], b.values[i], c.values[i]);
            child.values[i] = match param.domain {
                Domain::Float { lo, hi, log: false } => {
                    Value::Float(moved(x.as_f64(), y.as_f64(), z.as_f64()).clamp(lo, hi))
                }
                Domain::Float { lo, hi, log: true } => {
                    let ln = |v: Value| v.as_f64().max(lo).ln();
                    Value::Float(moved(ln(x), ln(y), ln(z)).exp().clamp(lo, hi))
                }
                Domain::Int { lo, hi } => {
                    Value::Int((moved(x.as_f64(), y.as_f64(), z.as_f64()).round() as i64).clamp(lo, hi))
                }
                Domain::Categorical { .. } => x,
            };
        }
        Ok(vec![child])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;

    fn pool(points: &[(f64, i64)]) -> Vec<Individual> {
        points.iter().map(|&(x, n)| Individual::new(vec![Value::Float(x), Value::Int(n)])).collect()
    }

    #[test]
    fn a_child_is_a_parent_moved_by_a_scaled_difference_of_two_others() {
        let space = SearchSpace::builder().float("x", -10.0, 10.0).int("n", -100, 100).build().unwrap();
        // Parents on a line: every difference is a multiple of (1, 10), so the child must be too,
        // away from the bounds.
        let parents = pool(&[(0.0, 0), (1.0, 10), (2.0, 20)]);
        let step = DifferentialStep::new(0.5, 1.0, 1.0).unwrap();
        let mut rng = worker_rng(3, 0);
        for _ in 0..100 {
            let child = step.propagate(&parents, &space, &mut rng).unwrap().remove(0);
            let (x, n) = (child.values[0].as_f64(), child.values[1].as_f64());
            assert!((-2.0..=4.0).contains(&x), "{x}");
            assert!((n - 10.0 * x).abs() <= 0.5, "({x}, {n}) left the line of its parents");
            assert!(parents.iter().all(|p| p.values != child.values), "a parent came back unchanged");
        }
    }

    #[test]
    fn small_pools_and_bad_settings_are_refused() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).int("n", 0, 1).build().unwrap();
        let step = DifferentialStep::new(0.5, 1.0, 0.5).unwrap();
        let e = step.propagate(&pool(&[(0.0, 0), (1.0, 1)]), &space, &mut worker_rng(0, 0)).unwrap_err();
        assert!(e.to_string().contains("needs 3 parents but got 2"), "{e}");
        assert!(DifferentialStep::new(1.0, 0.5, 0.5).unwrap_err().to_string().contains("0 < lo < hi"));
        assert!(DifferentialStep::new(0.5, 1.0, 1.5).is_err());
    }
}
