//! What a run returns, and the one place that puts it together from the islands' final views: a
//! finished run (`driver::summary`) and a checkpoint read back (`report`) both end here.

use serde::{Deserialize, Serialize};

use propulate_core::front::pareto_front;
use propulate_core::individual::Individual;
use propulate_core::objective::{Direction, Objective, signs};
use propulate_core::propagator::PropagatorSpec;

/// What a run returns on every rank.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunResult {
    /// The best individuals over all islands (distinct identities), best first.
    pub best: Vec<Individual>,
    /// The best individuals of each island's final active population, best first.
    pub islands: Vec<Vec<Individual>>,
    /// Every evaluation of the run (on world rank 0 only, and only with
    /// [`RunConfig::gather_trials`](crate::config::RunConfig::gather_trials), the default; empty
    /// elsewhere).
    pub trials: Vec<Individual>,
    /// Total evaluations over all workers.
    pub evaluations: u64,
    /// Evaluations that failed (error, panic, NaN).
    pub failed: u64,
    /// Evaluations an early stopper ended.
    #[serde(default)]
    pub pruned: u64,
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
    /// The objectives the run declared (empty: one loss).
    #[serde(default)]
    pub objectives: Vec<Objective>,
    /// With two or more objectives, the run's Pareto front: the non-dominated evaluations, by the
    /// first objective. On world rank 0 from every evaluation; elsewhere from the islands' fronts.
    #[serde(default)]
    pub front: Vec<Individual>,
    /// With two or more objectives, each island's front: the non-dominated individuals of its
    /// final active population.
    #[serde(default)]
    pub island_fronts: Vec<Vec<Individual>>,
    /// The built-in propagator the run bred with, every setting resolved (a resume's is its
    /// checkpoint's, merged with what the run asked for); `None`: the program's own.
    #[serde(skip)]
    pub propagator: Option<PropagatorSpec>,
    /// Population-based training: the training states left under the checkpoint at the end (on
    /// world rank 0).
    #[serde(default)]
    pub training_states: Option<StatesOnDisk>,
}

/// Training states on disk: how many and how large.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatesOnDisk {
    /// Saved states (one directory each).
    pub count: u64,
    /// Their size in bytes.
    pub bytes: u64,
}

impl RunResult {
    /// True when the best individual failed: the run evaluated nothing that succeeded.
    pub fn all_failed(&self) -> bool {
        self.best.first().is_some_and(|b| b.failure.is_some())
    }

    /// The best individual's value as the run names it: `loss 4.200000e-1`, or with one declared
    /// objective its own name and direction (`acc 9.100000e-1, maximized`; the loss is then the
    /// objective negated when it is maximized, which would read as a bug). `None` without one.
    pub fn best_value(&self) -> Option<String> {
        let b = self.best.first()?;
        Some(match (self.objectives.as_slice(), b.objectives.first()) {
            ([o], Some(v)) if o.name != "loss" || o.direction == Direction::Max => {
                format!("{} {v:.6e}, {}imized", o.name, o.direction.as_str())
            }
            _ => format!("loss {:.6e}", b.loss),
        })
    }

    /// Evaluations per second of this run (not counting those resumed from a checkpoint).
    pub fn evals_per_s(&self) -> f64 {
        (self.evaluations - self.resumed) as f64 / self.wall_s.max(1e-9)
    }
}

/// Totals over the workers of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub evaluations: u64,
    pub failed: u64,
    pub pruned: u64,
    pub emigrated: u64,
    pub resumed: u64,
}

impl RunResult {
    /// The result from each island's view (in island order), the totals, and every trial (rank
    /// 0's list; empty elsewhere).
    pub(crate) fn aggregate(
        views: Vec<IslandView>,
        tally: Tally,
        top_n: usize,
        consistent: bool,
        wall_s: f64,
        trials: Vec<Individual>,
        objectives: &[Objective],
    ) -> RunResult {
        let signs = signs(objectives);
        let front = match signs.len() {
            0 | 1 => Vec::new(),
            _ if trials.is_empty() => pareto_front(views.iter().flat_map(|v| &v.front), &signs),
            _ => pareto_front(&trials, &signs),
        };
        let mut islands = Vec::with_capacity(views.len());
        let mut active_per_island = Vec::with_capacity(views.len());
        let mut island_fronts = Vec::new();
        for view in views {
            islands.push(view.top);
            active_per_island.push(view.active);
            if signs.len() >= 2 {
                island_fronts.push(view.front);
            }
        }
        RunResult {
            objectives: objectives.to_vec(),
            front,
            island_fronts,
            best: global_best(&islands, top_n),
            islands,
            trials,
            evaluations: tally.evaluations,
            failed: tally.failed,
            pruned: tally.pruned,
            wall_s,
            consistent,
            active_per_island,
            emigrated: tally.emigrated,
            resumed: tally.resumed,
            propagator: None,
            training_states: None,
        }
    }
}

