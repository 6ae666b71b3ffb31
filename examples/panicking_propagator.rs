//! Test program: a custom propagator that panics on one worker after a few generations. The whole
//! MPI job must end with the panic's message instead of leaving the other ranks waiting. Used by
//! tests/mpi_driver.rs.

use std::sync::atomic::{AtomicUsize, Ordering};

use propulate::individual::Individual;
use propulate::propagator::{Arity, InitUniform, Pool, Propagator};
use propulate::rng::PropRng;
use propulate::transport::PointToPoint;
use propulate::{Optimizer, SearchSpace};

#[derive(Debug)]
struct BreaksOnRank {
    rank: usize,
    calls: AtomicUsize,
}

impl Propagator for BreaksOnRank {
    fn name(&self) -> &'static str {
        "BreaksOnRank"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }
    fn propagate(
        &self,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> propulate::propagator::Result<Vec<Individual>> {
        if self.rank == 1 && self.calls.fetch_add(1, Ordering::SeqCst) == 20 {
            panic!("propagator invariant broken on purpose");
        }
        InitUniform::fresh().propagate(pool, space, rng)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let space = SearchSpace::builder().float("x", -1.0, 1.0).build()?;
    let runtime = propulate::transport::mpi::MpiRuntime::init()?;
    let mut world = runtime.world();
    let rank = world.rank();
    let propagator = BreaksOnRank { rank, calls: AtomicUsize::new(0) };
    Optimizer::new(space)
        .generations(100_000)
        .propagator(propagator)
        .run(&mut world, |p, _| Ok(p.float("x").powi(2)))?;
    Ok(())
}
