//! PB2's explore (Parker-Holder et al. 2020, "Provably efficient online hyperparameter
//! optimization with population-based bandits"): where population-based training multiplies the
//! exploiting member's hyperparameters by 0.8 or 1.2, PB2 picks them with a model of what each
//! interval of training gained. With the few members a cluster's GPUs allow (4 to 16), random
//! perturbations move too little and too blindly: a population whose best learning rate is a tenth
//! of the useful one gets there in a dozen lucky steps, if ever; the model sees that the intervals
//! trained at larger rates gained more and goes there at once.
//!
//! The model: a Matérn-5/2 process (bayes/matern.rs) over the parameters' unit coordinates and the
//! training step at which the interval began (so that gains of early and late intervals, which
//! differ in size, inform each other as far as the data says), fitted to each continuation's change
//! of loss (its loss minus its parent's: negative is a gain), standardized. The island's running
//! intervals enter as fantasies (each believed to gain what the model predicts), so that members
//! exploring at once spread out. The child: the lower confidence bound (the mean gain plus `KAPPA`
//! standard deviations of optimism) maximized at the step the child starts from, over the floats
//! and ints not held fixed, with categoricals, fixed parameters and the step held at the template's
//! values (the categoricals PBT's rule chose). Too little data (fewer than [`MIN_OBSERVATIONS`]
//! continuations) or a model that does not fit: `None`, and the caller perturbs as PBT does.

use crate::bayes::acquisition::{Bounds, CoordinateKind, LowerConfidence, maximize};
use crate::bayes::matern::{Coordinates, MaternGp};
use crate::bayes::stats::standardized;
use crate::error::Result;
use crate::individual::Individual;
use crate::rng::PropRng;
use crate::space::{Domain, SearchSpace, Value};

use super::gp_coordinates::ModelCoordinates;
use crate::propagator::Pool;
use crate::propagator::normalized::param_axes;

/// Continuations the model needs before it picks.
pub const MIN_OBSERVATIONS: usize = 4;
/// The latest continuations it models at most (its fit grows with their cube).
const MAX_OBSERVATIONS: usize = 128;
/// Standard deviations of optimism in the bound (PB2's experiments use about 2).
const KAPPA: f64 = 2.0;
/// Uniform candidates scored before the local searches.
const CANDIDATES: usize = 256;
/// Local searches from the best candidates.
const STARTS: usize = 4;

/// The model-based explore of [`Pbt`](crate::propagator::Pbt) (`explore = "pb2"`).
#[derive(Debug, Clone)]
pub(crate) struct Pb2 {
    space: SearchSpace,
    model: ModelCoordinates,
    /// Per parameter: whether the explore may move it (a float or int not held fixed).
    free: Vec<bool>,
}

/// One interval of a member: its parameters' coordinates, the step it began at, what it gained.
struct Interval {
    x: Vec<f64>,
    step: f64,
    change: f64,
}

impl Pb2 {
    /// `kept[i]`: parameter `i` is held fixed (PBT's `fixed`).
    pub(crate) fn new(space: &SearchSpace, kept: &[bool]) -> Result<Self> {
        let model = ModelCoordinates::new(space, &param_axes(space, "PB2")?);
        let free = space
            .params()
            .iter()
            .enumerate()
            .map(|(i, p)| !kept[i] && !matches!(p.domain, Domain::Categorical { .. }))
            .collect();
        Ok(Pb2 { space: space.clone(), model, free })
    }

