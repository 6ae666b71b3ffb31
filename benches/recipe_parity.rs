//! Our training recipe against PyTorch's, the same hyperparameters: trains the reference's network
//! with burn-tch (one rank, batch 16 = the benchmark's 2 ranks x 8, 3 epochs, the first 2,000
//! Fashion-MNIST training and 500 test images) for seeds 0..SEEDS and prints each best validation
//! loss; `benches/recipe_parity.py` does the same in PyTorch 2.9.0 (and measures how the
//! reference's root shard of the validation set compares with all of it).
//!
//!     cargo build --release --features cnn,tch --bench recipe_parity
//!     SEEDS=4 mpirun -np 1 target/release/deps/recipe_parity-<hash> 3:tanh:0.01:0.918 2:relu:0.01:0.917
//!     .venv-ref/bin/python benches/recipe_parity.py 3:tanh:0.01:0.918:10 2:relu:0.01:0.917:10
//!
//! Each point is `convolutions:activation:lr:gamma` (the Python script adds `:seed`).

use std::sync::Arc;

use propulate::cnn::{self, Activation, Backend, Compute, Hyperparameters, Split, TrainSettings};
use propulate::ddp::CommGradSync;
use propulate::{Optimizer, SearchSpace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let points: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let seeds: u64 = std::env::var("SEEDS").map_or(Ok(4), |s| s.parse())?;
    cnn::backend::set_threads(1);
    let dir = std::path::Path::new(cnn::DEBIAN_FASHION_MNIST);
    let train = Arc::new(cnn::idx::load(dir, Split::Train)?.truncated(2000));
    let valid = Arc::new(cnn::idx::load(dir, Split::Test)?.truncated(500));
    let runtime = propulate::transport::mpi::MpiRuntime::init()?;
    let mut world = runtime.world();
    // One evaluation of a dummy space hands the loss a worker context (its communicator).
    let space = SearchSpace::builder().float("unused", 0.0, 1.0).build()?;
    Optimizer::new(space).generations(1).run(&mut world, |_, ctx| {
        let device = Backend::Tch.device(Compute::Cpu)?;
        for point in &points {
            let f: Vec<&str> = point.split(':').collect();
            let number = |i: usize| -> propulate::Result<f64> {
                f.get(i).and_then(|v| v.parse().ok()).ok_or_else(|| {
                    propulate::Error::InvalidConfig(format!("'{point}': expected convolutions:activation:lr:gamma"))
                })
            };
            let hp = Hyperparameters {
                conv_layers: number(0)? as usize,
                activation: Activation::from_name(f.get(1).copied().unwrap_or(""))?,
                lr: number(2)?,
                gamma: number(3)?,
            };
            let settings = TrainSettings { max_epochs: 3, patience: 3, batch: 16 };
            let losses = (0..seeds)
                .map(|s| cnn::train(&mut CommGradSync::new(ctx), &device, s, &train, &valid, hp, settings))
                .map(|o| o.map(|o| format!("{:.4}", o.best_loss)))
                .collect::<Result<Vec<_>, _>>()?;
            println!("{point} {}", losses.join(" "));
        }
        Ok(0.0)
    })?;
    Ok(())
}
