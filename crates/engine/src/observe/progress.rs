//! The progress line: rank 0's worker, at most once a second and at its last generation, on stderr.

use std::io::Write;
use std::time::{Duration, Instant};

use super::{Event, Observer, RankInfo};

/// Prints `[propulate-rs] worker 0: generation 120/1000 | island 0 best loss ... | N evaluations/s
/// per worker` for world rank 0 (install it with [`ObserverMode::Always`](super::ObserverMode)).
#[derive(Debug)]
pub struct ProgressLine {
    last: Option<Instant>,
    every: Duration,
}

impl Default for ProgressLine {
    fn default() -> Self {
        ProgressLine { last: None, every: Duration::from_secs(1) }
    }
}

impl Observer for ProgressLine {
    fn observe(&mut self, rank: &RankInfo, event: &Event<'_>) -> Result<(), String> {
        let Event::Evaluated { status, .. } = event else { return Ok(()) };
        if rank.rank != 0 {
            return Ok(());
        }
        let now = Instant::now();
        let due = self.last.is_none_or(|t| now - t >= self.every);
        if !due && status.generation < status.last_generation {
            return Ok(());
        }
        self.last = Some(now);
        let best = status.island_best.unwrap_or(f64::INFINITY);
        let rate = (status.evaluations - status.resumed) as f64 / status.elapsed_s.max(1e-9);
        // A closed stderr is no reason to stop a run.
        let (worker, island) = (rank.worker, rank.island);
        let (generation, last) = (status.generation, status.last_generation);
        let at = match status.island_budget {
            Some((known, total)) => format!("generation {generation} | island {island} {known}/{total} evaluations"),
            None => format!("generation {generation}/{last} | island {island}"),
        };
        let _ = writeln!(
            std::io::stderr().lock(),
            "[propulate-rs] worker {worker}: {at} best loss {best:.6e} | {rate:.0} evaluations/s per worker"
        );
        Ok(())
    }
}
