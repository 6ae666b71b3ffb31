//! Crossovers: several parents in, one child out, gene by gene.

use rand::RngExt;

use crate::error::{Error, Result};
use crate::individual::Individual;
use crate::propagator::{Arity, Pool, Propagator, check_probability, take_parents};
use crate::rng::PropRng;
use crate::space::SearchSpace;

/// Two parents; each gene comes from parent 1 with probability `relative_parent_contribution`.
/// Applied with probability `probability` (otherwise the child is a copy of parent 1). Unlike the
/// reference's default propagator, the crossover probability really is a probability.
#[derive(Debug, Clone)]
pub struct CrossoverUniform {
    relative_parent_contribution: f64,
    probability: f64,
}

impl CrossoverUniform {
    /// A uniform crossover.
    pub fn new(relative_parent_contribution: f64, probability: f64) -> Result<Self> {
        let c = relative_parent_contribution;
        if !(c > 0.0 && c < 1.0) {
            return Err(Error::InvalidPropagator(format!(
                "CrossoverUniform: relative parent contribution must be in (0, 1), got {c}"
            )));
        }
        Ok(CrossoverUniform {
            relative_parent_contribution: c,
            probability: check_probability("crossover probability", probability)?,
        })
    }
}

/// Any number (at least 2) of parents; each gene from a uniformly chosen parent.
#[derive(Debug, Clone)]
pub struct CrossoverMultiple {
    probability: f64,
}

impl CrossoverMultiple {
    /// A multi-parent crossover applied with probability `probability`.
    pub fn new(probability: f64) -> Result<Self> {
        Ok(CrossoverMultiple { probability: check_probability("crossover probability", probability)? })
    }
}

/// Two parents; each gene comes from the better parent with a probability that grows with the loss
/// difference: `P(parent 2) = 1 / (1 + exp((loss2 - loss1) / temperature))`.
#[derive(Debug, Clone)]
pub struct CrossoverSigmoid {
    temperature: f64,
    probability: f64,
}

impl CrossoverSigmoid {
    /// A sigmoid crossover with the given temperature (> 0).
    pub fn new(temperature: f64, probability: f64) -> Result<Self> {
        if !(temperature.is_finite() && temperature > 0.0) {
            return Err(Error::InvalidPropagator(format!(
                "CrossoverSigmoid: temperature must be > 0, got {temperature}"
            )));
        }
        Ok(CrossoverSigmoid { temperature, probability: check_probability("crossover probability", probability)? })
    }

    fn p_second(&self, l1: f64, l2: f64) -> f64 {
        let d = (l2 - l1) / self.temperature;
        if d.is_nan() { 0.5 } else { 1.0 / (1.0 + d.exp()) }
    }
}

impl Propagator for CrossoverUniform {
    fn name(&self) -> &'static str {
        "CrossoverUniform"
    }
    fn parents(&self) -> Arity {
        Arity::Exact(2)
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(&self, pool: &dyn Pool, _: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        let p = take_parents(self.name(), pool, 2)?;
        let mut child = p[0].child();
        if rng.random_bool(self.probability) {
            for (v, other) in child.values.iter_mut().zip(&p[1].values) {
                if !rng.random_bool(self.relative_parent_contribution) {
                    *v = *other;
                }
            }
        }
        Ok(vec![child])
    }
}

impl Propagator for CrossoverMultiple {
    fn name(&self) -> &'static str {
        "CrossoverMultiple"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(&self, pool: &dyn Pool, _: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        let p = pool.to_vec();
        if p.len() < 2 {
            return Err(Error::NotEnoughParents { name: self.name(), needed: 2, got: p.len() });
        }
        let mut child = p[0].child();
        if rng.random_bool(self.probability) {
            for (i, v) in child.values.iter_mut().enumerate() {
                *v = p[rng.random_range(0..p.len())].values[i];
            }
        }
        Ok(vec![child])
    }
}

impl Propagator for CrossoverSigmoid {
    fn name(&self) -> &'static str {
        "CrossoverSigmoid"
    }
    fn parents(&self) -> Arity {
        Arity::Exact(2)
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(&self, pool: &dyn Pool, _: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        let p = take_parents(self.name(), pool, 2)?;
        let mut child = p[0].child();
        if rng.random_bool(self.probability) {
            let p2 = self.p_second(p[0].loss, p[1].loss);
            for (v, other) in child.values.iter_mut().zip(&p[1].values) {
                if rng.random_bool(p2) {
                    *v = *other;
                }
            }
        }
        Ok(vec![child])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigmoid_prefers_the_better_parent() {
        let c = CrossoverSigmoid::new(1.0, 1.0).unwrap();
        assert!(c.p_second(5.0, 1.0) > 0.95);
        assert!(c.p_second(1.0, 5.0) < 0.05);
        assert_eq!(c.p_second(f64::INFINITY, f64::INFINITY), 0.5);
        assert_eq!(c.p_second(f64::INFINITY, 1.0), 1.0);
    }
}
