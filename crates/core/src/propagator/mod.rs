//! Propagators: pure functions from parents to offspring, given the search space and a random stream.
//! They do no I/O and know nothing of MPI; the driver owns time, messages and the population.

// In folders by family; each folder's module comment says what the family is.
mod bayesian;
mod cmaes;
mod combinators;
mod genetic;
mod normalized;
mod pbt;
mod resolution;
mod simplex;
mod swarm;

pub use bayesian::{Gp, GpConfig, Tpe, TpeConfig, TpeModel};
pub use cmaes::{Cmaes, CmaesConfig, CovarianceUpdate, default_population_size};
pub use combinators::{Attempt, Choice, Compose, Conditional, Portfolio, Stochastic};
pub use genetic::{
    CrossoverMultiple, CrossoverSigmoid, CrossoverUniform, DefaultPropagatorConfig, DifferentialStep, InitUniform,
    IntervalMutationNormal, PointMutation, RandomPointMutation, SelectMax, SelectMin, SelectUniform,
    default_propagator,
};
pub(crate) use normalized::unit_coordinate;
pub use pbt::{Excluding, Pbt, PbtConfig, PbtExplore};
pub use resolution::{
    AUTO, CMAES_FROM, Continued, GP_EVALUATIONS, GivenSetting, Problem, PropagatorChoice, PropagatorSpec,
};
pub use simplex::{NelderMead, NelderMeadConfig};
pub use swarm::{Pso, PsoConfig, PsoVariant};

pub use crate::error::{Error, Result};
use crate::individual::{Individual, IndividualId};
use crate::population::{Population, breed_key};
use crate::rng::PropRng;
use crate::space::SearchSpace;

/// How many parents a propagator takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// Exactly this many.
    Exact(usize),
    /// Any number (selections, multi-parent crossover, conditionals).
    Any,
}

/// What parents are drawn from: a whole island population (indexed) or the output of a previous
/// stage. Selections ask for what they need, so the driver never copies the whole population.
pub trait Pool {
    /// Number of individuals available.
    fn size(&self) -> usize;
    /// The `k` lowest-loss individuals, best first.
    fn best(&self, k: usize) -> Vec<Individual>;
    /// The `k` highest-loss individuals, worst first.
    fn worst(&self, k: usize) -> Vec<Individual>;
    /// `k` distinct individuals chosen uniformly.
    fn sample(&self, k: usize, rng: &mut PropRng) -> Vec<Individual>;
    /// All individuals (used by stages whose input is small: the output of a previous stage).
    fn to_vec(&self) -> Vec<Individual>;
    /// Every individual by reference, in [`Pool::to_vec`]'s order: what a model of the whole
    /// pool reads, without copying it.
    fn iter_all(&self) -> Box<dyn Iterator<Item = &Individual> + '_>;
    /// Every individual by reference in breeding order ([`in_breeding_order`](crate::population::in_breeding_order)), the latest first:
    /// what CMA-ES, Nelder-Mead and the GP replay or keep. A [`Population`] keeps the order
    /// indexed, so taking the latest k costs O(k + log n), not a copy and a sort of the pool.
    fn iter_latest_bred(&self) -> Box<dyn Iterator<Item = &Individual> + '_>;
    /// The stored individual with identity `id`, active or not: a pool that remembers individuals
    /// that left it (a [`Population`] keeps the emigrated ones) returns those too. What a particle
    /// swarm needs to find a particle's position, the individual its worker bred last. The default
    /// searches [`Pool::to_vec`], which clones every individual: fine for the small pools of a
    /// previous stage's output; large pools should look it up.
    fn stored(&self, id: &IndividualId) -> Option<Individual> {
        self.to_vec().into_iter().find(|i| i.id == *id)
    }
    /// The lowest-loss active individual bred by worker `worker` (global index, as in
    /// [`IndividualId::worker`]), ties broken by the lowest identity: a particle's personal best.
    /// The default searches [`Pool::to_vec`], which clones every individual; large pools should
    /// not.
    fn best_of_worker(&self, worker: u32) -> Option<Individual> {
        self.to_vec()
            .into_iter()
            .filter(|i| i.id.worker == worker)
            .min_by(|a, b| a.rank_key().cmp(&b.rank_key()).then(a.id.cmp(&b.id)))
    }
    /// The children other workers of the island are evaluating now, without a result yet (what a
    /// model can take as fantasies, so that workers breeding at once spread out). None by
    /// default: a pool that is a previous stage's output has no running evaluations.
    fn iter_running(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(std::iter::empty())
    }
}

