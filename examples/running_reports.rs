//! Test program: an early stopper that hears running evaluations, across processes. Two workers
//! of 2 ranks each (`mpirun -np 4`) on one island evaluate one network each, so neither sees the
//! other's finished before it starts. Worker 0 reports 1.0 at step 1 and then leaves a flag file;
//! worker 1 waits for the flag and reports 2.0 at step 1: with worker 0's report counted at that
//! rung, successive halving (start-up 1) stops it there, on both of its ranks. Used by
//! tests/mpi_driver.rs.
//!
//! `running_reports OUT_DIR`: prints `worker W: pruned P after step S` for each evaluation.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use propulate::early_stop::HalvingStopper;
use propulate::transport::PointToPoint;
use propulate::{Optimizer, SearchSpace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).expect("usage: running_reports OUT_DIR"));
    let flag = dir.join("worker-0-reported");
    let runtime = propulate::transport::mpi::MpiRuntime::init()?;
    let mut world = runtime.world();
    let mut halving = HalvingStopper::default();
    halving.settings.startup = 1;
    let space = SearchSpace::builder().float("x", -1.0, 1.0).build()?;
    let optimizer = Optimizer::new(space).generations(1).islands(1).ranks_per_worker(2).early_stopping(halving);
    let result = optimizer.run(&mut world, |_, ctx| {
        let curve: &[f64] = if ctx.worker == 0 { &[2.3, 1.0, 0.9] } else { &[2.3, 2.0, 1.9] };
        if ctx.worker == 1 {
            let t0 = Instant::now();
            while !flag.exists() {
                if t0.elapsed() > Duration::from_secs(60) {
                    return Err("worker 0 never reported".into());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        for (step, &value) in curve.iter().enumerate() {
            if ctx.report(step as u64, value)?.is_stop() {
                return Ok(value);
            }
            // Only once the report returned has the root sent it to the island.
            if ctx.worker == 0 && step == 1 && ctx.is_worker_root() {
                std::fs::write(&flag, b"")?;
            }
        }
        Ok(curve[2])
    })?;
    if world.rank() == 0 {
        let mut trials = result.trials.clone();
        trials.sort_by_key(|t| t.id.worker);
        for t in &trials {
            let curve = t.curve.as_ref().ok_or("an evaluation without a curve")?;
            let last = curve.last_step().ok_or("an empty curve")?;
            let failure = t.failure.as_deref().unwrap_or("none");
            println!("worker {}: pruned {} after step {last}, failure {failure}", t.id.worker, curve.pruned);
        }
    }
    Ok(())
}
