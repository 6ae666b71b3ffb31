//! Combinators: chain propagators, pick one by population size, at random or by turns, try one
//! that may have no child to offer before another, or apply one with a probability. Each passes
//! the breeder on to its stages, so a particle swarm inside a combinator still knows which
//! particle it moves, and models the island's running evaluations when a stage does.

use rand::RngExt;

use super::{Arity, Breeder, Pool, Propagator, check_probability, take_parents};
use crate::error::{Error, Result};
use crate::individual::Individual;
use crate::rng::PropRng;
use crate::space::SearchSpace;

/// A combinator's two breeding entry points, both through its `run`, which passes the breeder (when
/// there is one) on to the stages it calls.
macro_rules! breeding_through_run {
    () => {
        fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
            self.run(None, pool, space, rng)
        }
        fn propagate_as(
            &self,
            breeder: Breeder,
            pool: &dyn Pool,
            space: &SearchSpace,
            rng: &mut PropRng,
        ) -> Result<Vec<Individual>> {
            self.run(Some(breeder), pool, space, rng)
        }
    };
}
pub(crate) use breeding_through_run;

/// Stages applied in order, each to the previous stage's offspring. Arity is checked when built.
#[derive(Debug)]
pub struct Compose {
    stages: Vec<Box<dyn Propagator>>,
}

impl Compose {
    /// Chain `stages`; an error names the first pair whose offspring and parent counts disagree.
    pub fn new(stages: Vec<Box<dyn Propagator>>) -> Result<Self> {
        if stages.is_empty() {
            return Err(Error::InvalidPropagator("Compose needs at least one stage".into()));
        }
        for (i, pair) in stages.windows(2).enumerate() {
            let (a, b) = (&pair[0], &pair[1]);
            if let Arity::Exact(n) = b.parents()
                && n != a.offspring()
            {
                return Err(Error::InvalidPropagator(format!(
                    "Compose stage {i} ({}) yields {} offspring but stage {} ({}) takes {n} parents",
                    a.name(),
                    a.offspring(),
                    i + 1,
                    b.name()
                )));
            }
        }
        Ok(Compose { stages })
    }
}

impl Propagator for Compose {
    fn name(&self) -> &'static str {
        "Compose"
    }
    fn parents(&self) -> Arity {
        self.stages[0].parents()
    }
    fn offspring(&self) -> usize {
        self.stages.last().expect("non-empty").offspring()
    }
    fn models_running(&self) -> bool {
        self.stages.iter().any(|s| s.models_running())
    }
    breeding_through_run!();
}

impl Compose {
    fn run(
        &self,
        breeder: Option<Breeder>,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        let mut current = call(self.stages[0].as_ref(), breeder, pool, space, rng)?;
        for stage in &self.stages[1..] {
            current = call(stage.as_ref(), breeder, &current, space, rng)?;
        }
        Ok(current)
    }
}

/// `if_full` once the pool holds at least `pop_size` individuals, `otherwise` before.
#[derive(Debug)]
pub struct Conditional {
    pop_size: usize,
    if_full: Box<dyn Propagator>,
    otherwise: Box<dyn Propagator>,
}

impl Conditional {
    /// Both branches must yield the same number of offspring.
    pub fn new(pop_size: usize, if_full: Box<dyn Propagator>, otherwise: Box<dyn Propagator>) -> Result<Self> {
        if if_full.offspring() != otherwise.offspring() {
            return Err(Error::InvalidPropagator(format!(
                "Conditional branches yield {} and {} offspring; they must agree",
                if_full.offspring(),
                otherwise.offspring()
            )));
        }
        Ok(Conditional { pop_size, if_full, otherwise })
    }
}

impl Propagator for Conditional {
    fn name(&self) -> &'static str {
        "Conditional"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        self.if_full.offspring()
    }
    fn models_running(&self) -> bool {
        self.if_full.models_running() || self.otherwise.models_running()
    }
    breeding_through_run!();
}

impl Conditional {
    fn run(
        &self,
        breeder: Option<Breeder>,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        let branch = if pool.size() >= self.pop_size { &self.if_full } else { &self.otherwise };
        call(branch.as_ref(), breeder, pool, space, rng)
    }
}

/// Applies `inner` with probability `probability`; otherwise passes the first parents through as
/// unevaluated children. `inner` must take exactly as many parents as it yields offspring.
#[derive(Debug)]
pub struct Stochastic {
    inner: Box<dyn Propagator>,
    probability: f64,
}

impl Stochastic {
    /// Wrap `inner`.
    pub fn new(inner: Box<dyn Propagator>, probability: f64) -> Result<Self> {
        if inner.parents() != Arity::Exact(inner.offspring()) {
            return Err(Error::InvalidPropagator(format!(
                "Stochastic needs an operator with as many parents as offspring; {} takes {:?} and yields {}",
                inner.name(),
                inner.parents(),
                inner.offspring()
            )));
        }
        Ok(Stochastic { inner, probability: check_probability("Stochastic probability", probability)? })
    }
}

impl Propagator for Stochastic {
    fn name(&self) -> &'static str {
        "Stochastic"
    }
    fn parents(&self) -> Arity {
        self.inner.parents()
    }
    fn offspring(&self) -> usize {
        self.inner.offspring()
    }
    fn models_running(&self) -> bool {
        self.inner.models_running()
    }
    breeding_through_run!();
}

