//! Selections: choose individuals from a pool without changing them.

use crate::error::{Error, Result};
use crate::individual::Individual;
use crate::propagator::{Arity, Pool, Propagator};
use crate::rng::PropRng;
use crate::space::SearchSpace;

fn need(name: &'static str, pool: &dyn Pool, n: usize) -> Result<()> {
    if pool.size() < n {
        return Err(Error::NotEnoughParents { name, needed: n, got: pool.size() });
    }
    Ok(())
}

/// The `n` individuals with the lowest loss.
#[derive(Debug, Clone)]
pub struct SelectMin(pub usize);

/// The `n` individuals with the highest loss.
#[derive(Debug, Clone)]
pub struct SelectMax(pub usize);

/// `n` distinct individuals chosen uniformly at random.
#[derive(Debug, Clone)]
pub struct SelectUniform(pub usize);

impl Propagator for SelectMin {
    fn name(&self) -> &'static str {
        "SelectMin"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        self.0
    }
    fn propagate(&self, pool: &dyn Pool, _: &SearchSpace, _: &mut PropRng) -> Result<Vec<Individual>> {
        need(self.name(), pool, self.0)?;
        Ok(pool.best(self.0))
    }
}

impl Propagator for SelectMax {
    fn name(&self) -> &'static str {
        "SelectMax"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        self.0
    }
    fn propagate(&self, pool: &dyn Pool, _: &SearchSpace, _: &mut PropRng) -> Result<Vec<Individual>> {
        need(self.name(), pool, self.0)?;
        Ok(pool.worst(self.0))
    }
}

impl Propagator for SelectUniform {
    fn name(&self) -> &'static str {
        "SelectUniform"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        self.0
    }
    fn propagate(&self, pool: &dyn Pool, _: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        need(self.name(), pool, self.0)?;
        Ok(pool.sample(self.0, rng))
    }
}
