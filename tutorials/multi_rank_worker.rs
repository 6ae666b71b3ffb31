//! Tutorial: workers that span several MPI ranks.
//!
//!     cargo build --release --example multi_rank_worker
//!     mpirun -np 8 target/release/examples/multi_rank_worker
//!
//! With `ranks_per_worker(2)`, 8 ranks form 4 workers of 2 ranks. Only each worker's root breeds
//! and talks to the island; the individual is broadcast to the worker's ranks, every rank calls the
//! loss, and the ranks cooperate through `ctx` (here: each rank sums a share of the coordinates,
//! then an all-reduce over the worker's communicator adds the shares up). A data-parallel training
//! loop does the same with its gradients.

use propulate::{Optimizer, SearchSpace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut b = SearchSpace::builder();
    for i in 0..8 {
        b = b.float(&format!("x{i}"), -5.0, 5.0);
    }
    let space = b.build()?;
    let optimizer = Optimizer::new(space.clone()).generations(100).islands(2).ranks_per_worker(2).seed(3);
    let loss = |p: propulate::Params<'_>, ctx: &mut propulate::WorkerContext<'_>| {
        let x = p.to_vec();
        // Rank r of the worker squares coordinates r, r + size, r + 2 size, ...
        let share = ctx.map_reduce_sum(|rank, size| x.iter().skip(rank).step_by(size).map(|v| v * v).sum())?;
        Ok(share)
    };

    #[cfg(feature = "mpi")]
    let (result, rank) = {
        let runtime = propulate::transport::mpi::MpiRuntime::init()?;
        let mut world = runtime.world();
        use propulate::transport::PointToPoint;
        let r = optimizer.run(&mut world, loss)?;
        (r, world.rank())
    };
    #[cfg(not(feature = "mpi"))]
    let (result, rank) = (optimizer.run_local(8, loss)?, 0);

    if rank == 0 {
        print!("{}", propulate::output::summary_table(&space, &result));
    }
    Ok(())
}
