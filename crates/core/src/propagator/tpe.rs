//! The tree-structured Parzen estimator (TPE; Bergstra et al., NeurIPS 2011), Optuna's default
//! sampler, as a propagator: the island's evaluated individuals are split into the best `gamma`
//! share and the rest, each parameter's values in either group become a density (a Parzen window
//! over a float or int parameter's unit interval, a histogram over a categorical's choices), and
//! each parameter of the child is the best of `candidates` draws from the good density by the ratio
//! of the good to the bad density. The parameters are modelled one by one (independent TPE), as
//! the `tpe` crate does, whose estimators this uses.
//!
//! It keeps no state: everything comes from the pool, so a resumed run breeds from what its
//! checkpoint holds, and several workers breeding from one island at once draw different
//! candidates from their own random streams. Until the pool holds `startup` evaluated individuals
//! it samples uniformly (a model of a handful of points steers nowhere).

use serde::{Deserialize, Serialize};
use tpe::{TpeOptimizer, TpeOptimizerBuilder};

use super::normalized::{ParamAxis, check_same_space, param_axes};
use super::{Arity, Pool, Propagator};
use crate::error::{Error, Result};
use crate::individual::Individual;
use crate::rng::PropRng;
use crate::space::{SearchSpace, Value};

/// The knobs of [`Tpe`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpeConfig {
    /// Share of the evaluated individuals that make the good density (rounded up; at least one).
    pub gamma: f64,
    /// Draws from the good density per parameter; the child takes the one the densities' ratio
    /// rates best. More: greedier.
    pub candidates: usize,
    /// Uniform random children until the pool holds this many evaluated individuals.
    pub startup: usize,
}

impl Default for TpeConfig {
    /// The good share of hyperopt (25 %; Optuna and the `tpe` crate take 10 %), the crate's 24
    /// candidates, 6 random individuals first: on the stand-in for the CNN search
    /// (`benches/cnn_surrogate.rs`, 28 evaluations) these beat 10 % and a start of 4, 8 or 10.
    fn default() -> Self {
        TpeConfig { gamma: 0.25, candidates: 24, startup: 6 }
    }
}

/// Independent TPE over a search space.
#[derive(Debug, Clone)]
pub struct Tpe {
    space: SearchSpace,
    /// Each parameter on its unit interval (log floats in `ln`, ints in equal bins) or as its choices.
    axes: Vec<ParamAxis>,
    config: TpeConfig,
}

/// The largest unit coordinate the estimators accept: their range is half-open, and a value at a
/// parameter's upper bound must still count.
const BELOW_ONE: f64 = 1.0 - 1e-12;

impl Tpe {
    /// TPE for `space`; refuses a `gamma` outside (0, 1] and zero candidates.
    pub fn new(space: &SearchSpace, config: TpeConfig) -> Result<Self> {
        if !(config.gamma > 0.0 && config.gamma <= 1.0) {
            return Err(Error::InvalidPropagator(format!("TPE's gamma must lie in (0, 1], got {}", config.gamma)));
        }
        if config.candidates == 0 {
            return Err(Error::InvalidPropagator("TPE needs at least one candidate per parameter".into()));
        }
        let axes = param_axes(space, "TPE")?;
        Ok(Tpe { space: space.clone(), axes, config })
    }

    /// The value of parameter `axis` for a child, from the evaluated `(value, loss)` pairs.
    fn draw(&self, axis: &ParamAxis, told: &[(Value, f64)], rng: &mut PropRng) -> Result<Value> {
        let builder = {
            let mut b = TpeOptimizerBuilder::new();
            b.gamma(self.config.gamma).candidates(self.config.candidates);
            b
        };
        let failed = |e: &dyn std::fmt::Display| Error::InvalidPropagator(format!("TPE: {e}"));
        match axis {
            ParamAxis::Choices(n) => {
                let range = tpe::categorical_range(*n).map_err(|e| failed(&e))?;
                let mut optim: TpeOptimizer =
                    builder.build(tpe::histogram_estimator(), range).map_err(|e| failed(&e))?;
                for &(v, loss) in told {
                    optim.tell(v.as_f64(), loss).map_err(|e| failed(&e))?;
                }
                let choice = optim.ask(rng).map_err(|e| failed(&e))?;
                Ok(Value::Cat((choice as usize).min(n - 1) as u32))
            }
            ParamAxis::Unit(unit) => {
                let range = tpe::range(0.0, 1.0).map_err(|e| failed(&e))?;
                let mut optim: TpeOptimizer = builder.build(tpe::parzen_estimator(), range).map_err(|e| failed(&e))?;
                for &(v, loss) in told {
                    optim.tell(unit.to_unit(&[v])[0].min(BELOW_ONE), loss).map_err(|e| failed(&e))?;
                }
                let u = optim.ask(rng).map_err(|e| failed(&e))?;
                Ok(unit.point_at(&[u])[0])
            }
        }
    }
}

