//! The tree-structured Parzen estimator (TPE; Bergstra et al., NeurIPS 2011), Optuna's default
//! sampler, as a propagator: the island's evaluated individuals are split into the good ones and
//! the rest, each group becomes a density, and the child is the best of `candidates` draws from the
//! good density by the ratio of the good to the bad density.
//!
//! Three models. The default, *multivariate*, is Optuna 5's default `TPESampler` for one objective
//! (`multivariate` and `constant_liar` on): the good group is the best `min(ceil(gamma n), 25)` of
//! `n`, and each group becomes a mixture with one kernel per evaluation over all parameters at once
//! (on each parameter as wide as the evaluation's larger gap to its neighbours there) and a prior
//! kernel over the whole space ([`super::parzen`]), older evaluations weighed less; the child is the
//! best of `candidates` whole points drawn from the good mixture; the evaluations the island's other
//! workers are running count among the bad ones at the worst loss, so that workers breeding at once
//! do not all draw next to the same good point. *Univariate* (`multivariate=False`, Optuna's
//! default before 5.0, ours from 2026-11-26 to 2026-11-27) models and draws each parameter on its
//! own. *Independent* (the model before 2026-11-26, which checkpoints written then keep) models each
//! parameter with the `tpe` crate's estimators and a good share of `gamma`.
//!
//! It keeps no state: everything comes from the pool, so a resumed run breeds from what its
//! checkpoint holds, and several workers breeding from one island at once draw different
//! candidates from their own random streams. Until the pool holds `startup` evaluated individuals
//! it samples uniformly (a model of a handful of points steers nowhere).

use serde::{Deserialize, Serialize};
use tpe::{TpeOptimizer, TpeOptimizerBuilder};

use super::parzen::{Parzen, Point};
use crate::condition::Activity;
use crate::error::{Error, Result};
use crate::individual::Individual;
use crate::population::breed_key;
use crate::propagator::normalized::{ParamAxis, check_same_space, param_axes};
use crate::propagator::{Arity, Pool, Propagator};
use crate::rng::PropRng;
use crate::space::{SearchSpace, Value};

/// The knobs of [`Tpe`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpeConfig {
    /// Share of the evaluated individuals that make the good density (rounded up; at least one;
    /// the univariate and multivariate models take at most 25, as Optuna does).
    pub gamma: f64,
    /// Draws from the good density (per parameter, except in the multivariate model); the child
    /// takes the one the densities' ratio rates best. More: greedier.
    pub candidates: usize,
    /// Uniform random children until the pool holds this many evaluated individuals.
    pub startup: usize,
    /// How the densities are made. Absent from specs written before it existed: those keep
    /// [`TpeModel::Independent`].
    #[serde(default)]
    pub model: TpeModel,
}

/// The densities of [`Tpe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TpeModel {
    /// Each parameter on its own with the `tpe` crate's estimators: the model before 2026-11-26.
    #[default]
    Independent,
    /// Optuna's `TPESampler(multivariate=False, constant_liar=True)`: each parameter on its own, a
    /// kernel per evaluation as wide as its larger gap to its neighbours, a prior kernel, older
    /// evaluations weighed less, the island's running evaluations counted as bad ones.
    Univariate,
    /// Optuna 5's default `TPESampler()` for one objective (`multivariate=True`,
    /// `constant_liar=True`): one kernel per evaluation over all parameters at once, on each as wide
    /// as `Univariate`'s, the candidates drawn as whole points, the rest as `Univariate`.
    Multivariate,
}