    /// The hyperparameters for a member that continues a state at `step`: `template` (the donor's
    /// values, categoricals already explored) with its floats and ints picked by the model; `None`
    /// without enough data (see the module documentation). `budget`: PBT's steps per member, the
    /// scale of the step coordinate when known.
    pub(crate) fn pick(
        &self,
        template: &[Value],
        step: u64,
        budget: Option<u64>,
        pool: &dyn Pool,
        rng: &mut PropRng,
    ) -> Option<Vec<Value>> {
        if !self.free.iter().any(|&f| f) {
            return None;
        }
        let observed = self.intervals(pool);
        if observed.len() < MIN_OBSERVATIONS {
            return None;
        }
        let latest = observed.iter().map(|o| o.step).fold(step as f64, f64::max);
        let scale = budget.map_or(latest.max(1.0), |b| (b as f64).max(1.0));
        let with_step = |x: &[f64], s: f64| {
            let mut x = x.to_vec();
            x.push(s / scale);
            x
        };
        let mut xs: Vec<Vec<f64>> = observed.iter().map(|o| with_step(&o.x, o.step)).collect();
        let mut ys = standardized(&observed.iter().map(|o| o.change).collect::<Vec<f64>>());
        let mut categorical = self.model.coordinates().categorical;
        categorical.push(false);
        let coordinates = Coordinates::plain(categorical);
        let fitted = MaternGp::fit(coordinates.clone(), xs.clone(), ys.clone())?;
        let running: Vec<Vec<f64>> = pool
            .iter_running()
            .filter_map(|ind| {
                let lineage = ind.lineage.as_deref()?;
                (lineage.parent.is_some() && self.space.contains(&ind.values))
                    .then(|| with_step(&self.model.encode(&ind.values), lineage.step as f64))
            })
            .collect();
        let gp = if running.is_empty() {
            fitted
        } else {
            ys.extend(running.iter().map(|x| fitted.predict(x).0));
            xs.extend(running);
            MaternGp::with_hyper(coordinates, fitted.hyper().clone(), xs, ys)?
        };

        let start = with_step(&self.model.encode(template), step as f64);
        let mut kinds: Vec<CoordinateKind> = self
            .model
            .kinds()
            .iter()
            .zip(&self.free)
            .map(|(&kind, &free)| if free { kind } else { CoordinateKind::Held })
            .collect();
        kinds.push(CoordinateKind::Held);
        let mut candidates = vec![start.clone()];
        candidates.extend((0..CANDIDATES).map(|_| {
            let drawn = self.model.encode(&self.space.sample(rng));
            let mut x = start.clone();
            for (j, &free) in self.free.iter().enumerate() {
                if free {
                    x[j] = drawn[j];
                }
            }
            x
        }));
        let acquisition = LowerConfidence { gp: &gp, kappa: KAPPA };
        let x = maximize(&acquisition, &kinds, &Bounds::unit(kinds.len()), &candidates, &[start], STARTS, &[], rng);
        let picked = self.model.decode(&x[..template.len()]);
        // Held parameters come back exactly as given (a float's round trip through its unit
        // coordinate may move its last bits).
        Some(template.iter().zip(picked).zip(&self.free).map(|((&t, p), &free)| if free { p } else { t }).collect())
    }

