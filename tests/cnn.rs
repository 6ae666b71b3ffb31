//! The CNN task on Fashion-MNIST (installed by scripts/install-deps.sh; where the package cannot be
//! installed, on synthetic MNIST-format data instead): a data-parallel training that learns, with
//! bit-identical replicas, and the tutorial under mpirun.
#![cfg(feature = "cnn")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use propulate::cnn::{self, Activation, Hyperparameters, Split, TrainSettings};
use propulate::ddp::CommGradSync;
use propulate::{Optimizer, SearchSpace};

/// Fashion-MNIST if installed, else a synthetic set in the same format: class k is a bright 6x6
/// square at the k-th of 10 places on a noisy background (learnable, like the real one).
/// `PROPULATE_SYNTHETIC_MNIST=1` forces the synthetic set.
fn data_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let real = Path::new(cnn::DEBIAN_FASHION_MNIST);
        if real.is_dir() && std::env::var_os("PROPULATE_SYNTHETIC_MNIST").is_none() {
            return real.to_path_buf();
        }
        eprintln!("using synthetic MNIST-format data instead of {}", real.display());
        let dir = std::env::temp_dir().join(format!("propulate-synthetic-mnist-{}", std::process::id()));
        for (split, n) in [(Split::Train, 2000), (Split::Test, 1000)] {
            let mut noise = 12345u64 + n as u64;
            let mut pixels = Vec::with_capacity(n * 784);
            let labels: Vec<u8> = (0..n).map(|i| (i * 7 % 10) as u8).collect();
            for &label in &labels {
                let (top, left) = (2 + 12 * (label as usize / 5), 1 + 5 * (label as usize % 5));
                for r in 0..28 {
                    for c in 0..28 {
                        noise = noise.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        let inside = (top..top + 6).contains(&r) && (left..left + 6).contains(&c);
                        pixels.push(if inside { 200 } else { (noise >> 61) as u8 * 8 });
                    }
                }
            }
            let set = cnn::ImageSet { rows: 28, cols: 28, pixels, labels };
            cnn::idx::save(&dir, split, &set, true).unwrap();
        }
        dir
    })
    .as_path()
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
            let outcome = cnn::train(&mut CommGradSync::new(ctx), seed, &train, &valid, hp, settings)?;
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