/// What the result takes from one island: its best individuals, how many are active, its front.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct IslandView {
    pub top: Vec<Individual>,
    pub active: usize,
    pub front: Vec<Individual>,
}

impl IslandView {
    /// The view of `population` (its front only with two or more `signs`).
    pub fn of(population: &propulate_core::population::Population, top_n: usize, signs: &[f64]) -> IslandView {
        let front = if signs.len() >= 2 { pareto_front(population.iter_best(), signs) } else { Vec::new() };
        let mut ranked: Vec<&Individual> = population.iter_best().collect();
        ranked.sort_by(|a, b| reported_order(a, b));
        IslandView { top: ranked.into_iter().take(top_n).cloned().collect(), active: population.active_len(), front }
    }
}

/// The order a run reports its best in (best.json's `loss` and `top`, the end-of-run line, a
/// library's `best`): by the loss (the first objective with several; the islands breed by Pareto
/// rank, which puts a front's two ends first), feasible first, and a completed evaluation before
/// any pruned one, as Optuna's `best_trial` is never a pruned trial: a pruned training's last value
/// was measured before its end, on a scale the completed ones' need not share.
fn reported_order(a: &Individual, b: &Individual) -> std::cmp::Ordering {
    (a.pruned(), a.rank_key()).cmp(&(b.pruned(), b.rank_key())).then(a.id.cmp(&b.id))
}

/// The `top_n` best distinct identities over the islands' best lists (pollination copies count once).
fn global_best(islands: &[Vec<Individual>], top_n: usize) -> Vec<Individual> {
    let mut all: Vec<Individual> = islands.iter().flatten().cloned().collect();
    all.sort_by(reported_order);
    all.dedup_by_key(|i| i.id);
    all.truncate(top_n);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use propulate_core::curve::Curve;
    use propulate_core::individual::IndividualId;
    use propulate_core::population::Population;
    use propulate_core::space::Value;

    fn individual(generation: u64, loss: f64, objectives: Vec<f64>) -> Individual {
        let mut i = Individual::new(vec![Value::Float(loss)]);
        i.id = IndividualId { island: 0, worker: 0, generation };
        i.loss = loss;
        i.objectives = objectives;
        i
    }

    /// The reported best is by the first objective, not the islands' Pareto order (whose crowding
    /// distance puts the front's two ends first, the last end as likely as the first), and a
    /// completed evaluation comes before a pruned one, whatever their losses.
    #[test]
    fn the_reported_best_is_the_least_first_objective_of_the_completed_ones() {
        let mut island = Population::new().rank_by_objectives(vec![1.0, 1.0]);
        for (g, (a, b)) in [(0.9, 0.1), (0.5, 0.5), (0.1, 0.9), (0.7, 0.7)].into_iter().enumerate() {
            island.insert(individual(g as u64, a, vec![a, b]));
        }
        let view = IslandView::of(&island, 2, &[1.0, 1.0]);
        let firsts: Vec<f64> = view.top.iter().map(|i| i.objectives[0]).collect();
        assert_eq!(firsts, [0.1, 0.5]);

        let mut pruned = individual(0, 0.05, vec![]);
        pruned.curve = Some(Curve { points: vec![(1, 0.05)], pruned: true });
        let mut island = Population::new();
        island.insert(pruned);
        island.insert(individual(1, 5.0, vec![]));
        let view = IslandView::of(&island, 2, &[]);
        let result = RunResult::aggregate(vec![view], Tally::default(), 2, true, 1.0, Vec::new(), &[]);
        let losses: Vec<f64> = result.best.iter().map(|i| i.loss).collect();
        assert_eq!(losses, [5.0, 0.05], "the completed one first, the pruned one after it");
    }
}
