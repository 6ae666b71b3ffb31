//! What the breeding benches share (`mod common;` in each): the space they breed in and an island
//! of evaluated individuals bred in turn by its workers.

use propulate::individual::{Individual, IndividualId};
use propulate::population::Population;
use propulate::rng::{PropRng, worker_rng};
use propulate::{SearchSpace, Value};

/// Four floats in [-5, 5]: the sphere the breeding benches evaluate.
pub fn space() -> SearchSpace {
    let mut b = SearchSpace::builder();
    for name in ["a", "b", "c", "d"] {
        b = b.float(name, -5.0, 5.0);
    }
    b.build().expect("a valid space")
}

/// A freshly evaluated individual (the sphere's loss) of worker `worker`'s generation
/// `generation`, started in that order.
pub fn evaluated(space: &SearchSpace, rng: &mut PropRng, worker: usize, generation: u64) -> Individual {
    let mut ind = Individual::new(space.sample(rng));
    ind.loss = ind.values.iter().map(|v| if let Value::Float(x) = v { x * x } else { 0.0 }).sum();
    ind.id = IndividualId { island: 0, worker: worker as u32, generation };
    ind.start_us = generation as i64 * 1_000_000 + worker as i64;
    ind.duration_s = 1.0;
    ind
}

/// An island of `workers` workers whose population holds `history` evaluated individuals, bred in
/// turn.
pub fn island(space: &SearchSpace, workers: usize, history: usize) -> Population {
    let mut rng = worker_rng(1, 0);
    let mut population = Population::new();
    for k in 0..history {
        population.insert(evaluated(space, &mut rng, k % workers, (k / workers) as u64));
    }
    population
}
