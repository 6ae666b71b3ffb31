//! Random initialisation.

use rand::RngExt;

use crate::error::{Error, Result};
use crate::individual::Individual;
use crate::propagator::{Arity, Pool, Propagator, check_probability, take_parents};
use crate::rng::PropRng;
use crate::space::SearchSpace;

/// A uniformly random point of the space. With `parents = 0` it always samples; with `parents = 1`
/// it replaces the parent by a random point with probability `probability`, else passes it on.
#[derive(Debug, Clone)]
pub struct InitUniform {
    parents: usize,
    probability: f64,
}

impl InitUniform {
    /// A fresh random individual every time (no parents).
    pub fn fresh() -> Self {
        InitUniform { parents: 0, probability: 1.0 }
    }

    /// Replace the one parent by a random point with probability `probability`.
    pub fn replacing(probability: f64) -> Result<Self> {
        Ok(InitUniform { parents: 1, probability: check_probability("random init probability", probability)? })
    }

    /// General form: `parents` must be 0 or 1.
    pub fn new(parents: usize, probability: f64) -> Result<Self> {
        if parents > 1 {
            return Err(Error::InvalidPropagator(format!("InitUniform takes 0 or 1 parents, got {parents}")));
        }
        Ok(InitUniform { parents, probability: check_probability("random init probability", probability)? })
    }
}

impl Propagator for InitUniform {
    fn name(&self) -> &'static str {
        "InitUniform"
    }
    fn parents(&self) -> Arity {
        Arity::Exact(self.parents)
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        if self.parents == 0 {
            return Ok(vec![Individual::new(space.sample(rng))]);
        }
        let parent = take_parents(self.name(), pool, 1)?.remove(0);
        if rng.random_bool(self.probability) {
            Ok(vec![Individual::new(space.sample(rng))])
        } else {
            Ok(vec![parent.child()])
        }
    }
}
