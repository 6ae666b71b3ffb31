//! The end of a run: every worker root reports its island view, the results are combined on every
//! rank, and rank 0 collects every evaluation for the trial table.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::individual::{Individual, IndividualId};
use crate::layout::Layout;
use crate::population::Population;
use crate::transport::Communicator;

use super::message::{TAG_TRIALS, decode, encode};

/// What a run returns on every rank.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunResult {
    /// The best individuals over all islands (distinct identities), best first.
    pub best: Vec<Individual>,
    /// The best individuals of each island's final active population, best first.
    pub islands: Vec<Vec<Individual>>,
    /// Every evaluation of the run (on world rank 0 only; empty elsewhere).
    pub trials: Vec<Individual>,
    /// Total evaluations over all workers.
    pub evaluations: u64,
    /// Evaluations that failed (error, panic, NaN).
    pub failed: u64,
    /// Seconds of the optimization itself (from the start barrier to the clean end).
    pub wall_s: f64,
    /// True if every worker of each island ended with the same active population.
    pub consistent: bool,
    /// Active individuals per island at the end.
    pub active_per_island: Vec<usize>,
    /// Individuals sent to other islands (moved or copied), over all workers.
    pub emigrated: u64,
    /// Evaluations that were already in the checkpoint when this run started.
    pub resumed: u64,
}

impl RunResult {
    /// Evaluations per second of this run (not counting those resumed from a checkpoint).
    pub fn evals_per_s(&self) -> f64 {
        (self.evaluations - self.resumed) as f64 / self.wall_s.max(1e-9)
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct RootReport {
    island: usize,
    active_fingerprint: u64,
    active_len: usize,
    top: Vec<Individual>,
    evaluations: u64,
    failed: u64,
    emigrated: u64,
    resumed: u64,
}

/// The `top_n` best distinct identities over the islands' best lists (pollination copies count once).
pub(crate) fn global_best(islands: &[Vec<Individual>], top_n: usize) -> Vec<Individual> {
    let mut all: Vec<Individual> = islands.iter().flatten().cloned().collect();
    all.sort_by(|a, b| a.loss.total_cmp(&b.loss).then(a.id.cmp(&b.id)));
    all.dedup_by_key(|i| i.id);
    all.truncate(top_n);
    all
}

/// FNV-1a over the sorted active identities: equal populations give equal fingerprints.
fn fingerprint(ids: &[IndividualId]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for id in ids {
        for b in encode(id) {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// What one worker root brings to the summary.
pub(crate) struct RootOutcome<'a> {
    pub island: usize,
    pub population: &'a Population,
    pub evaluated: Vec<Individual>,
    pub emigrated: u64,
    pub resumed: u64,
    pub wall_s: f64,
}

/// Combine the roots' views (collective over the roots' communicator).
pub(crate) fn summarize(
    roots: &mut dyn Communicator,
    layout: &Layout,
    top_n: usize,
    outcome: RootOutcome<'_>,
) -> Result<RunResult> {
    let RootOutcome { island, population, evaluated, emigrated, resumed, wall_s } = outcome;
    let ids = population.active_ids_sorted();
    let report = RootReport {
        island,
        active_fingerprint: fingerprint(&ids),
        active_len: ids.len(),
        top: population.best(top_n),
        evaluations: evaluated.len() as u64,
        failed: evaluated.iter().filter(|i| i.failure.is_some()).count() as u64,
        emigrated,
        resumed,
    };
    let reports: Vec<RootReport> =
        roots.all_gather(encode(&report))?.iter().enumerate().map(|(w, b)| decode(b, w)).collect::<Result<_>>()?;
    let mut result = RunResult { consistent: true, wall_s, ..Default::default() };
    for i in 0..layout.islands() {
        let first = &reports[layout.island_workers(i).start];
        let same = layout.island_workers(i).all(|w| {
            reports[w].active_fingerprint == first.active_fingerprint && reports[w].active_len == first.active_len
        });
        result.consistent &= same;
        result.islands.push(first.top.clone());
        result.active_per_island.push(first.active_len);
    }
    result.evaluations = reports.iter().map(|r| r.evaluations).sum();
    result.failed = reports.iter().map(|r| r.failed).sum();
    result.emigrated = reports.iter().map(|r| r.emigrated).sum();
    result.resumed = reports.iter().map(|r| r.resumed).sum();
    result.best = global_best(&result.islands, top_n);

    // Trials go to rank 0 only: they can be large and only rank 0 writes files. They travel in
    // chunks (the chunk count first), so that no message nears MPI's 2 GiB count limit.
    const CHUNK: usize = 100_000;
    if roots.rank() == 0 {
        result.trials = evaluated;
        for w in 1..roots.size() {
            let chunks: u64 = decode(&roots.recv(w, TAG_TRIALS)?, w)?;
            for _ in 0..chunks {
                let part: Vec<Individual> = decode(&roots.recv(w, TAG_TRIALS)?, w)?;
                result.trials.extend(part);
            }
        }
    } else {
        roots.send(0, TAG_TRIALS, encode(&(evaluated.len().div_ceil(CHUNK) as u64)))?;
        for chunk in evaluated.chunks(CHUNK) {
            roots.send(0, TAG_TRIALS, encode(&chunk))?;
        }
        roots.wait_sends()?;
    }
    Ok(result)
}
