//! Nelder-Mead for the asynchronous setting: each call proposes one point from the island's simplex
//! (its best `n + 1` individuals) and from what happened to the most recently bred individuals.
//!
//! **What a call does** (in the unit box of `normalized.rs`; `c` is the centroid of the simplex
//! without the vertex the move is about, `x_0` the best and `x_n` the worst vertex). Let `z` be the
//! newest individual in breeding order (evaluation start, then generation, worker, island) and
//! `k` the number of newest individuals in a row that did not make it into the simplex:
//!
//! | situation | move |
//! |---|---|
//! | fewer than `n + 1` individuals | a uniform random point |
//! | `k = 0`, `z` is the new best | expansion: `c + gamma (z - c)` |
//! | `k = 0`, `z` is the worst vertex and as far from `c` as the others (a reflected point) | outside contraction: `c + rho (z - c)` |
//! | `k = 0`, otherwise | reflection of the worst: `c + alpha (c - x_n)` |
//! | `k = 1`, `z` is where an expansion of this simplex lands (a failed expansion) | reflection of the worst |
//! | `k = 1`, `z` is where a contraction of this simplex lands (a failed contraction) | shrink, as below |
//! | `k = 1`, otherwise (a failed reflection) | inside contraction: `c + rho (x_n - c)` |
//! | `2 <= k <= n + 1` | shrink one random vertex `x_i` (`i >= 1`) toward the best: `x_0 + sigma (x_i - x_0)` |
//! | `k > n + 1`, or the simplex has collapsed | a Gaussian around the best with standard deviation `restart_scale` |
//!
//! "Lands" means within `max(5 jitter, 0.05)` times the move's length: the call recognises which
//! move produced `z` by recomputing the moves on the simplex as it is now, since nothing is stored.
//! When `z` was the reflected point, these are the textbook moves: a new best is expanded along
//! its own direction, a reflected point that is only better than the old worst is contracted on the
//! outside, one that failed is contracted on the inside, and a failed contraction shrinks. A point
//! the table did not produce (a migrant, a random start) is simply read the same way.
//!
//! Every move gets Gaussian jitter of `jitter x` its length: workers of an island see the same
//! simplex, and without it they would all propose the same point before any result came back.
//! Children are reflected into the box and mapped back; ints to the nearest integer's bin.
//!
//! **How this differs from the reference** (`propulate/propagators/nm.py`): the reference keeps the
//! last move and a generation counter per worker and compares vertex generations with its own
//! counter, so its decisions depend on the worker, are lost on resume and ignore what other workers
//! found; here they follow from the island population alone. The reference's outer and inner
//! contractions are the same formula, its expansion uses the best vertex instead of the reflected
//! point and its shrink moves a vertex *away* from the best; here they are the textbook moves. It
//! starts from Gaussian samples around a user-given start (here uniform points), does not keep
//! children inside the bounds and searches floats only; here ints are searched through their bins
//! and categoricals are refused by name.

use serde::{Deserialize, Serialize};

use rand::RngExt;

use crate::error::{Error, Result};
use crate::individual::{Individual, IndividualId};
use crate::propagator::normalized::{UnitBox, check_same_space};
use crate::propagator::{Arity, Pool, Propagator};
use crate::rng::PropRng;
use crate::space::{SearchSpace, Value, standard_normal};

/// The coefficients of [`NelderMead`]; the defaults are the reference's (and the textbook's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NelderMeadConfig {
    /// Reflection coefficient (`> 0`).
    pub alpha: f64,
    /// Expansion coefficient (`> 1`).
    pub gamma: f64,
    /// Contraction coefficient (in `(0, 1)`).
    pub rho: f64,
    /// Shrink coefficient (in `(0, 1)`).
    pub sigma: f64,
    /// Gaussian jitter on every move, as a fraction of the move's length (`>= 0`).
    pub jitter: f64,
    /// Standard deviation, as a fraction of each range, of the Gaussian around the best point used
    /// after repeated failures or a collapsed simplex (`> 0`).
    pub restart_scale: f64,
}

impl Default for NelderMeadConfig {
    fn default() -> Self {
        NelderMeadConfig { alpha: 1.0, gamma: 2.0, rho: 0.5, sigma: 0.5, jitter: 0.02, restart_scale: 0.05 }
    }
}

/// Below this diameter (a fraction of the ranges) the simplex can no longer move meaningfully.
const COLLAPSED_DIAMETER: f64 = 1e-10;

/// The move a call makes (exposed to tests through [`NelderMead::plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Move {
    Random,
    Expand,
    OutsideContract,
    Reflect,
    InsideContract,
    Shrink,
    Restart,
}