    /// The island's latest continuations with a finite loss whose parent's loss is finite too.
    fn intervals(&self, pool: &dyn Pool) -> Vec<Interval> {
        pool.iter_latest_bred()
            .filter(|ind| ind.failure.is_none() && ind.loss.is_finite() && self.space.contains(&ind.values))
            .filter_map(|ind| {
                let lineage = ind.lineage.as_deref()?;
                let parent: Individual = pool.stored(lineage.parent.as_ref()?)?;
                (parent.failure.is_none() && parent.loss.is_finite()).then(|| Interval {
                    x: self.model.encode(&ind.values),
                    step: lineage.step as f64,
                    change: ind.loss - parent.loss,
                })
            })
            .take(MAX_OBSERVATIONS)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::individual::IndividualId;
    use crate::lineage::Lineage;
    use crate::population::Population;
    use crate::rng::worker_rng;

    fn space() -> SearchSpace {
        SearchSpace::builder()
            .log_float("lr", 1e-4, 1e-2)
            .float("gamma", 0.5, 0.999)
            .int("layers", 2, 10)
            .categorical("act", &["relu", "tanh"])
            .build()
            .unwrap()
    }

    /// `layers` held fixed, as PBT's `fixed` holds a network's shape.
    fn pb2() -> Pb2 {
        Pb2::new(&space(), &[false, false, true, false]).unwrap()
    }

    fn values(lr: f64, gamma: f64) -> Vec<Value> {
        vec![Value::Float(lr), Value::Float(gamma), Value::Int(4), Value::Cat(1)]
    }

    /// A member of `worker` trained `generations` intervals of one step at `lr`, each gaining
    /// `gain(lr)` (its loss falls by it), from a fresh start at loss 2.5.
    fn member(worker: u32, generations: u64, lr: f64, gain: impl Fn(f64) -> f64) -> Vec<Individual> {
        let mut loss = 2.5;
        (0..generations)
            .map(|g| {
                let mut ind = Individual::new(values(lr, 0.9));
                ind.id = IndividualId { island: 0, worker, generation: g };
                if g > 0 {
                    loss -= gain(lr);
                }
                ind.loss = loss;
                ind.lineage = Some(Box::new(Lineage {
                    parent: g.checked_sub(1).map(|p| IndividualId { generation: p, ..ind.id }),
                    step: g,
                    steps: 1,
                    exploited: false,
                }));
                ind
            })
            .collect()
    }

    fn population(members: Vec<Vec<Individual>>) -> Population {
        let mut p = Population::new();
        for ind in members.into_iter().flatten() {
            p.insert(ind);
        }
        p
    }

    fn lr(values: &[Value]) -> f64 {
        let Value::Float(lr) = values[0] else { panic!("{values:?}") };
        lr
    }

    /// The pick goes where the intervals gained most: with members across the whole range of
    /// rates, next to the rate that gained most, one way or the other (a model that only sought
    /// what it knows least would pick the same for both). Held parameters and the template's
    /// categorical stay, and the same seed picks the same.
    #[test]
    fn the_pick_follows_what_the_intervals_gained() {
        let rates = [1e-4, 3.2e-4, 1e-3, 3.2e-3, 1e-2];
        let pick = |peak: f64, seed| {
            let gain = |lr: f64| 0.3 - 0.1 * (lr.log10() - peak.log10()).abs();
            let members = rates.iter().enumerate().map(|(w, &r)| member(w as u32, 4, r, gain)).collect();
            let pool = population(members);
            pb2().pick(&values(1e-3, 0.9), 4, Some(8), &pool, &mut worker_rng(seed, 0)).unwrap()
        };
        let (low, high) = (pick(3.2e-4, 1), pick(3.2e-3, 1));
        assert!(lr(&low) > 1.5e-4 && lr(&low) < 6e-4, "{low:?}");
        assert!(lr(&high) > 1.5e-3 && lr(&high) < 6e-3, "{high:?}");
        for child in [&low, &high] {
            assert!(space().contains(child));
            assert_eq!((child[2], child[3]), (Value::Int(4), Value::Cat(1)), "held and categorical kept");
        }
        assert_eq!(low, pick(3.2e-4, 1), "same seed, same pick");
    }

    /// Where the members trained at rates far below the useful one and the larger gained more, the
    /// pick goes past all of them, where perturbing by 1.2 would take many exploits.
    #[test]
    fn a_gain_that_grows_with_the_rate_sends_the_pick_past_every_member() {
        let gain = |lr: f64| 0.1 * (lr.log10() + 4.0);
        let members = [1e-4, 3e-4, 6e-4, 1e-3].iter().enumerate().map(|(w, &r)| member(w as u32, 4, r, gain)).collect();
        let pool = population(members);
        let child = pb2().pick(&values(1e-3, 0.9), 4, Some(8), &pool, &mut worker_rng(2, 0)).unwrap();
        assert!(lr(&child) > 3e-3, "{child:?}");
    }

    /// Without four continuations to model, no pick (the caller perturbs); with only held and
    /// categorical parameters, nothing to pick.
    #[test]
    fn too_little_data_or_nothing_free_picks_nothing() {
        let gain = |_: f64| 0.1;
        let pool = population(vec![member(0, 3, 1e-3, gain), member(1, 1, 1e-3, gain)]);
        assert!(pb2().pick(&values(1e-3, 0.9), 2, None, &pool, &mut worker_rng(1, 0)).is_none());
        let pool = population(vec![member(0, 5, 1e-3, gain)]);
        assert!(pb2().pick(&values(1e-3, 0.9), 5, None, &pool, &mut worker_rng(1, 0)).is_some());
        let held = Pb2::new(&space(), &[true, true, true, false]).unwrap();
        assert!(held.pick(&values(1e-3, 0.9), 5, None, &pool, &mut worker_rng(1, 0)).is_none());
    }

    /// Intervals that all gained the same: the bound is all optimism, highest far from the data;
    /// a member running there now (a fantasy) sends the next pick elsewhere.
    #[test]
    fn a_running_interval_sends_the_next_pick_elsewhere() {
        let gain = |_: f64| 0.1;
        let members = [1e-4, 2e-4, 3e-4, 4e-4].iter().enumerate().map(|(w, &r)| member(w as u32, 3, r, gain)).collect();
        let mut pool = population(members);
        let template = values(1e-3, 0.9);
        let first = pb2().pick(&template, 3, Some(8), &pool, &mut worker_rng(4, 0)).unwrap();
        let mut running = Individual::new(first.clone());
        running.id = IndividualId { island: 0, worker: 5, generation: 3 };
        running.lineage = Some(Box::new(Lineage {
            parent: Some(IndividualId { island: 0, worker: 0, generation: 2 }),
            step: 3,
            steps: 1,
            exploited: true,
        }));
        pool.start_running(running);
        let second = pb2().pick(&template, 3, Some(8), &pool, &mut worker_rng(4, 0)).unwrap();
        let unit = |v: &[Value]| {
            ((lr(v).log10() + 4.0) / 2.0, if let Value::Float(g) = v[1] { (g - 0.5) / 0.499 } else { 0.0 })
        };
        let (a, b) = (unit(&first), unit(&second));
        let distance = ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt();
        assert!(distance > 0.2, "{first:?} then {second:?}");
    }
}
