//! Time of one training step of the reference tutorial's CNN, as the CNN task runs it (forward,
//! negative log-likelihood, backward, gradients flattened for averaging, Adadelta step), for each
//! Burn backend this build has. Run by benches/cnn_step.sh next to the same step in PyTorch eager.
//!
//!     cargo bench --features cnn,tch --bench cnn_step -- CONV_LAYERS BATCH THREADS STEPS
//!
//! `OPTIMIZER=sgd` times the step with Burn's SGD instead of Adadelta; `BACKEND=tch` (or `flex`)
//! times one backend alone; `DEVICE=cuda` times it on the first GPU (tch only: flex has none), as
//! scripts/gpu-check.sh does.
//!
//! Prints one line per backend: `backend <name> conv_layers C batch B threads T median_ms M`.

use std::time::Instant;

use propulate::WorkerContext;
use propulate::cnn::burn::tensor::{Int, Tensor, TensorData};
use propulate::cnn::{Activation, Adadelta, Backend, Compute, Net, step};
use propulate::ddp::CommGradSync;
use propulate::launcher::Device as RankDevice;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cnn_step tunables` prints the GLIBC_TUNABLES equal to the malloc settings the CNN task makes
    // (benches/cnn_step.sh gives them to PyTorch too).
    if std::env::args().nth(1).as_deref() == Some("tunables") {
        println!("{}", propulate::cnn::allocator::glibc_tunables());
        return Ok(());
    }
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (conv_layers, batch, threads, steps) = (
        args.first().copied().unwrap_or(3),
        args.get(1).copied().unwrap_or(8),
        args.get(2).copied().unwrap_or(1),
        args.get(3).copied().unwrap_or(200),
    );
    propulate::cnn::backend::set_threads(threads);
    // BACKEND=tch (or flex) times that one alone, e.g. under a profiler.
    let only = std::env::var("BACKEND").ok();
    let cuda = std::env::var("DEVICE").as_deref() == Ok("cuda");
    let compute = if cuda { Compute::Cuda(0) } else { Compute::Cpu };
    for backend in [Backend::Tch, Backend::Flex]
        .into_iter()
        .filter(|b| b.is_built() && only.as_deref().is_none_or(|name| name == b.name()))
        .filter(|b| !cuda || *b == Backend::Tch)
    {
        backend.check(compute)?;
        let device = backend.device(compute)?.autodiff();
        device.seed(1);
        let mut model = Net::new(conv_layers, Activation::Relu, 28, 28, &device)?;
        // OPTIMIZER=sgd swaps in Burn's SGD, to see the optimizer's share of the step.
        let mut optim = match std::env::var("OPTIMIZER").as_deref() {
            Ok("sgd") => propulate::cnn::burn::optim::SgdConfig::new().init(),
            _ => Adadelta::default().init(),
        };
        let mut ctx = WorkerContext::standalone(0, RankDevice::Cpu);
        let mut sync = CommGradSync::new(&mut ctx);
        // Eight fixed random batches, cycled (as the PyTorch side does).
        let batches: Vec<(Tensor<4>, Tensor<1, Int>)> = (0..8u64)
            .map(|b| {
                let pixels: Vec<f32> =
                    (0..batch * 784).map(|i| ((i as u64 * 2654435761 + b) % 1000) as f32 / 1000.0 - 0.5).collect();
                let labels: Vec<i64> = (0..batch).map(|i| ((i as u64 + b) % 10) as i64).collect();
                (
                    Tensor::<4>::from_data(TensorData::new(pixels, [batch, 1, 28, 28]), &device),
                    Tensor::<1, Int>::from_data(TensorData::new(labels, [batch]), &device),
                )
            })
            .collect();
        let mut times = Vec::with_capacity(steps);
        for s in 0..steps + 5 {
            let (x, y) = batches[s % batches.len()].clone();
            let t0 = Instant::now();
            let (next, loss) = step(model, &mut optim, &mut sync, 1.0.into(), x, y)?;
            model = next;
            // Read the loss, so that the step has finished (PyTorch's side calls .item()).
            let _ = loss.into_scalar::<f32>();
            if s >= 5 {
                times.push(t0.elapsed().as_secs_f64() * 1e3);
            }
        }
        times.sort_by(f64::total_cmp);
        println!(
            "backend {} conv_layers {conv_layers} batch {batch} threads {threads} median_ms {:.3}",
            backend.name(),
            times[times.len() / 2]
        );
    }
    Ok(())
}
