//! What one breed costs the model-based propagators (CMA-ES, Nelder-Mead, TPE, GP) on a large
//! island: an island population of N evaluated individuals (4 float parameters, losses and
//! evaluation starts drawn at random), one child bred per call, the median time of a call.
//!
//!   cargo bench --bench breeding
//!   SIZES=1000,100000 REPS=15 cargo bench --bench breeding
//!
//! Two pools of the same individuals, side by side in one run: `indexed`, the population as the
//! driver holds it (the latest individuals in breeding order from its index, the others by
//! reference), and `copying`, the same population read as every breed read it until 2026-11-25:
//! the whole pool cloned, and sorted into breeding order, at each call. The ratio is copying /
//! indexed. TPE models every evaluation, so it reads the whole pool either way (by reference now,
//! cloned before).

mod common;
use common::{island, space};

use std::cell::RefCell;
use std::time::Instant;

use propulate::SearchSpace;
use propulate::individual::Individual;
use propulate::population::{Population, in_breeding_order};
use propulate::propagator::{Breeder, Pool, PropagatorSpec};
use propulate::rng::{PropRng, worker_rng};

/// A pool that copies: every read of the whole pool clones it (and sorts the copy into breeding
/// order where the order matters), as each breed did before the population served that order.
struct Copying<'p> {
    population: &'p Population,
    /// The copies handed out by reference during one breed, alive until the next `clear`.
    copies: RefCell<Vec<Box<[Individual]>>>,
}

impl Copying<'_> {
    /// Keep `copy` alive for the rest of the breed and hand out references into it.
    fn keep(&self, copy: Vec<Individual>) -> &[Individual] {
        let boxed = copy.into_boxed_slice();
        let view: *const [Individual] = &*boxed;
        self.copies.borrow_mut().push(boxed);
        // SAFETY: the boxed slice is neither moved nor dropped while `self` is borrowed: `copies`
        // only grows, and is cleared through `&mut self` between breeds.
        unsafe { &*view }
    }

    fn clear(&mut self) {
        self.copies.get_mut().clear();
    }
}

impl Pool for Copying<'_> {
    fn size(&self) -> usize {
        self.population.size()
    }
    fn best(&self, k: usize) -> Vec<Individual> {
        let mut all = self.population.to_vec();
        all.sort_by(|a, b| a.loss.total_cmp(&b.loss));
        all.truncate(k);
        all
    }
    fn worst(&self, k: usize) -> Vec<Individual> {
        self.population.worst(k)
    }
    fn sample(&self, k: usize, rng: &mut PropRng) -> Vec<Individual> {
        Pool::sample(self.population, k, rng)
    }
    fn to_vec(&self) -> Vec<Individual> {
        self.population.to_vec()
    }
    fn iter_all(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.keep(self.population.to_vec()).iter())
    }
    fn iter_latest_bred(&self) -> Box<dyn Iterator<Item = &Individual> + '_> {
        Box::new(self.keep(in_breeding_order(self.population.to_vec())).iter().rev())
    }
}

/// The median seconds of `reps` breeds from `pool`.
fn median_breed(
    name: &str,
    space: &SearchSpace,
    reps: usize,
    mut breed_from: impl FnMut(&mut dyn FnMut(&dyn Pool)),
) -> f64 {
    let propagator = PropagatorSpec::with_defaults(name, 8).and_then(|s| s.build(space)).expect("builds");
    let mut rng = worker_rng(2, 0);
    let mut times = Vec::with_capacity(reps);
    for rep in 0..reps {
        let breeder = Breeder { island: 0, worker: (rep % 8) as u32, generation: 1_000_000 + rep as u64, since: 0 };
        breed_from(&mut |pool: &dyn Pool| {
            let start = Instant::now();
            let child = propagator.propagate_as(breeder, pool, space, &mut rng).expect("breeds");
            times.push(start.elapsed().as_secs_f64());
            std::hint::black_box(child);
        });
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let sizes: Vec<usize> = std::env::var("SIZES")
        .unwrap_or_else(|_| "1000,100000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("SIZES: comma-separated counts"))
        .collect();
    let reps: usize = std::env::var("REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(15);
    let space = space();
    println!("median time of one breed, {reps} breeds each; ratio = copying / indexed");
    println!("{:>8} {:>6} {:>12} {:>12} {:>7}", "pool", "name", "indexed ms", "copying ms", "ratio");
    for &n in &sizes {
        let population = island(&space, 8, n);
        for name in ["cmaes", "nm", "tpe", "gp"] {
            let indexed = median_breed(name, &space, reps, |breed| breed(&population));
            let mut copying = Copying { population: &population, copies: RefCell::new(Vec::new()) };
            let copied = median_breed(name, &space, reps, |breed| {
                breed(&copying);
                copying.clear();
            });
            println!("{n:>8} {name:>6} {:>12.3} {:>12.3} {:>6.1}x", indexed * 1e3, copied * 1e3, copied / indexed);
        }
    }
}