impl Pool for Vec<Individual> {
    fn size(&self) -> usize {
        self.len()
    }
    fn best(&self, k: usize) -> Vec<Individual> {
        let mut v = self.to_vec();
        v.sort_by_key(|i| i.rank_key());
        v.truncate(k);
        v
    }
    fn worst(&self, k: usize) -> Vec<Individual> {
        let mut v = self.to_vec();
        v.sort_by_key(|i| std::cmp::Reverse(i.rank_key()));
        v.truncate(k);
        v
    }
    fn sample(&self, k: usize, rng: &mut PropRng) -> Vec<Individual> {
        let k = k.min(self.len());
        rand::seq::index::sample(rng, self.len(), k).into_iter().map(|i| self[i].clone()).collect()
    }
    fn to_vec(&self) -> Vec<Individual> {
        self.clone()
    }
    fn iter_all(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.iter())
    }
    /// Sorts references: the small pools of a previous stage's output.
    fn iter_latest_bred(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        let mut refs: Vec<&Individual> = self.iter().collect();
        refs.sort_by_key(|i| std::cmp::Reverse(breed_key(i)));
        Box::new(refs.into_iter())
    }
    fn stored(&self, id: &IndividualId) -> Option<Individual> {
        self.iter().find(|i| i.id == *id).cloned()
    }
    fn best_of_worker(&self, worker: u32) -> Option<Individual> {
        self.iter()
            .filter(|i| i.id.worker == worker)
            .min_by(|a, b| a.rank_key().cmp(&b.rank_key()).then(a.id.cmp(&b.id)))
            .cloned()
    }
}

impl Pool for Population {
    fn size(&self) -> usize {
        self.active_len()
    }
    fn best(&self, k: usize) -> Vec<Individual> {
        Population::best(self, k)
    }
    fn worst(&self, k: usize) -> Vec<Individual> {
        Population::worst(self, k)
    }
    fn sample(&self, k: usize, rng: &mut PropRng) -> Vec<Individual> {
        Population::sample(self, k, rng)
    }
    fn to_vec(&self) -> Vec<Individual> {
        self.iter_best().cloned().collect()
    }
    fn iter_all(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.iter_best())
    }
    /// [`Population::iter_bred`], reversed: the breeding-order index.
    fn iter_latest_bred(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.iter_bred().rev())
    }
    /// [`Population::get`]: O(1), active or not.
    fn stored(&self, id: &IndividualId) -> Option<Individual> {
        self.get(id).cloned()
    }
    /// [`Population::best_of_worker`]: a scan of the loss index from the best, which stops at the
    /// worker's first individual.
    fn best_of_worker(&self, worker: u32) -> Option<Individual> {
        Population::best_of_worker(self, worker).cloned()
    }
    /// [`Population::running`].
    fn iter_running(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.running())
    }
}

/// Who is breeding: the worker and the generation its child will have. Most propagators do not
/// care; a particle swarm does, because each worker is one particle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Breeder {
    /// The island the worker belongs to.
    pub island: u32,
    /// The worker's global index (what its children carry in [`IndividualId::worker`](crate::IndividualId)).
    pub worker: u32,
    /// The generation the child will have.
    pub generation: u64,
    /// The first generation this start of the run bred: 0 in a new run, a resume's first. What
    /// came before happened to an earlier start (one whose cause the user may have fixed since).
    pub since: u64,
}

