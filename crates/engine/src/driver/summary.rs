//! The end of a run: every worker root reports its island view, the results are combined on every
//! rank, and rank 0 collects every evaluation for the trial table.

use serde::{Deserialize, Serialize};

use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::result::{IslandView, RunResult, Tally};
use crate::transport::Communicator;
use propulate_core::front::pareto_front;
use propulate_core::individual::{Individual, IndividualId};
use propulate_core::layout::Layout;
use propulate_core::population::Population;

use super::message::{TAG_TRIALS, decode, encode};

#[derive(Debug, Serialize, Deserialize)]
struct RootReport {
    island: usize,
    active_fingerprint: u64,
    /// How many individuals are active on the island, as this root sees it.
    active: usize,
    /// The island's best and front, from its first worker only: every root receives every
    /// report, and views from all of them made each hold the world's fronts.
    view: Option<IslandView>,
    evaluations: u64,
    failed: u64,
    pruned: u64,
    emigrated: u64,
    resumed: u64,
}

/// FNV-1a over the sorted active identities: equal populations give equal fingerprints (within
/// one run: only the roots of one job compare them).
fn fingerprint(ids: &[IndividualId]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for id in ids {
        let words = [u64::from(id.island), u64::from(id.worker), id.generation];
        for b in words.iter().flat_map(|w| w.to_le_bytes()) {
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
    cfg: &RunConfig,
    outcome: RootOutcome<'_>,
) -> Result<RunResult> {
    let top_n = cfg.top_n;
    let RootOutcome { island, population, evaluated, emigrated, resumed, wall_s } = outcome;
    let ids = population.active_ids_sorted();
    let leads_island = layout.island_workers(island).start == roots.rank();
    let report = RootReport {
        island,
        active_fingerprint: fingerprint(&ids),
        active: population.active_len(),
        view: leads_island.then(|| IslandView::of(population, top_n, &cfg.objective_signs())),
        evaluations: evaluated.len() as u64,
        failed: evaluated.iter().filter(|i| i.failure.is_some()).count() as u64,
        pruned: evaluated.iter().filter(|i| i.pruned()).count() as u64,
        emigrated,
        resumed,
    };
    let reports: Vec<RootReport> =
        roots.all_gather(encode(&report))?.iter().enumerate().map(|(w, b)| decode(b, w)).collect::<Result<_>>()?;
    let mut consistent = true;
    let mut islands = Vec::with_capacity(layout.islands());
    for i in 0..layout.islands() {
        let first = &reports[layout.island_workers(i).start];
        consistent &= layout
            .island_workers(i)
            .all(|w| reports[w].active_fingerprint == first.active_fingerprint && reports[w].active == first.active);
        let view = first
            .view
            .clone()
            .ok_or_else(|| Error::Transport(format!("the summary lacks island {i}'s view from its first worker")))?;
        islands.push(view);
    }
    let tally = Tally {
        evaluations: reports.iter().map(|r| r.evaluations).sum(),
        failed: reports.iter().map(|r| r.failed).sum(),
        pruned: reports.iter().map(|r| r.pruned).sum(),
        emigrated: reports.iter().map(|r| r.emigrated).sum(),
        resumed: reports.iter().map(|r| r.resumed).sum(),
    };

    // Trials go to rank 0 only: they can be large and only rank 0 writes files. They travel in
    // chunks (the chunk count first), so that no message nears MPI's 2 GiB count limit. Without
    // them, only what rank 0's Pareto front needs travels: each worker's own front (the front of
    // the fronts is the front of every evaluation).
    const CHUNK: usize = 100_000;
    let signs = cfg.objective_signs();
    let evaluated = match (cfg.gather_trials, signs.len()) {
        (true, _) => evaluated,
        (false, 0 | 1) => Vec::new(),
        (false, _) => pareto_front(&evaluated, &signs),
    };
    let mut trials = Vec::new();
    if roots.rank() == 0 {
        // Room for every trial at once: growing it worker by worker copied it several times over.
        trials.reserve_exact(tally.evaluations as usize);
        trials.extend(evaluated);
        for w in 1..roots.size() {
            let chunks: u64 = decode(&roots.recv(w, TAG_TRIALS)?, w)?;
            for _ in 0..chunks {
                let part: Vec<Individual> = decode(&roots.recv(w, TAG_TRIALS)?, w)?;
                trials.extend(part);
            }
        }
    } else {
        roots.send(0, TAG_TRIALS, encode(&(evaluated.len().div_ceil(CHUNK) as u64)))?;
        for chunk in evaluated.chunks(CHUNK) {
            roots.send(0, TAG_TRIALS, encode(&chunk))?;
        }
        roots.wait_sends()?;
    }
    let mut result = RunResult::aggregate(islands, tally, top_n, consistent, wall_s, trials, &cfg.objectives);
    if !cfg.gather_trials {
        result.trials = Vec::new();
    }
    Ok(result)
}