impl Stochastic {
    fn run(
        &self,
        breeder: Option<Breeder>,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        if rng.random_bool(self.probability) {
            call(self.inner.as_ref(), breeder, pool, space, rng)
        } else {
            Ok(take_parents(self.name(), pool, self.offspring())?.iter().map(Individual::child).collect())
        }
    }
}

/// Breeds with `first` with probability `probability`, otherwise with `second`: two ways of
/// breeding from the same pool (the default propagator mixes a genetic and a differential one).
#[derive(Debug)]
pub struct Choice {
    first: Box<dyn Propagator>,
    second: Box<dyn Propagator>,
    probability: f64,
}

impl Choice {
    /// Choose between `first` and `second`, which must yield as many offspring.
    pub fn new(first: Box<dyn Propagator>, second: Box<dyn Propagator>, probability: f64) -> Result<Self> {
        if first.offspring() != second.offspring() {
            return Err(Error::InvalidPropagator(format!(
                "Choice needs operators with as many offspring; {} yields {}, {} yields {}",
                first.name(),
                first.offspring(),
                second.name(),
                second.offspring()
            )));
        }
        Ok(Choice { first, second, probability: check_probability("Choice probability", probability)? })
    }
}

impl Propagator for Choice {
    fn name(&self) -> &'static str {
        "Choice"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        self.first.offspring()
    }
    fn models_running(&self) -> bool {
        self.first.models_running() || self.second.models_running()
    }
    breeding_through_run!();
}

impl Choice {
    fn run(
        &self,
        breeder: Option<Breeder>,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        let chosen = if rng.random_bool(self.probability) { &self.first } else { &self.second };
        call(chosen.as_ref(), breeder, pool, space, rng)
    }
}

/// Breeds a `share` of each worker's children with `other` and the rest with `main`: a portfolio
/// of two models of the same island (the GP and TPE). Worker w's child of generation k is
/// `other`'s when `floor((k + w + 1) share) > floor((k + w) share)`, so that each worker keeps the
/// share exactly and neighbouring workers take turns out of step; without a breeder, `main`'s.
#[derive(Debug)]
pub struct Portfolio {
    main: Box<dyn Propagator>,
    other: Box<dyn Propagator>,
    share: f64,
}

impl Portfolio {
    /// `other` breeds `share` of the children; both must yield as many offspring.
    pub fn new(main: Box<dyn Propagator>, other: Box<dyn Propagator>, share: f64) -> Result<Self> {
        if main.offspring() != other.offspring() {
            return Err(Error::InvalidPropagator(format!(
                "a portfolio needs operators with as many offspring; {} yields {}, {} yields {}",
                main.name(),
                main.offspring(),
                other.name(),
                other.offspring()
            )));
        }
        Ok(Portfolio { main, other, share: check_probability("a portfolio's share", share)? })
    }

    /// Whether `breeder`'s child is `other`'s.
    pub fn by_other(&self, breeder: Breeder) -> bool {
        let t = (breeder.generation + u64::from(breeder.worker)) as f64;
        ((t + 1.0) * self.share).floor() > (t * self.share).floor()
    }
}

impl Propagator for Portfolio {
    fn name(&self) -> &'static str {
        self.main.name()
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        self.main.offspring()
    }
    fn models_running(&self) -> bool {
        self.main.models_running() || self.other.models_running()
    }
    breeding_through_run!();
}

impl Portfolio {
    fn run(
        &self,
        breeder: Option<Breeder>,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        let chosen = if breeder.is_some_and(|b| self.by_other(b)) { &self.other } else { &self.main };
        call(chosen.as_ref(), breeder, pool, space, rng)
    }
}

/// With probability `probability` asks `first`, which may have no child to offer this time (an
/// empty result: a model the latest evaluations do not bear out); otherwise, or then, `second`
/// breeds. The GP composes the quadratic model in front of its process this way.
#[derive(Debug)]
pub struct Attempt {
    first: Box<dyn Propagator>,
    second: Box<dyn Propagator>,
    probability: f64,
}

impl Attempt {
    /// Try `first` with `probability`, else `second`.
    pub fn new(first: Box<dyn Propagator>, second: Box<dyn Propagator>, probability: f64) -> Result<Self> {
        Ok(Attempt { first, second, probability: check_probability("an attempt's probability", probability)? })
    }
}

impl Propagator for Attempt {
    fn name(&self) -> &'static str {
        self.second.name()
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        self.second.offspring()
    }
    fn models_running(&self) -> bool {
        self.first.models_running() || self.second.models_running()
    }
    breeding_through_run!();
}

impl Attempt {
    fn run(
        &self,
        breeder: Option<Breeder>,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        if rng.random::<f64>() < self.probability {
            let offered = call(self.first.as_ref(), breeder, pool, space, rng)?;
            if !offered.is_empty() {
                return Ok(offered);
            }
        }
        call(self.second.as_ref(), breeder, pool, space, rng)
    }
}

/// A stage called as its combinator was: with the breeder when it has one, so that a stage that
/// needs it (PSO) gets it and the others behave as before.
pub(crate) fn call(
    stage: &dyn Propagator,
    breeder: Option<Breeder>,
    pool: &dyn Pool,
    space: &SearchSpace,
    rng: &mut PropRng,
) -> Result<Vec<Individual>> {
    match breeder {
        Some(b) => stage.propagate_as(b, pool, space, rng),
        None => stage.propagate(pool, space, rng),
    }
}
