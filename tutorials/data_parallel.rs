//! Tutorial: train a model data-parallel inside the loss, one replica per rank of a worker.
//!
//!     cargo build --release --example data_parallel
//!     mpirun -np 4 target/release/examples/data_parallel
//!
//! 4 ranks form 2 workers of 2 ranks. For every individual (learning rate, batch size, epochs), the
//! two ranks of a worker train one linear regression model together, the way a CNN would be trained:
//!
//! - a `WorkerStore` (TCP rendezvous served by the worker root) is set up for the evaluation, and
//!   its barrier lines the ranks up before the training;
//! - the root's initial weights are broadcast, so both replicas start equal;
//! - each rank trains on its `DistributedSampler` shard, and after every step `CommGradSync` replaces
//!   the gradients by their mean over the replicas, so the replicas stay bit-identical;
//! - the validation loss is summed over the ranks' validation shards, so every rank returns the same
//!   number; the worker checks that its replicas still agree before returning it.

use std::time::Duration;

use propulate::ddp::{CommGradSync, DistributedSampler, GradSync, replicas_agree, worker_store};
use propulate::{Optimizer, SearchSpace};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const FEATURES: usize = 16;

/// A synthetic regression data set, the same on every rank: y = w* . x + noise.
struct Data {
    x: Vec<[f32; FEATURES]>,
    y: Vec<f32>,
}

fn data(n: usize, seed: u64) -> Data {
    let mut truth = ChaCha8Rng::seed_from_u64(1);
    let w: Vec<f32> = (0..FEATURES).map(|_| truth.random_range(-1.0..1.0)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x: Vec<[f32; FEATURES]> = (0..n).map(|_| std::array::from_fn(|_| rng.random_range(-1.0..1.0))).collect();
    let y =
        x.iter().map(|xi| xi.iter().zip(&w).map(|(a, b)| a * b).sum::<f32>() + rng.random_range(-0.1..0.1)).collect();
    Data { x, y }
}

fn predict(params: &[f32], x: &[f32; FEATURES]) -> f32 {
    params[FEATURES] + x.iter().zip(params).map(|(a, b)| a * b).sum::<f32>()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let space = SearchSpace::builder().log_float("lr", 1e-3, 0.3).int("batch", 8, 64).int("epochs", 1, 3).build()?;
    let optimizer = Optimizer::new(space.clone()).generations(12).ranks_per_worker(2).seed(11);
    let (train, valid) = (data(1024, 2), data(256, 3));

    let loss = move |p: propulate::Params<'_>, ctx: &mut propulate::WorkerContext<'_>| {
        let (lr, batch, epochs) = (p.float("lr") as f32, p.int("batch") as usize, p.int("epochs") as u64);
        let ranks = ctx.worker_size;
        let mut rendezvous = worker_store(ctx, 0, Duration::from_secs(60))?;
        rendezvous.store.barrier("train", ranks)?;

        // Different random weights on every rank; the broadcast makes them the root's.
        let mut init = ChaCha8Rng::seed_from_u64(ctx.seed ^ ctx.worker_rank as u64);
        let mut params: Vec<f32> = (0..=FEATURES).map(|_| init.random_range(-0.1..0.1)).collect();
        let sampler = DistributedSampler::new(train.y.len(), ranks, ctx.worker_rank, ctx.seed)?;
        let validation = DistributedSampler::new(valid.y.len(), ranks, ctx.worker_rank, 0)?.without_shuffle();
        let mut sync = CommGradSync::new(ctx);
        sync.broadcast_from_root(&mut params)?;
        for epoch in 0..epochs {
            for step in sampler.indices(epoch).chunks(batch) {
                let mut grad = vec![0.0f32; FEATURES + 1];
                for &i in step {
                    let err = predict(&params, &train.x[i]) - train.y[i];
                    for (g, x) in grad.iter_mut().zip(train.x[i].iter().chain([&1.0])) {
                        *g += 2.0 * err * x / step.len() as f32;
                    }
                }
                sync.all_reduce_mean(&mut grad)?;
                for (w, g) in params.iter_mut().zip(&grad) {
                    *w -= lr * g;
                }
            }
        }
        let idx = validation.indices(0);
        let sse: f64 = idx.iter().map(|&i| f64::from(predict(&params, &valid.x[i]) - valid.y[i]).powi(2)).sum();
        let mut totals = [sse, idx.len() as f64];
        sync.all_reduce_sum(&mut totals)?;
        if !replicas_agree(&mut sync, &params)? {
            return Err("the replicas diverged".into());
        }
        Ok(totals[0] / totals[1])
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
    let (result, rank) = (optimizer.run_local(4, loss)?, 0);

    if rank == 0 {
        print!("{}", propulate::output::summary_table(&space, &result));
        let diverged = result.trials.iter().filter(|t| t.failure.as_deref().is_some_and(|f| f.contains("diverged")));
        println!("evaluations whose replicas diverged: {}", diverged.count());
    }
    Ok(())
}
