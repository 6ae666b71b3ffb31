//! `propulate-rs report`: the state of a checkpoint, finished or not, as a [`RunResult`] and a
//! per-worker progress table. Reads only; the journals are never modified.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};
use crate::journal::{Replay, island_populations, read_checkpoint};
use crate::result::{IslandView, RunResult, Tally};

/// Read the checkpoint in `dir`; an error if there is none.
pub fn load(dir: &Path) -> Result<Replay> {
    read_checkpoint(dir)?
        .ok_or_else(|| Error::Checkpoint(format!("{} holds no checkpoint (no manifest.json)", dir.display())))
}

/// The run's results as recorded: every evaluation, each island's rebuilt population.
pub fn result_of(replay: &Replay, top_n: usize) -> RunResult {
    let config = &replay.manifest.config;
    let signs = config.objective_signs();
    let islands = island_populations(replay).iter().map(|pop| IslandView::of(pop, top_n, &signs)).collect();
    let trials: Vec<_> = replay.workers.iter().flat_map(|j| j.evaluated.iter().cloned()).collect();
    let tally = Tally {
        evaluations: trials.len() as u64,
        failed: trials.iter().filter(|t| t.failure.is_some()).count() as u64,
        pruned: trials.iter().filter(|t| t.pruned()).count() as u64,
        emigrated: replay.workers.iter().flat_map(|j| &j.emigrations).map(|(_, i)| i.len() as u64).sum(),
        resumed: 0,
    };
    let wall_s = trials.iter().map(|t| t.duration_s).sum::<f64>() / replay.layout.workers().max(1) as f64;
    let mut result = RunResult::aggregate(islands, tally, top_n, true, wall_s, trials, &config.objectives);
    result.propagator = config.propagator.clone();
    result
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