/// Nelder-Mead over the island population, one point per call (see the module doc).
#[derive(Debug, Clone)]
pub struct NelderMead {
    space: SearchSpace,
    unit: UnitBox,
    config: NelderMeadConfig,
}

impl NelderMead {
    /// Nelder-Mead for `space`. Refuses categorical parameters (naming the first) and coefficients
    /// outside their ranges.
    pub fn new(space: &SearchSpace, config: NelderMeadConfig) -> Result<Self> {
        let unit = UnitBox::new(space, "Nelder-Mead")?;
        let c = &config;
        let checks = [
            ("alpha", c.alpha, c.alpha > 0.0, "> 0"),
            ("gamma", c.gamma, c.gamma > 1.0, "> 1"),
            ("rho", c.rho, c.rho > 0.0 && c.rho < 1.0, "in (0, 1)"),
            ("sigma", c.sigma, c.sigma > 0.0 && c.sigma < 1.0, "in (0, 1)"),
            ("jitter", c.jitter, c.jitter >= 0.0, ">= 0"),
            ("restart_scale", c.restart_scale, c.restart_scale > 0.0, "> 0"),
        ];
        for (name, value, ok, want) in checks {
            if !(ok && value.is_finite()) {
                return Err(Error::InvalidPropagator(format!("Nelder-Mead needs {name} {want}, got {value}")));
            }
        }
        Ok(NelderMead { space: space.clone(), unit, config })
    }

    /// The move for `pool` and the simplex it works on (unit coordinates, best first).
    pub(crate) fn plan(&self, pool: &dyn Pool) -> (Move, Vec<Vec<f64>>) {
        let n = self.unit.dims();
        if pool.size() < n + 1 {
            return (Move::Random, Vec::new());
        }
        let simplex_inds = pool.best(n + 1);
        let members: Vec<IndividualId> = simplex_inds.iter().map(|i| i.id).collect();
        let simplex: Vec<Vec<f64>> = simplex_inds.iter().map(|i| self.unit.to_unit(&i.values)).collect();
        let diameter = simplex[1..]
            .iter()
            .map(|v| v.iter().zip(&simplex[0]).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max))
            .fold(0.0, f64::max);
        if diameter < COLLAPSED_DIAMETER {
            return (Move::Restart, simplex);
        }
        let failures = pool.iter_latest_bred().take_while(|i| !members.contains(&i.id)).count();
        let newest = pool.iter_latest_bred().next().expect("pool is not empty");
        let z = self.unit.to_unit(&newest.values);
        let mv = match failures {
            0 => {
                let rank = members.iter().position(|id| *id == newest.id).expect("newest is in the simplex");
                if rank == 0 {
                    Move::Expand
                } else if rank == n && self.came_from_outside(&z, &simplex) {
                    Move::OutsideContract
                } else {
                    Move::Reflect
                }
            }
            1 => {
                // A failed expansion leaves the simplex as it was: go on with the next reflection.
                // A failed contraction shrinks; a failed reflection contracts on the inside.
                let near = |mv: Move| self.is_near(&z, &self.apply_exact(mv, &simplex, 0), &simplex[0]);
                if near(Move::Expand) {
                    Move::Reflect
                } else if near(Move::InsideContract) || near(Move::OutsideContract) {
                    Move::Shrink
                } else {
                    Move::InsideContract
                }
            }
            k if k <= n + 1 => Move::Shrink,
            _ => Move::Restart,
        };
        (mv, simplex)
    }

    /// The unit-box point of move `mv` on `simplex` (best first), before jitter and reflection.
    pub(crate) fn apply(&self, mv: Move, simplex: &[Vec<f64>], rng: &mut PropRng) -> Vec<f64> {
        match mv {
            Move::Random => (0..self.unit.dims()).map(|_| rng.random::<f64>()).collect(),
            Move::Shrink => self.apply_exact(mv, simplex, rng.random_range(1..=self.unit.dims())),
            Move::Restart => simplex[0].iter().map(|x| x + self.config.restart_scale * standard_normal(rng)).collect(),
            _ => self.apply_exact(mv, simplex, 0),
        }
    }

    /// True if `z` is where a move to `target` would land, up to the jitter: how a call recognises
    /// the move that produced the newest point without keeping state.
    fn is_near(&self, z: &[f64], target: &[f64], best: &[f64]) -> bool {
        let length = dist(target, best);
        dist(z, target) <= (5.0 * self.config.jitter).max(0.05) * length + 1e-12
    }

    /// True if `z`, the worst vertex, lies as far from the centroid of the others as a reflected
    /// point would (at least as far as the others lie on average), rather than inside like a
    /// contracted one: only then was it a reflection worth contracting on the outside.
    fn came_from_outside(&self, z: &[f64], simplex: &[Vec<f64>]) -> bool {
        let n = simplex.len() - 1;
        let c: Vec<f64> = (0..z.len()).map(|j| simplex[..n].iter().map(|v| v[j]).sum::<f64>() / n as f64).collect();
        let spread = simplex[..n].iter().map(|v| dist(v, &c)).sum::<f64>() / n as f64;
        dist(z, &c) >= spread
    }

    /// The deterministic moves; `vertex` is the one a shrink moves.
    fn apply_exact(&self, mv: Move, simplex: &[Vec<f64>], vertex: usize) -> Vec<f64> {
        let c = &self.config;
        let n = self.unit.dims();
        // Centroid of all vertices but `skip`.
        let centroid = |skip: usize| -> Vec<f64> {
            (0..n)
                .map(|j| {
                    simplex.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, v)| v[j]).sum::<f64>() / n as f64
                })
                .collect()
        };
        let along = |from: &[f64], to: &[f64], t: f64| -> Vec<f64> {
            from.iter().zip(to).map(|(a, b)| a + t * (b - a)).collect()
        };
        match mv {
            Move::Expand => along(&centroid(0), &simplex[0], c.gamma),
            Move::OutsideContract => along(&centroid(n), &simplex[n], c.rho),
            Move::Reflect => along(&centroid(n), &simplex[n], -c.alpha),
            Move::InsideContract => along(&centroid(n), &simplex[n], c.rho),
            Move::Shrink => along(&simplex[0], &simplex[vertex.clamp(1, n)], c.sigma),
            Move::Random | Move::Restart => simplex[0].clone(),
        }
    }
}

fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt()
}

impl Propagator for NelderMead {
    fn name(&self) -> &'static str {
        "Nelder-Mead"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        check_same_space(&self.space, space, "Nelder-Mead")?;
        let (mv, simplex) = self.plan(pool);
        if mv == Move::Random {
            let child = space.sample(rng);
            return Ok(vec![Individual::new(self.novel(pool, child, None, rng))]);
        }
        let mut point = self.apply(mv, &simplex, rng);
        if self.config.jitter > 0.0 && mv != Move::Restart {
            let n = point.len() as f64;
            let length = point.iter().zip(&simplex[0]).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
            let scale = self.config.jitter * length / n.sqrt();
            point.iter_mut().for_each(|x| *x += scale * standard_normal(rng));
        }
        let child = self.unit.point_at(&point);
        Ok(vec![Individual::new(self.novel(pool, child, Some(&simplex[0]), rng))])
    }
}

/// How often a child that repeats an evaluated point is drawn again around the best (each time
/// twice as wide), then uniformly, before it is kept as it is (a space with every point evaluated).
const REDRAWS_AROUND_BEST: u32 = 8;
const REDRAWS_UNIFORM: u32 = 32;

impl NelderMead {
    /// `child`, or, where the pool holds an individual with its values, a point not yet in it:
    /// drawn around `best` (unit coordinates; none before there is a simplex) ever wider, then
    /// uniformly. On a small int grid the
    /// moves round onto evaluated points and the simplex collapses onto one, which the restart's
    /// narrow Gaussian then proposed again and again (a 4x4 grid's optimum was missed in 5 of 9 runs).
    fn novel(&self, pool: &dyn Pool, child: Vec<Value>, best: Option<&[f64]>, rng: &mut PropRng) -> Vec<Value> {
        let seen = |values: &[Value]| pool.iter_latest_bred().any(|i| i.values == values);
        if !seen(&child) {
            return child;
        }
        for k in 0..best.map_or(0, |_| REDRAWS_AROUND_BEST) {
            let best = best.expect("redrawn around a best only where there is one");
            let scale = self.config.restart_scale * f64::from(1u32 << (k + 1));
            let point: Vec<f64> = best.iter().map(|x| x + scale * standard_normal(rng)).collect();
            let values = self.unit.point_at(&point);
            if !seen(&values) {
                return values;
            }
        }
        (0..REDRAWS_UNIFORM).map(|_| self.space.sample(rng)).find(|v| !seen(v)).unwrap_or(child)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;

    fn at(x: f64, y: f64, loss: f64, generation: u64) -> Individual {
        let mut i = Individual::new(vec![Value::Float(x), Value::Float(y)]);
        i.loss = loss;
        i.id.generation = generation;
        i
    }

    fn square() -> SearchSpace {
        SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap()
    }

    #[test]
    fn moves_on_a_hand_made_simplex() {
        let nm = NelderMead::new(&square(), NelderMeadConfig::default()).unwrap();
        let mut rng = worker_rng(0, 0);
        // Best (0.2, 0.2), then (0.4, 0.2), worst (0.2, 0.4); the newest (generation 2) is a middle
        // vertex, so the worst is reflected through the centroid (0.3, 0.2): (0.4, 0.0).
        let pool = vec![at(0.2, 0.2, 1.0, 0), at(0.2, 0.4, 3.0, 1), at(0.4, 0.2, 2.0, 2)];
        let (mv, simplex) = nm.plan(&pool);
        assert_eq!(mv, Move::Reflect);
        let p = nm.apply(mv, &simplex, &mut rng);
        assert!((p[0] - 0.4).abs() < 1e-12 && p[1].abs() < 1e-12, "{p:?}");
        // The newest is the new best: expand it away from the centroid of the other two.
        let pool = vec![at(0.2, 0.2, 1.0, 2), at(0.2, 0.4, 3.0, 0), at(0.4, 0.4, 2.0, 1)];
        let (mv, simplex) = nm.plan(&pool);
        assert_eq!(mv, Move::Expand);
        let p = nm.apply(mv, &simplex, &mut rng);
        // centroid (0.3, 0.4), best (0.2, 0.2): 0.3 + 2 (0.2 - 0.3) = 0.1, 0.4 + 2 (0.2 - 0.4) = 0.0.
        assert!((p[0] - 0.1).abs() < 1e-12 && p[1].abs() < 1e-12, "{p:?}");
        // The newest is the worst vertex: outside contraction, halfway to the centroid.
        let pool = vec![at(0.2, 0.2, 1.0, 0), at(0.4, 0.2, 2.0, 1), at(0.2, 0.4, 3.0, 2)];
        let (mv, simplex) = nm.plan(&pool);
        assert_eq!(mv, Move::OutsideContract);
        let p = nm.apply(mv, &simplex, &mut rng);
        assert!((p[0] - 0.25).abs() < 1e-12 && (p[1] - 0.3).abs() < 1e-12, "{p:?}");
        // One newest point outside the simplex: inside contraction; two: shrink toward the best;
        // more than n + 1: restart around the best.
        let mut pool = vec![at(0.2, 0.2, 1.0, 0), at(0.4, 0.2, 2.0, 1), at(0.2, 0.4, 3.0, 2), at(0.9, 0.9, 9.0, 3)];
        assert_eq!(nm.plan(&pool).0, Move::InsideContract);
        pool.push(at(0.8, 0.9, 8.0, 4));
        let (mv, simplex) = nm.plan(&pool);
        assert_eq!(mv, Move::Shrink);
        let p = nm.apply(mv, &simplex, &mut rng);
        let near = |a: [f64; 2]| (p[0] - a[0]).abs() < 1e-12 && (p[1] - a[1]).abs() < 1e-12;
        assert!(near([0.3, 0.2]) || near([0.2, 0.3]), "{p:?}");
        pool.push(at(0.8, 0.8, 8.5, 5));
        pool.push(at(0.7, 0.8, 7.5, 6));
        assert_eq!(nm.plan(&pool).0, Move::Restart);
        assert_eq!(nm.plan(&pool[..2].to_vec()).0, Move::Random);
    }

    #[test]
    fn a_small_int_grid_is_searched_without_repeating_a_point() {
        let grid = SearchSpace::builder().int("a", 0, 3).int("b", 0, 3).build().unwrap();
        let nm = NelderMead::new(&grid, NelderMeadConfig::default()).unwrap();
        let loss = |v: &[Value]| {
            let (a, b) = (v[0].as_f64(), v[1].as_f64());
            (a - 2.0).powi(2) + (b - 1.0).powi(2)
        };
        for seed in 0..9 {
            let mut rng = worker_rng(seed, 0);
            let mut pool: Vec<Individual> = Vec::new();
            for generation in 0..12 {
                let mut child = nm.propagate(&pool, &grid, &mut rng).unwrap().remove(0);
                assert!(!pool.iter().any(|i| i.values == child.values), "seed {seed}: {:?} again", child.values);
                child.loss = loss(&child.values);
                child.id.generation = generation;
                pool.push(child);
            }
            assert!(pool.iter().any(|i| i.loss == 0.0), "seed {seed}: the optimum (2, 1) not among 12 of 16 points");
        }
    }

    #[test]
    fn categoricals_and_bad_coefficients_are_refused_by_name() {
        let space = SearchSpace::builder().int("layers", 1, 8).categorical("opt", &["sgd", "adam"]).build().unwrap();
        let e = NelderMead::new(&space, NelderMeadConfig::default()).unwrap_err().to_string();
        assert!(e.contains("Nelder-Mead") && e.contains("'opt'"), "{e}");
        let e = NelderMead::new(&square(), NelderMeadConfig { rho: 1.5, ..Default::default() }).unwrap_err();
        assert!(e.to_string().contains("rho"), "{e}");
    }
}
