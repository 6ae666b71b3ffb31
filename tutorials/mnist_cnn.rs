//! Tutorial: tune the reference tutorial's CNN on MNIST-format data through the library, each
//! worker training one network data-parallel on its ranks. This is what `propulate-rs` does by
//! default, written as a user's program.
//!
//!     sudo apt-get install dataset-fashion-mnist      # Fashion-MNIST, the default data
//!     cargo build --release --features cnn --example mnist_cnn
//!     mpirun -np 4 target/release/examples/mnist_cnn [DATA_DIR] [TRAIN_IMAGES] [GENERATIONS] [EPOCHS]
//!
//! Defaults: /usr/share/datasets/fashion-mnist, 2000 training images (a subset, so that a laptop
//! finishes in minutes; 60000 for all), 2 generations per worker, at most 20 epochs, 2 ranks per
//! worker. The search space is the reference's (`cnn::search_space`): 2 to 10 convolutions,
//! relu/sigmoid/tanh, Adadelta's learning rate 1e-4 to 1e-2 (log scale), its factor per epoch
//! 0.5 to 0.999. The loss is the best validation loss on the test split (first 1000 images).
//! Breeding is Bayesian optimization (`Gp`, a Gaussian process over the island's evaluations), as
//! in the CLI's CNN task: trainings are few and expensive, and a model of all of them finds the
//! networks that learn sooner than the genetic propagator (it is also what the library's default,
//! `auto`, picks for this space and budget).

use std::sync::Arc;
use std::time::Duration;

use propulate::cnn::{self, Backend, CnnTask, DeviceChoice, Split, TrainSettings};
use propulate::observe::{Event, RankInfo};
use propulate::propagator::{Gp, GpConfig};
use propulate::transport::PointToPoint;
use propulate::{ObserverMode, Optimizer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).map_or(cnn::DEBIAN_FASHION_MNIST, String::as_str));
    let train_images: usize = args.get(2).map_or(Ok(2000), |a| a.parse())?;
    let generations: u64 = args.get(3).map_or(Ok(2), |a| a.parse())?;
    let epochs: u64 = args.get(4).map_or(Ok(20), |a| a.parse())?;

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

    let task = CnnTask {
        train: Arc::new(train),
        valid: Arc::new(valid),
        settings: TrainSettings { max_epochs: epochs, ..TrainSettings::default() },
        backend: Backend::fastest_built(),
        device: DeviceChoice::Auto,
        rendezvous_timeout: Duration::from_secs(60),
        gpus_per_rank: 1,
    };
    // One line per finished evaluation, from its worker root.
    let report = |rank: &RankInfo, event: &Event<'_>| {
        if let Event::Evaluated { individual, .. } = event {
            println!("worker {}: loss {:.4}, metrics {:?}", rank.worker, individual.loss, individual.metrics);
        }
    };
    let space = cnn::search_space();
    let optimizer = Optimizer::new(space.clone())
        .propagator(Gp::new(&space, GpConfig::default())?)
        .generations(generations)
        .ranks_per_worker(2)
        .seed(7)
        .top_n(3)
        .observer(ObserverMode::Always, report);
    let result = optimizer.run(&mut world, |p, ctx| Ok(task.evaluate(&p, ctx)?.best_loss))?;
    if world.rank() == 0 {
        print!("{}", propulate::output::summary_table(&space, &result));
    }
    Ok(())
}
