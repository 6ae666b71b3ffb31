//! `propulate-rs report`: the state of a checkpoint, finished or not, as a [`RunResult`] and a
//! per-worker progress table. Reads only; the journals are never modified.

use std::fmt::Write as _;
use std::path::Path;

use crate::driver::RunResult;
use crate::error::{Error, Result};
use crate::journal::{Replay, island_population, read_checkpoint};

/// Read the checkpoint in `dir`; an error if there is none.
pub fn load(dir: &Path) -> Result<Replay> {
    read_checkpoint(dir)?
        .ok_or_else(|| Error::Checkpoint(format!("{} holds no checkpoint (no manifest.json)", dir.display())))
}

/// The run's results as recorded: every evaluation, each island's rebuilt population.
pub fn result_of(replay: &Replay, top_n: usize) -> RunResult {
    let mut r = RunResult { consistent: true, ..Default::default() };
    for island in 0..replay.layout.islands() {
        let pop = island_population(replay, island);
        r.islands.push(pop.best(top_n));
        r.active_per_island.push(pop.active_len());
    }
    r.best = crate::driver::global_best(&r.islands, top_n);
    r.trials = replay.workers.iter().flat_map(|j| j.evaluated.iter().cloned()).collect();
    r.evaluations = r.trials.len() as u64;
    r.failed = r.trials.iter().filter(|t| t.failure.is_some()).count() as u64;
    r.emigrated = replay.workers.iter().flat_map(|j| &j.emigrations).map(|(_, i)| i.len() as u64).sum();
    r.wall_s = r.trials.iter().map(|t| t.duration_s).sum::<f64>() / replay.layout.workers().max(1) as f64;
    r
}

/// Per-worker progress: generations evaluated, in flight, finished cleanly or not.
pub fn progress_table(replay: &Replay) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{:<7} {:<7} {:<12} {:<10} state", "worker", "island", "evaluated", "in flight");
    for (w, j) in replay.workers.iter().enumerate() {
        let state = if j.done { "ended cleanly" } else { "interrupted or running" };
        let _ = writeln!(
            s,
            "{:<7} {:<7} {:<12} {:<10} {state}",
            w,
            replay.layout.island_of_worker(w),
            j.evaluated.len(),
            j.in_flight.len()
        );
    }
    s
}
