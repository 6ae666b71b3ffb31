//! Data-parallel scaling of the CNN task: one worker of all the job's ranks trains one network
//! (the reference's, 3 convolutions, relu) on a subset of Fashion-MNIST, gradients averaged after
//! every step; prints the training images per second. Run by benches/dp_scaling.sh under
//! `mpirun -np 1` and `-np 2`, one thread per rank.
//!
//!     mpirun -np 2 target/release/deps/dp_scaling-* IMAGES EPOCHS BACKEND

use std::sync::Arc;
use std::time::Instant;

use propulate::cnn::{self, Activation, Backend, Compute, Hyperparameters, Split, TrainSettings};
use propulate::ddp::CommGradSync;
use propulate::transport::{Collectives, PointToPoint};
use propulate::{Optimizer, SearchSpace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let images: usize = args.first().map_or(Ok(4000), |a| a.parse())?;
    let epochs: u64 = args.get(1).map_or(Ok(2), |a| a.parse())?;
    let backend = Backend::from_name(args.get(2).map_or("tch", String::as_str))?;
    cnn::backend::set_threads(1);
    let dir = std::path::Path::new(cnn::DEBIAN_FASHION_MNIST);
    let train = Arc::new(cnn::idx::load(dir, Split::Train)?.truncated(images));
    let valid = Arc::new(cnn::idx::load(dir, Split::Test)?.truncated(1000));
    let runtime = propulate::transport::mpi::MpiRuntime::init()?;
    let mut world = runtime.world();
    let ranks = world.size();
    world.barrier()?;
    let space = SearchSpace::builder().float("unused", 0.0, 1.0).build()?;
    let result = Optimizer::new(space).generations(1).ranks_per_worker(ranks).run(&mut world, |_, ctx| {
        let hp = Hyperparameters { conv_layers: 3, activation: Activation::Relu, lr: 1.0, gamma: 0.9 };
        let settings = TrainSettings { max_epochs: epochs, patience: epochs, batch: 8 };
        let device = backend.device(Compute::Cpu)?;
        let t0 = Instant::now();
        let seed = ctx.seed;
        let outcome = cnn::train(&mut CommGradSync::new(ctx), &device, seed, &train, &valid, hp, settings)?;
        let per_s = (train.len() as u64 * outcome.epochs) as f64 / t0.elapsed().as_secs_f64();
        ctx.record("images_per_s", per_s);
        Ok(outcome.best_loss)
    })?;
    if world.rank() == 0 {
        let t = &result.trials[0];
        println!(
            "backend {} ranks {ranks} images {images} epochs {epochs} images_per_s {:.1} loss {:.4}",
            backend.name(),
            t.metrics.get("images_per_s").copied().unwrap_or(f64::NAN),
            t.loss
        );
    }
    Ok(())
}
