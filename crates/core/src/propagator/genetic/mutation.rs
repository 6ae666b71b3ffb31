//! Mutations: one parent in, one child out, each applied with its own probability.

use rand::RngExt;

use crate::error::{Error, Result};
use crate::individual::Individual;
use crate::propagator::{Arity, Pool, Propagator, check_probability, take_parents};
use crate::rng::PropRng;
use crate::space::{Domain, SearchSpace};

/// Re-samples `points` distinct randomly chosen parameters uniformly within their domains.
#[derive(Debug, Clone)]
pub struct PointMutation {
    points: usize,
    probability: f64,
}

impl PointMutation {
    /// Mutate `points` parameters with probability `probability`.
    pub fn new(points: usize, probability: f64) -> Result<Self> {
        if points == 0 {
            return Err(Error::InvalidPropagator("PointMutation needs points >= 1".into()));
        }
        Ok(PointMutation { points, probability: check_probability("mutation probability", probability)? })
    }
}

/// Re-samples a number of parameters drawn uniformly from `[min_points, max_points]`.
#[derive(Debug, Clone)]
pub struct RandomPointMutation {
    min_points: usize,
    max_points: usize,
    probability: f64,
}

impl RandomPointMutation {
    /// Mutate between `min_points` and `max_points` parameters with probability `probability`.
    pub fn new(min_points: usize, max_points: usize, probability: f64) -> Result<Self> {
        if min_points == 0 || min_points > max_points {
            return Err(Error::InvalidPropagator(format!(
                "RandomPointMutation needs 1 <= min_points <= max_points, got {min_points}..{max_points}"
            )));
        }
        let probability = check_probability("mutation probability", probability)?;
        Ok(RandomPointMutation { min_points, max_points, probability })
    }
}

/// Adds Gaussian noise with sigma = `sigma_factor` x range to `points` float parameters, clipped
/// to bounds (log-scale floats are perturbed in log space). With [`IntervalMutationNormal::multi_scale`]
/// each child draws its sigma log-uniformly between `sigma_factor` and `decades` powers of ten below.
#[derive(Debug, Clone)]
pub struct IntervalMutationNormal {
    sigma_factor: f64,
    points: usize,
    probability: f64,
    decades: f64,
}

impl IntervalMutationNormal {
    /// Perturb `points` float parameters by `sigma_factor` x their range, with probability `probability`.
    pub fn new(sigma_factor: f64, points: usize, probability: f64) -> Result<Self> {
        if !(sigma_factor.is_finite() && sigma_factor > 0.0) || points == 0 {
            return Err(Error::InvalidPropagator(format!(
                "IntervalMutationNormal needs sigma_factor > 0 and points >= 1, got {sigma_factor}, {points}"
            )));
        }
        let probability = check_probability("mutation probability", probability)?;
        Ok(IntervalMutationNormal { sigma_factor, points, probability, decades: 0.0 })
    }

    /// Steps at every scale from `sigma_factor` down to `sigma_factor` x 10^-`decades`, drawn
    /// log-uniformly per child: large steps move between basins, small ones refine a point that a
    /// fixed step would keep jumping over (0: the fixed step).
    pub fn multi_scale(mut self, decades: f64) -> Result<Self> {
        if !(decades.is_finite() && decades >= 0.0) {
            return Err(Error::InvalidPropagator(format!(
                "IntervalMutationNormal needs step decades >= 0, got {decades}"
            )));
        }
        self.decades = decades;
        Ok(self)
    }
}

/// The parameters a mutation may change: the child's active ones. In a conditional space a change
/// to an inactive parameter changes nothing that is evaluated, and the child repeated its parent
/// (a genetic run of 40 evaluations over an optimizer with its own parameters repeated 10).
fn mutable(child: &Individual, space: &SearchSpace, kind: impl Fn(&Domain) -> bool) -> Vec<usize> {
    let active = space.active(&child.values);
    (0..space.len()).filter(|&i| active[i] && kind(&space.params()[i].domain)).collect()
}

fn resample_points(child: &mut Individual, space: &SearchSpace, n: usize, rng: &mut PropRng) {
    let params = mutable(child, space, |_| true);
    let n = n.min(params.len());
    for k in rand::seq::index::sample(rng, params.len(), n) {
        let i = params[k];
        child.values[i] = space.sample_param(i, rng);
    }
}

macro_rules! one_to_one {
    ($ty:ty, $name:literal, |$self_:ident, $child:ident, $space:ident, $rng:ident| $body:block) => {
        impl Propagator for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn parents(&self) -> Arity {
                Arity::Exact(1)
            }
            fn offspring(&self) -> usize {
                1
            }
            fn propagate(
                &self,
                pool: &dyn Pool,
                $space: &SearchSpace,
                $rng: &mut PropRng,
            ) -> Result<Vec<Individual>> {
                let $self_ = self;
                let mut $child = take_parents($name, pool, 1)?[0].child();
                if $rng.random_bool($self_.probability) $body
                Ok(vec![$child])
            }
        }
    };
}

one_to_one!(PointMutation, "PointMutation", |s, child, space, rng| {
    resample_points(&mut child, space, s.points, rng);
});

one_to_one!(RandomPointMutation, "RandomPointMutation", |s, child, space, rng| {
    let n = rng.random_range(s.min_points..=s.max_points);
    resample_points(&mut child, space, n, rng);
});

one_to_one!(IntervalMutationNormal, "IntervalMutationNormal", |s, child, space, rng| {
    let floats = mutable(&child, space, |d| matches!(d, Domain::Float { .. }));
    let n = s.points.min(floats.len());
    // No draw for the fixed step, so that it breeds what it always bred from a seed.
    let sigma =
        if s.decades > 0.0 { s.sigma_factor * 10f64.powf(-rng.random_range(0.0..s.decades)) } else { s.sigma_factor };
    for k in rand::seq::index::sample(rng, floats.len(), n) {
        let i = floats[k];
        child.values[i] = space.perturb(i, child.values[i], sigma, rng);
    }
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;
    use crate::space::Value;

    /// `xa` is active in branch a, `xb` in branch b: a parent of branch a keeps its `xb` under
    /// every mutation, which would otherwise give a child evaluated exactly as its parent.
    #[test]
    fn mutations_change_active_parameters_only() {
        let space = crate::propagator::test_pools::two_branches();
        let mut parent = Individual::new(vec![Value::Cat(0), Value::Float(0.5), Value::Float(0.5)]);
        parent.loss = 1.0;
        let mutations: Vec<Box<dyn Propagator>> = vec![
            Box::new(PointMutation::new(1, 1.0).unwrap()),
            Box::new(RandomPointMutation::new(1, 1, 1.0).unwrap()),
            Box::new(IntervalMutationNormal::new(0.1, 1, 1.0).unwrap()),
        ];
        let mut rng = worker_rng(0, 0);
        for m in &mutations {
            for _ in 0..200 {
                let child = m.propagate(&vec![parent.clone()], &space, &mut rng).unwrap().remove(0);
                assert_eq!(child.values[2], parent.values[2], "{}: the inactive xb changed", m.name());
            }
        }
    }
}
