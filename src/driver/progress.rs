//! The progress line printed by rank 0 (at most once a second, and at the end).

use std::io::Write;
use std::time::{Duration, Instant};

use crate::population::Population;

/// Progress reporting of one worker root.
pub(crate) struct Progress {
    generations: u64,
    start: Instant,
    last: Instant,
    every: Duration,
}

impl Progress {
    pub fn new(generations: u64) -> Self {
        let now = Instant::now();
        Progress { generations, start: now, last: now, every: Duration::from_secs(1) }
    }

    pub fn tick(&mut self, done: u64, population: &Population) {
        let now = Instant::now();
        if now - self.last < self.every && done < self.generations {
            return;
        }
        self.last = now;
        let best = population.best(1).first().map_or(f64::INFINITY, |i| i.loss);
        let rate = done as f64 / (now - self.start).as_secs_f64().max(1e-9);
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "[propulate-rs] worker 0: generation {done}/{} | island 0 best loss {best:.6e} | {rate:.0} evaluations/s per worker",
            self.generations
        );
    }
}
