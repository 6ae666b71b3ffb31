//! The CNN task on Fashion-MNIST (installed by scripts/install-deps.sh; where the package cannot be
//! installed, on synthetic MNIST-format data instead): a data-parallel training that learns, with
//! bit-identical replicas, and the tutorial under mpirun.
#![cfg(feature = "cnn")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use propulate::cnn::{self, Activation, Hyperparameters, Split, TrainSettings};
use propulate::ddp::MpiGradSync;
use propulate::{Optimizer, SearchSpace};

fn data_dir() -> &'static Path {
    let dir = Path::new(cnn::DEBIAN_FASHION_MNIST);
    assert!(
        dir.is_dir(),
        "{} is missing: run scripts/install-deps.sh (apt-get install dataset-fashion-mnist)",
        dir.display()
    );
    dir
}

#[test]
fn two_replicas_learn_fashion_mnist_and_stay_identical() {
    let train = cnn::idx::load(data_dir(), Split::Train).unwrap().truncated(512);
    let valid = cnn::idx::load(data_dir(), Split::Test).unwrap().truncated(256);
    assert_eq!((train.rows, train.cols), (28, 28));
    let space = SearchSpace::builder().float("unused", 0.0, 1.0).build().unwrap();
    let optimizer = Optimizer::new(space).generations(1).ranks_per_worker(2);
    let result = optimizer
        .run_local(2, move |_, ctx| {
            let hp = Hyperparameters { conv_layers: 2, activation: Activation::Relu, lr: 0.05 };
            let settings = TrainSettings { max_epochs: 3, patience: 3, batch: 16 };
            let seed = ctx.seed;
            let outcome = cnn::train(&mut MpiGradSync::new(ctx), seed, &train, &valid, hp, settings)?;
            // Chance is 10% and ln 10 = 2.30; a network that trained gets well past both.
            if outcome.accuracy < 0.5 || outcome.best_loss > 1.5 {
                return Err(format!("did not learn: {outcome:?}").into());
            }
            Ok(outcome.best_loss)
        })
        .unwrap();
    // A replica check failure or a bad outcome would be a failed evaluation with its reason.
    assert_eq!(result.failed, 0, "{:?}", result.trials[0].failure);
    assert_eq!(result.evaluations, 1);
}

#[test]
fn the_cnn_tutorial_runs_under_mpirun() {
    let mut cmd = common::mpirun(4);
    cmd.env("RAYON_NUM_THREADS", "1").arg(common::example("mnist_cnn")).arg(data_dir()).args(["128", "1"]);
    let out = common::run_with_timeout(cmd, std::time::Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("evaluations: 2 (0 failed)") && stdout.contains("islands consistent: yes"), "{stdout}");
}

#[test]
fn a_missing_data_directory_is_a_clear_error() {
    let mut cmd = common::mpirun(2);
    cmd.arg(common::example("mnist_cnn")).arg("/nonexistent/mnist");
    let out = common::run_with_timeout(cmd, std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("/nonexistent/mnist: no train-images-idx3-ubyte"), "{stderr}");
}
