//! The default propagator: random individuals until the island holds `random_start` of them, then
//! truncation selection of the best `pop_size` and either a genetic child (uniform crossover, point
//! mutation, a Gaussian step, random restarts) or a differential step. Its defaults
//! ([`DefaultPropagatorConfig::reference`]) are the reference's genetic propagator: no
//! differential children, a fixed step; [`DefaultPropagatorConfig::multimodal`] turns both on.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::propagator::{
    Choice, Compose, Conditional, CrossoverUniform, DifferentialStep, InitUniform, IntervalMutationNormal,
    PointMutation, Propagator, SelectMin, SelectUniform,
};
use crate::space::SearchSpace;

/// The knobs of the default propagator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DefaultPropagatorConfig {
    /// Size of the breeding pool (the best `pop_size` active individuals).
    pub pop_size: usize,
    /// Probability that a genetic child is a uniform crossover of its two parents (a real
    /// probability, unlike the reference, where this value silently became the per-gene parent
    /// contribution).
    pub crossover_prob: f64,
    /// Probability of re-sampling one parameter.
    pub mutation_prob: f64,
    /// Probability of replacing the genetic child by a random point.
    pub random_init_prob: f64,
    /// Random individuals until the island holds this many, then breeding; `None`: `pop_size` (the
    /// reference's rule). The default starts wider than it breeds: a pool of 4 chosen from 16.
    #[serde(default)]
    pub random_start: Option<usize>,
    /// Float parameters each Gaussian step moves (the reference: 1). Absent in older checkpoints.
    #[serde(default = "one")]
    pub step_points: usize,
    /// Largest Gaussian mutation width, as a fraction of each float parameter's range.
    pub sigma_factor: f64,
    /// Powers of ten below `sigma_factor` that a Gaussian step may reach (drawn log-uniformly per
    /// child); 0 is the reference's fixed step. Absent in checkpoints written before it existed,
    /// whose runs used the fixed step.
    #[serde(default)]
    pub step_decades: f64,
    /// Probability that a child is a differential step (DE/rand/1/bin) from the pool instead of a
    /// genetic one; 0 breeds only genetically, as the reference. Absent in older checkpoints.
    #[serde(default)]
    pub differential_prob: f64,
}

/// The differential step's settings: weights drawn from [0.5, 1), nine parameters in ten moved
/// (the values of the benchmark runs in docs/benchmarks/reference.md).
const DIFFERENTIAL_WEIGHTS: (f64, f64) = (0.5, 1.0);
const DIFFERENTIAL_CROSSOVER: f64 = 0.9;

fn one() -> usize {
    1
}

impl DefaultPropagatorConfig {
    /// The defaults for a run with `workers` workers: [`DefaultPropagatorConfig::multimodal`],
    /// which beat the reference's genetic propagator on 12 of its 14 benchmark functions (docs/benchmarks/reference.md). [`DefaultPropagatorConfig::reference`] is the reference's.
    pub fn for_workers(workers: usize) -> Self {
        DefaultPropagatorConfig::multimodal(workers)
    }

    /// Settings for multimodal losses under a small budget: random individuals until the island
    /// holds 2 x workers, then a breeding pool of the best workers / 2 (at least 4), Gaussian steps
    /// of two parameters over 3 decades, 30 % of the children differential. Its median best loss
    /// was at most the reference's on 12 of the reference's 14 benchmark functions (docs/benchmarks/reference.md,
    /// where these values were chosen).
    pub fn multimodal(workers: usize) -> Self {
        let reference = DefaultPropagatorConfig::reference(workers);
        DefaultPropagatorConfig {
            pop_size: (workers / 2).max(4),
            random_start: Some(reference.pop_size.max(4)),
            step_points: 2,
            step_decades: 3.0,
            differential_prob: 0.3,
            ..reference
        }
    }

    /// The reference's genetic propagator (Propulate 1.2.2's `get_default_propagator`, with its
    /// crossover probability bug fixed): pop size 2 x workers, a fixed Gaussian step, no
    /// differential children.
    pub fn reference(workers: usize) -> Self {
        DefaultPropagatorConfig {
            pop_size: (2 * workers).max(2),
            crossover_prob: 0.7,
            mutation_prob: 0.4,
            random_init_prob: 0.1,
            sigma_factor: 0.05,
            random_start: None,
            step_points: 1,
            step_decades: 0.0,
            differential_prob: 0.0,
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
    crate::propagator::check_probability("differential probability", cfg.differential_prob)?;
    if cfg.differential_prob > 0.0 && cfg.pop_size < 3 {
        return Err(Error::InvalidConfig(format!(
            "pop size must be at least 3 with differential children (a step takes three parents), got {}",
            cfg.pop_size
        )));
    }
    let mut stages: Vec<Box<dyn Propagator>> = vec![
        Box::new(SelectUniform(2)),
        Box::new(CrossoverUniform::new(0.5, cfg.crossover_prob)?),
        Box::new(PointMutation::new(1, cfg.mutation_prob)?),
    ];
    // Built (and so checked) whatever the space, used where there are floats to move.
    let step = IntervalMutationNormal::new(cfg.sigma_factor, cfg.step_points, 1.0)?.multi_scale(cfg.step_decades)?;
    if space.has_float() {
        stages.push(Box::new(step));
    }
    stages.push(Box::new(InitUniform::replacing(cfg.random_init_prob)?));
    let genetic: Box<dyn Propagator> = Box::new(Compose::new(stages)?);
    // Both kinds of children breed from the same pool. Without differential children, no draw
    // for the choice: a seed breeds what it always bred.
    let child: Box<dyn Propagator> = if cfg.differential_prob > 0.0 {
        let (lo, hi) = DIFFERENTIAL_WEIGHTS;
        let differential = Box::new(DifferentialStep::new(lo, hi, DIFFERENTIAL_CROSSOVER)?);
        Box::new(Choice::new(differential, genetic, cfg.differential_prob)?)
    } else {
        genetic
    };
    let bred = Box::new(Compose::new(vec![Box::new(SelectMin(cfg.pop_size)), child])?);
    let start = cfg.random_start.unwrap_or(cfg.pop_size);
    if start < cfg.pop_size {
        return Err(Error::InvalidConfig(format!(
            "the random start ({start}) must be at least the pop size ({}): breeding selects that many",
            cfg.pop_size
        )));
    }
    Ok(Box::new(Conditional::new(start, bred, Box::new(InitUniform::fresh()))?))
}
