//! Tutorial: tune the reference tutorial's CNN on MNIST-format data, each worker training one
//! network data-parallel on its ranks (Burn, flex backend on CPUs).
//!
//!     sudo apt-get install dataset-fashion-mnist      # Fashion-MNIST, the default data
//!     cargo build --release --features cnn --example mnist_cnn
//!     mpirun -np 4 target/release/examples/mnist_cnn [DATA_DIR] [TRAIN_IMAGES] [GENERATIONS]
//!
//! Defaults: /usr/share/datasets/fashion-mnist, 2000 training images (a subset, so that a laptop
//! finishes in minutes; 60000 for all), 4 generations per worker, 2 ranks per worker. The search
//! space is the reference's: 2 to 10 convolutions, relu/sigmoid/tanh, SGD learning rate 1e-4 to
//! 1e-1 (log scale). The loss is the best validation cross-entropy on the test split (1000 images).

use propulate::cnn::{self, Activation, Hyperparameters, Split, TrainSettings};
use propulate::ddp::CommGradSync;
use propulate::transport::PointToPoint;
use propulate::{Optimizer, SearchSpace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).map_or(cnn::DEBIAN_FASHION_MNIST, String::as_str));
    let train_images: usize = args.get(2).map_or(Ok(2000), |a| a.parse())?;
    let generations: u64 = args.get(3).map_or(Ok(4), |a| a.parse())?;

    let runtime = propulate::transport::mpi::MpiRuntime::init()?;
    let mut world = runtime.world();
    // Every rank reads the data itself; a missing directory is reported once, by rank 0.
    let data = cnn::idx::load(&dir, Split::Train).and_then(|t| Ok((t, cnn::idx::load(&dir, Split::Test)?)));
    let (train, valid) = match data {
        Ok((t, v)) => (t.truncated(train_images), v.truncated(1000)),
        Err(e) => {
            if world.rank() == 0 {
                eprintln!("mnist_cnn: {e}");
            }
            std::process::exit(2);
        }
    };

    let space = SearchSpace::builder()
        .int("conv_layers", 2, 10)
        .categorical("activation", &Activation::NAMES)
        .log_float("lr", 1e-4, 1e-1)
        .build()?;
    let settings = TrainSettings { max_epochs: 5, patience: 2, batch: 32 };
    let optimizer = Optimizer::new(space.clone()).generations(generations).ranks_per_worker(2).seed(7).top_n(3);
    let result = optimizer.run(&mut world, |p, ctx| {
        let hp = Hyperparameters {
            conv_layers: p.int("conv_layers") as usize,
            activation: Activation::from_name(p.category("activation"))?,
            lr: p.float("lr"),
        };
        let (seed, worker, root) = (ctx.seed, ctx.worker, ctx.is_worker_root());
        let outcome = cnn::train(&mut CommGradSync::new(ctx), seed, &train, &valid, hp, settings)?;
        if root {
            eprintln!(
                "worker {worker}: {hp:?}: validation loss {:.4}, accuracy {:.3} after {} epochs",
                outcome.best_loss, outcome.accuracy, outcome.epochs
            );
        }
        Ok(outcome.best_loss)
    })?;
    if world.rank() == 0 {
        print!("{}", propulate::output::summary_table(&space, &result));
    }
    Ok(())
}
