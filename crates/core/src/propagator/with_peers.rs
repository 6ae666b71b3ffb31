//! A pool with more running evaluations than it has heard of: the children the island's other
//! workers are working out at the same moment. At the first breed of a start (a resume, a warm
//! start) every worker of an island breeds at once, before any hears of another's child; a
//! propagator that models the running evaluations (the GP) would then give each worker the same
//! child, the argmax of one model. The driver works out the peers' children first, each as
//! running for the next, and breeds its own from this pool (a Kriging believer batch, as
//! synchronous batch Bayesian optimization builds one). The same wrapper lends evaluated
//! individuals and running children held apart as one pool: in the propagators' tests, and where
//! the GP's composition leaves out a warm start's imported evaluations (bayesian/gp/earlier.rs).

use crate::individual::{Individual, IndividualId};
use crate::propagator::Pool;
use crate::rng::PropRng;

/// `pool`, with `peers` running besides its own running evaluations.
pub struct WithPeers<'a> {
    /// The pool.
    pub pool: &'a dyn Pool,
    /// Children taken as running too.
    pub peers: &'a [Individual],
}

impl Pool for WithPeers<'_> {
    fn size(&self) -> usize {
        self.pool.size()
    }
    fn best(&self, k: usize) -> Vec<Individual> {
        self.pool.best(k)
    }
    fn worst(&self, k: usize) -> Vec<Individual> {
        self.pool.worst(k)
    }
    fn sample(&self, k: usize, rng: &mut PropRng) -> Vec<Individual> {
        self.pool.sample(k, rng)
    }
    fn to_vec(&self) -> Vec<Individual> {
        self.pool.to_vec()
    }
    fn iter_all(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        self.pool.iter_all()
    }
    fn iter_latest_bred(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        self.pool.iter_latest_bred()
    }
    fn stored(&self, id: &IndividualId) -> Option<Individual> {
        self.pool.stored(id)
    }
    fn best_of_worker(&self, worker: u32) -> Option<Individual> {
        self.pool.best_of_worker(worker)
    }
    fn iter_running(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.pool.iter_running().chain(self.peers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::Value;

    #[test]
    fn the_peers_run_beside_the_pools_own() {
        let one = |x: f64| Individual::new(vec![Value::Float(x)]);
        let (done, own_running) = (vec![one(0.1)], [one(0.2)]);
        let pool = WithPeers { pool: &done, peers: &own_running };
        let peers = [one(0.3)];
        let with = WithPeers { pool: &pool, peers: &peers };
        let running: Vec<Value> = with.iter_running().map(|i| i.values[0]).collect();
        assert_eq!(running, [Value::Float(0.2), Value::Float(0.3)]);
        assert_eq!(with.size(), 1);
    }
}
