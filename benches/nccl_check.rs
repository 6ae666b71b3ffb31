//! NCCL gradient averaging on the GPUs of one worker, as the CNN task uses it: a run of one worker
//! of all the job's ranks, one GPU per rank, whose evaluations average 1M and 25M floats over
//! NCCL, through host memory (`GradSync::all_reduce_mean`, what training calls) and on device
//! memory (`NcclGradSync::all_reduce_mean_device`, no host round trip), checking every result.
//! Run by scripts/gpu-check.sh:
//!
//!     mpirun -np 2 nccl_check fresh    # a communicator made in every evaluation (the CNN task's way)
//!     mpirun -np 2 nccl_check reused   # one made in the first evaluation, reused by the later ones,
//!                                      # the second of which fails on every rank after averaging
//!
//! Rank 0 prints one line per evaluation, `nccl MODE evaluation E ranks R setup_ms S host_1m_ms
//! H1 host_25m_ms H25 device_1m_ms D1 device_25m_ms D25 correct C` (C: 1 when every average was
//! right; `failed` for the planned failure), then `nccl MODE done`. Without a GPU or NCCL, each
//! evaluation fails with the reason NcclGradSync gives, and the line says so.

use std::time::{Duration, Instant};

use propulate::ddp::{GradSync, NcclGradSync, worker_store};
use propulate::transport::PointToPoint;
use propulate::{Optimizer, SearchSpace, WorkerContext};

const SIZES: [(usize, &str); 2] = [(1 << 20, "1m"), (25 << 20, "25m")];
const REPEATS: usize = 5;
const EVALUATIONS: u64 = 4;

fn median(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

/// Average `n` floats, each rank holding its rank + 1, `REPEATS` times both ways; record the
/// median times and whether every average was (ranks + 1) / 2.
fn measure(sync: &mut NcclGradSync, ctx: &mut WorkerContext<'_>) -> Result<bool, propulate::ddp::Error> {
    let (rank, ranks) = (ctx.worker_rank, ctx.worker_size);
    let want = (ranks as f32 + 1.0) / 2.0;
    let mut correct = true;
    for (n, name) in SIZES {
        let mut host = Vec::with_capacity(REPEATS);
        for _ in 0..REPEATS {
            let mut values = vec![rank as f32 + 1.0; n];
            let t0 = Instant::now();
            sync.all_reduce_mean(&mut values)?;
            host.push(t0.elapsed().as_secs_f64() * 1e3);
            correct &= values.iter().all(|v| (v - want).abs() < 1e-5);
        }
        let mut buf = sync.upload(&vec![rank as f32 + 1.0; n])?;
        sync.synchronize()?;
        let mut device = Vec::with_capacity(REPEATS);
        for _ in 0..REPEATS {
            let t0 = Instant::now();
            sync.all_reduce_mean_device(&mut buf)?;
            sync.synchronize()?;
            device.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        // Averaging equal means keeps them: the buffer still holds (ranks + 1) / 2 everywhere.
        correct &= sync.download(&buf)?.iter().all(|v| (v - want).abs() < 1e-5);
        ctx.record(&format!("host_{name}_ms"), median(host));
        ctx.record(&format!("device_{name}_ms"), median(device));
    }
    Ok(correct)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "fresh".into());
    if mode != "fresh" && mode != "reused" {
        return Err(format!("nccl_check: the mode is fresh or reused, not {mode}").into());
    }
    let runtime = propulate::transport::mpi::MpiRuntime::init()?;
    let mut world = runtime.world();
    let ranks = world.size();
    let space = SearchSpace::builder().float("x", 0.0, 1.0).build()?;
    let optimizer = Optimizer::new(space).generations(EVALUATIONS).ranks_per_worker(ranks).seed(1);
    let mut kept: Option<NcclGradSync> = None;
    let mut evaluation = 0u64;
    let result = optimizer.run(&mut world, |_, ctx| {
        let this = evaluation;
        evaluation += 1;
        let t0 = Instant::now();
        // The store lives for the evaluation: a fresh group needs it while it forms.
        let mut rendezvous = worker_store(ctx, 0, Duration::from_secs(120))?;
        let mut fresh;
        let sync = match (&mode[..], kept.as_mut()) {
            ("reused", Some(sync)) => sync,
            ("reused", None) => kept.insert(NcclGradSync::new(ctx, &mut rendezvous.store)?),
            _ => {
                fresh = NcclGradSync::new(ctx, &mut rendezvous.store)?;
                &mut fresh
            }
        };
        ctx.record("setup_ms", t0.elapsed().as_secs_f64() * 1e3);
        let correct = measure(sync, ctx)?;
        ctx.record("correct", f64::from(u8::from(correct)));
        if mode == "reused" && this == 1 {
            // Every rank fails here, after its collectives: the next evaluation reuses the group.
            return Err("a planned failure after averaging, on every rank".into());
        }
        Ok(if correct { 0.0 } else { 1.0 })
    })?;
    if world.rank() == 0 {
        let mut trials = result.trials.clone();
        trials.sort_by_key(|t| t.id.generation);
        for t in &trials {
            let m = |k: &str| t.metrics.get(k).map_or("-".to_string(), |v| format!("{v:.3}"));
            let correct = match (&t.failure, t.metrics.get("correct")) {
                (Some(_), Some(c)) => format!("{c} failed"),
                (Some(reason), None) => format!("- error: {reason}"),
                (None, c) => c.map_or("-".into(), |c| c.to_string()),
            };
            println!(
                "nccl {mode} evaluation {} ranks {ranks} setup_ms {} host_1m_ms {} host_25m_ms {} device_1m_ms {} \
                 device_25m_ms {} correct {correct}",
                t.id.generation,
                m("setup_ms"),
                m("host_1m_ms"),
                m("host_25m_ms"),
                m("device_1m_ms"),
                m("device_25m_ms"),
            );
        }
        println!("nccl {mode} done");
    }
    Ok(())
}