impl Propagator for Tpe {
    fn name(&self) -> &'static str {
        "TPE"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        check_same_space(&self.space, space, "TPE")?;
        // Failed evaluations carry an infinite loss: they say nothing about where the good points are.
        let evaluated: Vec<&Individual> = pool.iter_all().filter(|i| i.loss.is_finite()).collect();
        if evaluated.len() < self.config.startup.max(1) {
            return Ok(vec![Individual::new(space.sample(rng))]);
        }
        let values = self
            .axes
            .iter()
            .enumerate()
            .map(|(i, axis)| {
                let told: Vec<(Value, f64)> = evaluated.iter().map(|ind| (ind.values[i], ind.loss)).collect();
                self.draw(axis, &told, rng)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(vec![Individual::new(values)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;

    fn evaluated(space: &SearchSpace, rng: &mut PropRng, n: usize, loss: impl Fn(&[Value]) -> f64) -> Vec<Individual> {
        (0..n)
            .map(|_| {
                let mut i = Individual::new(space.sample(rng));
                i.loss = loss(&i.values);
                i
            })
            .collect()
    }

    fn space() -> SearchSpace {
        SearchSpace::builder()
            .log_float("lr", 1e-4, 1e-2)
            .int("layers", 2, 10)
            .categorical("act", &["relu", "sigmoid", "tanh"])
            .build()
            .unwrap()
    }

    /// Lower is better: a high learning rate, few layers, tanh.
    fn loss(v: &[Value]) -> f64 {
        let lr = -v[0].as_f64().log10(); // 2 (best) .. 4
        let tanh = if v[2] == Value::Cat(2) { 0.0 } else { 1.0 };
        lr + 0.1 * v[1].as_f64() + tanh
    }

    #[test]
    fn samples_uniformly_until_the_start_is_evaluated_then_breeds_where_the_good_points_are() {
        let s = space();
        let tpe = Tpe::new(&s, TpeConfig::default()).unwrap();
        let mut rng = worker_rng(7, 0);
        // Too few evaluated (failed ones do not count): random children, all in the space.
        let mut pool = evaluated(&s, &mut rng, 9, loss);
        pool.push(Individual::new(s.sample(&mut rng))); // loss +inf: a failure
        for _ in 0..50 {
            let child = tpe.propagate(&pool, &s, &mut rng).unwrap().remove(0);
            assert!(s.contains(&child.values));
        }
        // With 60 evaluated, children concentrate where the loss is low: compare with random.
        let pool = evaluated(&s, &mut rng, 60, loss);
        let mean = |children: &[Vec<Value>]| children.iter().map(|v| loss(v)).sum::<f64>() / children.len() as f64;
        let bred: Vec<Vec<Value>> =
            (0..200).map(|_| tpe.propagate(&pool, &s, &mut rng).unwrap().remove(0).values).collect();
        let random: Vec<Vec<Value>> = (0..200).map(|_| s.sample(&mut rng)).collect();
        assert!(bred.iter().all(|v| s.contains(v)));
        // Random children average about 3 + 0.6 + 0.67 = 4.3; the good 10 % sit near 2.5.
        assert!(mean(&bred) < mean(&random) - 0.8, "bred {:.3} random {:.3}", mean(&bred), mean(&random));
        let tanh = bred.iter().filter(|v| v[2] == Value::Cat(2)).count();
        assert!(tanh > 120, "tanh in {tanh} of 200 children");
    }

    #[test]
    fn a_value_at_the_upper_bound_counts() {
        let s = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        let tpe = Tpe::new(&s, TpeConfig { startup: 2, ..TpeConfig::default() }).unwrap();
        let mut pool: Vec<Individual> = (0..20)
            .map(|k| {
                let mut i = Individual::new(vec![Value::Float(k as f64 / 19.0)]);
                i.loss = 1.0 - k as f64 / 19.0; // best at x = 1, the bound
                i
            })
            .collect();
        pool.reverse();
        let mut rng = worker_rng(1, 0);
        let xs: Vec<f64> =
            (0..100).map(|_| tpe.propagate(&pool, &s, &mut rng).unwrap()[0].values[0].as_f64()).collect();
        assert!(xs.iter().all(|&x| (0.0..=1.0).contains(&x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!(mean > 0.8, "children average {mean:.3}; the best points sit at 1");
    }

    #[test]
    fn refuses_bad_settings_and_another_space() {
        let s = space();
        for config in [
            TpeConfig { gamma: 0.0, ..TpeConfig::default() },
            TpeConfig { gamma: 1.5, ..TpeConfig::default() },
            TpeConfig { gamma: f64::NAN, ..TpeConfig::default() },
            TpeConfig { candidates: 0, ..TpeConfig::default() },
        ] {
            assert!(matches!(Tpe::new(&s, config), Err(Error::InvalidPropagator(_))));
        }
        let tpe = Tpe::new(&s, TpeConfig::default()).unwrap();
        let other = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        let err = tpe.propagate(&Vec::<Individual>::new(), &other, &mut worker_rng(0, 0)).unwrap_err();
        assert!(err.to_string().contains("different search space"), "{err}");
    }
}