/// A breeding operator: parents in, offspring out.
pub trait Propagator: Send + Sync + std::fmt::Debug {
    /// A short name for messages.
    fn name(&self) -> &'static str;
    /// How many parents it takes.
    fn parents(&self) -> Arity;
    /// How many individuals it returns.
    fn offspring(&self) -> usize;
    /// Whether it models the evaluations the island's other workers are running
    /// ([`Pool::iter_running`]): the driver then tells a worker's island peers of each child it
    /// starts evaluating. False by default: the message would be wasted.
    fn models_running(&self) -> bool {
        false
    }
    /// For a propagator whose children continue saved training states (population-based
    /// training): how long, in seconds, a worker keeps a state of its own after its member moved
    /// on. The driver then needs a checkpoint (where the states live), refuses an early stopper
    /// and reports the states' disk use. `None` (the default): children are trained afresh.
    fn training_state_keep_s(&self) -> Option<f64> {
        None
    }
    /// Whether the worker `breeder` describes has nothing left to breed (population-based
    /// training: its member trained its budget): the driver then ends that worker's loop as if its
    /// generations were done. False by default.
    fn worker_finished(&self, breeder: Breeder, pool: &dyn Pool) -> bool {
        let _ = (breeder, pool);
        false
    }
    /// Breed. Children come back with `loss = +inf`; their identity is set by the driver.
    fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>>;
    /// Breed as `breeder`: what the driver calls. The default ignores who breeds and calls
    /// [`Propagator::propagate`]; propagators whose offspring depend on the breeding worker (a
    /// particle swarm) override it, and combinators pass the breeder on to their stages.
    fn propagate_as(
        &self,
        breeder: Breeder,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        let _ = breeder;
        self.propagate(pool, space, rng)
    }
}

/// A boxed propagator is one: programs that choose the propagator at run time (the CLI's
/// `--propagator`) hand the optimizer what they built.
impl Propagator for Box<dyn Propagator> {
    fn name(&self) -> &'static str {
        self.as_ref().name()
    }
    fn parents(&self) -> Arity {
        self.as_ref().parents()
    }
    fn offspring(&self) -> usize {
        self.as_ref().offspring()
    }
    fn models_running(&self) -> bool {
        self.as_ref().models_running()
    }
    fn worker_finished(&self, breeder: Breeder, pool: &dyn Pool) -> bool {
        self.as_ref().worker_finished(breeder, pool)
    }
    fn training_state_keep_s(&self) -> Option<f64> {
        self.as_ref().training_state_keep_s()
    }
    fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        self.as_ref().propagate(pool, space, rng)
    }
    fn propagate_as(
        &self,
        breeder: Breeder,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        self.as_ref().propagate_as(breeder, pool, space, rng)
    }
}

/// The parents a fixed-arity operator works on: the first `n` of the pool, or an error.
pub(crate) fn take_parents(name: &'static str, pool: &dyn Pool, n: usize) -> Result<Vec<Individual>> {
    let mut v = pool.to_vec();
    if v.len() < n {
        return Err(Error::NotEnoughParents { name, needed: n, got: v.len() });
    }
    v.truncate(n);
    Ok(v)
}

/// The propagators that search a conditional space ([`crate::condition`]): the others model or
/// move every parameter at every point and are refused one.
pub const CONDITIONAL: [&str; 5] = ["ga", "random", "tpe", "gp", "auto"];

/// An error for `propagator` when `space` has conditional parameters, naming one and the
/// propagators that search such spaces.
pub(crate) fn refuse_conditional(space: &SearchSpace, propagator: &str) -> Result<()> {
    match space.params().iter().find(|p| !p.when.is_empty()) {
        None => Ok(()),
        Some(p) => Err(Error::InvalidPropagator(format!(
            "{propagator} cannot search a conditional space (parameter '{}' is active only under a condition); \
             use one of {}",
            p.name,
            CONDITIONAL.join(", ")
        ))),
    }
}

/// Checks that `p` is a probability.
pub(crate) fn check_probability(what: &str, p: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(Error::InvalidPropagator(format!("{what} must be a probability in [0, 1], got {p}")))
    }
}

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod property_tests;
#[cfg(test)]
pub(crate) mod test_pools;
mod with_peers;
pub use with_peers::WithPeers;
