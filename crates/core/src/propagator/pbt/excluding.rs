//! A pool without the individuals of some workers: what the driver breeds from again when a child
//! would continue a training state that is gone (population-based training: a member of another
//! island whose owner has since deleted the state, a peer's state deleted while this worker's view
//! of it lagged, or the breeding worker's own, deleted by hand or left in the checkpoint a run was
//! reshaped from), so that the propagator picks among the other members, or starts a fresh one,
//! instead of failing the evaluation. The whole worker goes: its older evaluations, which would
//! become its latest, have most likely lost their states too.

use std::collections::BTreeSet;

use crate::individual::{Individual, IndividualId};
use crate::propagator::Pool;
use crate::rng::PropRng;

/// `pool` without the individuals bred by the workers in `gone`, through every method (a worker's
/// own last evaluation, which PBT finds by [`Pool::stored`], included: a breeding worker among the
/// gone ones starts a fresh member).
pub struct Excluding<'a> {
    /// The pool.
    pub pool: &'a dyn Pool,
    /// The workers (global indices) whose individuals are left out.
    pub gone: &'a BTreeSet<u32>,
}

impl Excluding<'_> {
    fn keeps(&self, ind: &Individual) -> bool {
        !self.gone.contains(&ind.id.worker)
    }
}

impl Pool for Excluding<'_> {
    fn size(&self) -> usize {
        self.iter_all().count()
    }
    /// Sorted here: a pool's `iter_all` need not be in loss order (a vector's is not). Only the
    /// rare breeding again after a gone state asks.
    fn best(&self, k: usize) -> Vec<Individual> {
        self.to_vec().best(k)
    }
    fn worst(&self, k: usize) -> Vec<Individual> {
        self.to_vec().worst(k)
    }
    fn sample(&self, k: usize, rng: &mut PropRng) -> Vec<Individual> {
        self.to_vec().sample(k, rng)
    }
    fn to_vec(&self) -> Vec<Individual> {
        self.iter_all().cloned().collect()
    }
    fn iter_all(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.pool.iter_all().filter(|i| self.keeps(i)))
    }
    fn iter_latest_bred(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.pool.iter_latest_bred().filter(|i| self.keeps(i)))
    }
    fn stored(&self, id: &IndividualId) -> Option<Individual> {
        self.pool.stored(id).filter(|i| self.keeps(i))
    }
    fn best_of_worker(&self, worker: u32) -> Option<Individual> {
        self.iter_all().find(|i| i.id.worker == worker).cloned()
    }
    fn iter_running(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        self.pool.iter_running()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;
    use crate::space::Value;

    #[test]
    fn the_excluded_are_nowhere() {
        let pool: Vec<Individual> = (0..6)
            .map(|g| {
                let mut i = Individual::new(vec![Value::Float(g as f64)]);
                i.id.generation = g;
                i.id.worker = if g == 0 || g == 5 { 7 } else { 1 };
                i.loss = g as f64;
                i
            })
            .collect();
        let gone: BTreeSet<u32> = [7].into();
        let ex = Excluding { pool: &pool, gone: &gone };
        let generations = |v: Vec<Individual>| v.iter().map(|i| i.id.generation).collect::<Vec<_>>();
        assert_eq!(ex.size(), 4);
        assert_eq!(generations(ex.best(2)), [1, 2]);
        assert_eq!(generations(ex.worst(2)), [4, 3]);
        assert_eq!(ex.iter_latest_bred().map(|i| i.id.generation).collect::<Vec<_>>(), [4, 3, 2, 1]);
        assert!(ex.sample(4, &mut worker_rng(0, 0)).iter().all(|i| i.id.worker != 7));
        assert_eq!(ex.best_of_worker(1).unwrap().id.generation, 1);
        assert!(ex.best_of_worker(7).is_none());
        assert_eq!(ex.stored(&pool[0].id), None, "not by identity either: PBT finds a worker's own member so");
        assert_eq!(ex.stored(&pool[1].id), Some(pool[1].clone()));
    }
}