impl TpeModel {
    /// Every model by the name specs and `--tpe-model` give it.
    pub const NAMES: [&'static str; 3] = ["univariate", "multivariate", "independent"];
}

impl Default for TpeConfig {
    /// Optuna 5's TPE: the multivariate model, the good 10 % (at most 25), 24 candidates, 10
    /// random individuals first.
    fn default() -> Self {
        TpeConfig { gamma: 0.1, candidates: 24, startup: 10, model: TpeModel::Multivariate }
    }
}

impl TpeConfig {
    /// The independent model with the settings it had as the default before 2026-11-26 (the
    /// good 25 %, 6 random individuals first; on the stand-in for the CNN search these beat 10 %
    /// and a start of 4, 8 or 10).
    pub fn independent() -> Self {
        TpeConfig { gamma: 0.25, candidates: 24, startup: 6, model: TpeModel::Independent }
    }
}

/// Independent TPE over a search space.
#[derive(Debug, Clone)]
pub struct Tpe {
    space: SearchSpace,
    /// Each parameter on its unit interval (log floats in `ln`, ints in equal bins) or as its choices.
    axes: Vec<ParamAxis>,
    config: TpeConfig,
    /// The space's conditions, when it has any: each group of parameters is modelled from the
    /// evaluations where it was active.
    activity: Option<Activity>,
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
        Ok(Tpe { space: space.clone(), axes, config, activity: space.activity() })
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

impl Tpe {
    /// A child of the univariate or multivariate model from the `evaluated` individuals and the
    /// `running` ones. In a conditional space each group of parameters active together is
    /// modelled from the evaluations where it was active (Optuna's `group` decomposition): the
    /// good and the bad ones are split over all evaluations, then each group's densities hold
    /// those of them that had it. The child draws every group (an inactive one's values stay
    /// dormant).
    fn optuna_child(&self, mut evaluated: Vec<&Individual>, running: &[&Individual], rng: &mut PropRng) -> Vec<Value> {
        // The best by loss, ties by identity, so that the split is the same on every worker. With
        // constraints, feasible ones first and infeasible ones by their violation, as Optuna's
        // constrained TPE splits.
        evaluated.sort_by(|a, b| a.rank_key().cmp(&b.rank_key()).then(a.id.cmp(&b.id)));
        // The good group's size counts finished evaluations only, as Optuna's does.
        let n = evaluated.len();
        let below = ((self.config.gamma * n as f64).ceil() as usize).clamp(1, 25).min(n);
        let (good, bad) = evaluated.split_at(below);
        // Each group in the order its individuals were bred: the weights favour the newest. The
        // running ones are the newest of all (they carry no start time yet), so they come last.
        let mut good = good.to_vec();
        let mut bad = bad.to_vec();
        good.sort_by_key(|i| breed_key(i));
        bad.sort_by_key(|i| breed_key(i));
        bad.extend(running.iter().copied());
        let Some(activity) = &self.activity else {
            let all: Vec<usize> = (0..self.axes.len()).collect();
            return self.values_at(&all, &self.group_child(&all, &good, &bad, rng));
        };
        // Every parameter is in one group.
        let mut child = vec![Value::Cat(0); self.axes.len()];
        for members in activity.groups() {
            let had = |i: &&Individual| activity.active(&i.values)[members[0]];
            let good: Vec<&Individual> = good.iter().copied().filter(had).collect();
            let bad: Vec<&Individual> = bad.iter().copied().filter(had).collect();
            let drawn = self.values_at(&members, &self.group_child(&members, &good, &bad, rng));
            for (&i, v) in members.iter().zip(drawn) {
                child[i] = v;
            }
        }
        child
    }

    /// The point of the parameters `members` drawn from the densities of `good` and `bad` on them.
    fn group_child(&self, members: &[usize], good: &[&Individual], bad: &[&Individual], rng: &mut PropRng) -> Point {
        let (good, bad) = (self.points_of(members, good), self.points_of(members, bad));
        let choices: Vec<usize> = members
            .iter()
            .filter_map(|&i| match &self.axes[i] {
                ParamAxis::Choices(n) => Some(*n),
                ParamAxis::Unit(_) => None,
            })
            .collect();
        if self.config.model == TpeModel::Multivariate {
            let numbers = members.len() - choices.len();
            let density = |group: &[Point]| Parzen::new(group, numbers, &choices);
            return self.best_candidate(&density(&good), &density(&bad), rng);
        }
        // Univariate: each parameter its own densities and its own best candidate.
        let (mut number, mut choice) = (0, 0);
        let mut child = Point { numbers: Vec::new(), choices: Vec::new() };
        for &i in members {
            let categorical = match &self.axes[i] {
                ParamAxis::Choices(m) => Some(*m),
                ParamAxis::Unit(_) => None,
            };
            let (at_number, at_choice) = (number, choice);
            let project = |p: &Point| match categorical {
                None => Point { numbers: vec![p.numbers[at_number]], choices: vec![] },
                Some(_) => Point { numbers: vec![], choices: vec![p.choices[at_choice]] },
            };
            let (numbers, choices) = match categorical {
                None => (1, vec![]),
                Some(m) => (0, vec![m]),
            };
            let density = |group: &[Point]| {
                let points: Vec<Point> = group.iter().map(project).collect();
                Parzen::new(&points, numbers, &choices)
            };
            let best = self.best_candidate(&density(&good), &density(&bad), rng);
            match categorical {
                None => {
                    child.numbers.push(best.numbers[0]);
                    number += 1;
                }
                Some(_) => {
                    child.choices.push(best.choices[0]);
                    choice += 1;
                }
            }
        }
        child
    }

