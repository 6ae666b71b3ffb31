//! A pool without some of its individuals: what the driver breeds from again when a child would
//! continue a training state that is gone (population-based training: a member of another island
//! whose owner has since deleted the state, or a peer's state deleted while this worker's view of
//! it lagged), so that the propagator picks among the others instead of failing the evaluation.

use std::collections::BTreeSet;

use super::Pool;
use crate::individual::{Individual, IndividualId};
use crate::rng::PropRng;

/// `pool` without the individuals in `gone` (except through [`Pool::stored`], which finds any
/// stored individual by identity, as the pool does).
pub struct Excluding<'a> {
    /// The pool.
    pub pool: &'a dyn Pool,
    /// The identities left out.
    pub gone: &'a BTreeSet<IndividualId>,
}

impl Excluding<'_> {
    fn keeps(&self, ind: &Individual) -> bool {
        !self.gone.contains(&ind.id)
    }
}

impl Pool for Excluding<'_> {
    fn size(&self) -> usize {
        self.iter_all().count()
    }
    fn best(&self, k: usize) -> Vec<Individual> {
        self.iter_all().take(k).cloned().collect()
    }
    fn worst(&self, k: usize) -> Vec<Individual> {
        let mut v: Vec<Individual> =
            self.pool.worst(k + self.gone.len()).into_iter().filter(|i| self.keeps(i)).collect();
        v.truncate(k);
        v
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
        self.pool.stored(id)
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
    fn the_excluded_are_nowhere_but_by_identity() {
        let pool: Vec<Individual> = (0..6)
            .map(|g| {
                let mut i = Individual::new(vec![Value::Float(g as f64)]);
                i.id.generation = g;
                i.loss = g as f64;
                i
            })
            .collect();
        let gone: BTreeSet<IndividualId> = [pool[0].id, pool[5].id].into();
        let ex = Excluding { pool: &pool, gone: &gone };
        let generations = |v: Vec<Individual>| v.iter().map(|i| i.id.generation).collect::<Vec<_>>();
        assert_eq!(ex.size(), 4);
        assert_eq!(generations(ex.best(2)), [1, 2]);
        assert_eq!(generations(ex.worst(2)), [4, 3]);
        assert_eq!(ex.iter_latest_bred().map(|i| i.id.generation).collect::<Vec<_>>(), [4, 3, 2, 1]);
        assert!(ex.sample(4, &mut worker_rng(0, 0)).iter().all(|i| !gone.contains(&i.id)));
        assert_eq!(ex.best_of_worker(0).unwrap().id.generation, 1);
        assert_eq!(ex.stored(&pool[0].id), Some(pool[0].clone()), "found by identity");
    }
}
