//! The default propagator: truncation selection, uniform crossover, point and Gaussian mutation,
//! random restarts; random individuals until the island knows `pop_size` of them.

use serde::{Deserialize, Serialize};

use super::{
    Compose, Conditional, CrossoverUniform, InitUniform, IntervalMutationNormal, PointMutation, Propagator, SelectMin,
    SelectUniform,
};
use crate::error::{Error, Result};
use crate::space::SearchSpace;

/// The knobs of the default propagator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DefaultPropagatorConfig {
    /// Size of the breeding pool (the best `pop_size` active individuals).
    pub pop_size: usize,
    /// Probability that a child is a uniform crossover of its two parents (a real probability, unlike
    /// the reference, where this value silently became the per-gene parent contribution).
    pub crossover_prob: f64,
    /// Probability of re-sampling one parameter.
    pub mutation_prob: f64,
    /// Probability of replacing the child by a random point.
    pub random_init_prob: f64,
    /// Gaussian mutation width as a fraction of each float parameter's range.
    pub sigma_factor: f64,
}

impl DefaultPropagatorConfig {
    /// The reference's defaults for a run with `workers` workers: pop size 2 x workers.
    pub fn for_workers(workers: usize) -> Self {
        DefaultPropagatorConfig {
            pop_size: (2 * workers).max(2),
            crossover_prob: 0.7,
            mutation_prob: 0.4,
            random_init_prob: 0.1,
            sigma_factor: 0.05,
        }
    }
}

/// Build the default propagator for `space`.
pub fn default_propagator(space: &SearchSpace, cfg: &DefaultPropagatorConfig) -> Result<Box<dyn Propagator>> {
    if cfg.pop_size < 2 {
        return Err(Error::InvalidConfig(format!(
            "pop size must be at least 2 (crossover needs two parents), got {}",
            cfg.pop_size
        )));
    }
    let mut stages: Vec<Box<dyn Propagator>> = vec![
        Box::new(SelectMin(cfg.pop_size)),
        Box::new(SelectUniform(2)),
        Box::new(CrossoverUniform::new(0.5, cfg.crossover_prob)?),
        Box::new(PointMutation::new(1, cfg.mutation_prob)?),
    ];
    if space.has_float() {
        stages.push(Box::new(IntervalMutationNormal::new(cfg.sigma_factor, 1, 1.0)?));
    }
    stages.push(Box::new(InitUniform::replacing(cfg.random_init_prob)?));
    Ok(Box::new(Conditional::new(cfg.pop_size, Box::new(Compose::new(stages)?), Box::new(InitUniform::fresh()))?))
}