    /// The best of [`TpeConfig::candidates`] draws from `good` by the ratio of `good` to `bad`.
    fn best_candidate(&self, good: &Parzen, bad: &Parzen, rng: &mut PropRng) -> Point {
        (0..self.config.candidates)
            .map(|_| good.sample(rng))
            .map(|x| (good.log_pdf(&x) - bad.log_pdf(&x), x))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .expect("at least one candidate")
            .1
    }

    /// The individuals' values of the parameters `members` as the Parzen estimator's points.
    fn points_of(&self, members: &[usize], group: &[&Individual]) -> Vec<Point> {
        group.iter().map(|i| self.point_of(members, &i.values)).collect()
    }

    /// `values` of the parameters `members` as the Parzen estimator's point: numeric parameters on
    /// their unit interval.
    fn point_of(&self, members: &[usize], values: &[Value]) -> Point {
        let mut point = Point { numbers: Vec::new(), choices: Vec::new() };
        for &i in members {
            match &self.axes[i] {
                ParamAxis::Unit(unit) => point.numbers.push(unit.to_unit(&[values[i]])[0]),
                ParamAxis::Choices(n) => point.choices.push(match values[i] {
                    Value::Cat(c) => (c as usize).min(n - 1),
                    other => (other.as_f64().max(0.0) as usize).min(n - 1),
                }),
            }
        }
        point
    }

