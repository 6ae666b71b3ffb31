//! A pool of evaluated individuals beside the children the island's workers are running: what
//! the propagators' tests build, and what the GP's composition breeds from where it leaves out a
//! warm start's imported evaluations (bayesian/gp/earlier.rs).

use super::Pool;
use crate::individual::Individual;
use crate::rng::PropRng;

/// Evaluated individuals and the children other workers are running.
pub(crate) struct WithRunning {
    pub done: Vec<Individual>,
    pub running: Vec<Individual>,
}

impl Pool for WithRunning {
    fn size(&self) -> usize {
        self.done.size()
    }
    fn best(&self, k: usize) -> Vec<Individual> {
        self.done.best(k)
    }
    fn worst(&self, k: usize) -> Vec<Individual> {
        self.done.worst(k)
    }
    fn sample(&self, k: usize, rng: &mut PropRng) -> Vec<Individual> {
        self.done.sample(k, rng)
    }
    fn to_vec(&self) -> Vec<Individual> {
        self.done.clone()
    }
    fn iter_all(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        self.done.iter_all()
    }
    fn iter_latest_bred(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        self.done.iter_latest_bred()
    }
    fn iter_running(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.running.iter())
    }
}