    /// The values of the parameters `members` at `point`, each inside its parameter's domain.
    fn values_at(&self, members: &[usize], point: &Point) -> Vec<Value> {
        let (mut numbers, mut choices) = (point.numbers.iter(), point.choices.iter());
        members
            .iter()
            .map(|&i| match &self.axes[i] {
                ParamAxis::Unit(unit) => unit.point_at(&[*numbers.next().expect("one per numeric axis")])[0],
                ParamAxis::Choices(_) => Value::Cat(*choices.next().expect("one per categorical axis") as u32),
            })
            .collect()
    }
}

impl Propagator for Tpe {
    fn name(&self) -> &'static str {
        "TPE"
    }
    /// Optuna's models count the island's running evaluations among the bad ones.
    fn models_running(&self) -> bool {
        self.config.model != TpeModel::Independent
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
        if self.config.model != TpeModel::Independent {
            // A running child outside the space (a mismatched message) is no evidence of anything.
            let running: Vec<&Individual> = pool.iter_running().filter(|i| self.space.contains(&i.values)).collect();
            return Ok(vec![Individual::new(self.optuna_child(evaluated, &running, rng))]);
        }
        let values = self
            .axes
            .iter()
            .enumerate()
            .map(|(i, axis)| {
                // In a conditional space, the evaluations where the parameter was active.
                let told: Vec<(Value, f64)> = evaluated
                    .iter()
                    .filter(|ind| self.activity.as_ref().is_none_or(|a| a.active(&ind.values)[i]))
                    .map(|ind| (ind.values[i], ind.loss))
                    .collect();
                if told.is_empty() {
                    return Ok(self.space.sample_param(i, rng));
                }
                self.draw(axis, &told, rng)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(vec![Individual::new(values)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propagator::WithPeers;
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

    /// A branch picks which float counts, both branches hold good evaluations: each model draws
    /// b's float near b's best value, although its dormant values in the good evaluations of
    /// branch a (at the other end of its range) would pull a model that took them for values
    /// (every model did, without its groups).
    #[test]
    fn a_conditional_space_is_modelled_group_by_group() {
        let s = crate::propagator::test_pools::two_branches();
        let loss = |v: &[Value]| match v[0] {
            Value::Cat(0) => 0.03 + 0.1 * v[1].as_f64(),
            _ => 0.04 + (v[2].as_f64() - 0.2).powi(2),
        };
        for model in [TpeModel::Multivariate, TpeModel::Univariate, TpeModel::Independent] {
            let tpe = Tpe::new(&s, TpeConfig { model, ..TpeConfig::default() }).unwrap();
            let mut rng = worker_rng(3, 0);
            let mut pool = evaluated(&s, &mut rng, 60, loss);
            for ind in &mut pool {
                // The good evaluations of branch a carry b's float dormant far from b's optimum
                // (as a lineage of good a's would), the others a uniform one.
                if ind.values[0] == Value::Cat(0) && ind.values[1].as_f64() < 0.3 {
                    ind.values[2] = Value::Float(0.95);
                }
            }
            let children: Vec<Vec<Value>> =
                (0..40).map(|_| tpe.propagate(&pool, &s, &mut rng).unwrap().remove(0).values).collect();
            assert!(children.iter().all(|c| s.contains(c)));
            // Every child draws b's float from b's group (dormant where the child is in branch a).
            let xb: Vec<f64> = children.iter().map(|c| c[2].as_f64()).collect();
            let near = xb.iter().filter(|x| (**x - 0.2).abs() < 0.25).count();
            assert!(near >= 20, "{model:?}: {near} of 40 near 0.2: {xb:?}");
        }
    }

    /// Both of Optuna's models, the default multivariate one and the univariate one, on a space
    /// of a log float, an int and a categorical.
    #[test]
    fn samples_uniformly_until_the_start_is_evaluated_then_breeds_where_the_good_points_are() {
        let s = space();
        for model in [TpeModel::Multivariate, TpeModel::Univariate] {
            let tpe = Tpe::new(&s, TpeConfig { model, ..TpeConfig::default() }).unwrap();
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
            let (bred_mean, random_mean) = (mean(&bred), mean(&random));
            assert!(bred_mean < random_mean - 0.8, "{model:?}: bred {bred_mean:.3} random {random_mean:.3}");
            let tanh = bred.iter().filter(|v| v[2] == Value::Cat(2)).count();
            assert!(tanh > 120, "{model:?}: tanh in {tanh} of 200 children");
        }
    }

    /// The old independent model breeds where the good points are too.
    #[test]
    fn the_independent_model_breeds_where_the_good_points_are_too() {
        let s = space();
        let tpe = Tpe::new(&s, TpeConfig::independent()).unwrap();
        assert!(!tpe.models_running());
        let mut rng = worker_rng(7, 1);
        let pool = evaluated(&s, &mut rng, 60, loss);
        let bred: f64 = (0..200).map(|_| loss(&tpe.propagate(&pool, &s, &mut rng).unwrap()[0].values)).sum();
        let random: f64 = (0..200).map(|_| loss(&s.sample(&mut rng))).sum();
        assert!(bred < random - 0.8 * 200.0, "bred {bred:.1} random {random:.1}");
    }

    /// Other workers running the very child a worker would breed count as bad evidence there
    /// (Optuna's constant liar): from the same random stream, the next child goes elsewhere.
    #[test]
    fn running_evaluations_are_lies_at_the_worst_loss_that_push_children_away() {
        let s = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        let bowl = |v: &[Value]| (v[0].as_f64() - 0.3).powi(2) + (v[1].as_f64() - 0.6).powi(2);
        let done = evaluated(&s, &mut worker_rng(8, 0), 40, bowl);
        for model in [TpeModel::Univariate, TpeModel::Multivariate] {
            let tpe = Tpe::new(&s, TpeConfig { model, ..TpeConfig::default() }).unwrap();
            assert!(tpe.models_running());
            let breed = |running: Vec<Individual>, k: u64| {
                let pool = WithPeers { pool: &done, peers: &running };
                tpe.propagate(&pool, &s, &mut worker_rng(9, k)).unwrap().remove(0).values
            };
            let mut moved = 0;
            for k in 0..50 {
                let alone = breed(vec![], k);
                assert_eq!(breed(vec![], k), alone, "same seed, same child");
                // Running children outside the space are ignored.
                assert_eq!(breed(vec![Individual::new(vec![Value::Float(7.0), Value::Float(0.5)])], k), alone);
                let next = breed(vec![Individual::new(alone.clone()); 4], k);
                assert!(s.contains(&next));
                let apart = (next[0].as_f64() - alone[0].as_f64()).hypot(next[1].as_f64() - alone[1].as_f64());
                moved += usize::from(apart > 0.01);
            }
            assert!(moved >= 40, "{model:?}: {moved} of 50 children moved away from four workers running them");
        }
    }

    #[test]
    fn a_spec_written_before_the_models_keeps_the_independent_one() {
        let old: TpeConfig = serde_json::from_str(r#"{"gamma":0.25,"candidates":24,"startup":6}"#).unwrap();
        assert_eq!(old, TpeConfig::independent());
        let now = serde_json::to_string(&TpeConfig::default()).unwrap();
        assert!(now.contains(r#""model":"multivariate""#), "{now}");
        assert_eq!(serde_json::from_str::<TpeConfig>(&now).unwrap(), TpeConfig::default());
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
