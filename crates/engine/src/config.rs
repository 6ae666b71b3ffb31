//! The checked configuration of a run, shared by the library API and the CLI.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::journal::FsyncPolicy;
pub use crate::selection::Selection;
use propulate_core::layout::IslandSpec;
use propulate_core::objective::{Objective, check_objectives};
use propulate_core::propagator::{DefaultPropagatorConfig, PropagatorChoice, PropagatorSpec};
use propulate_core::topology::TopologySpec;

/// Everything that shapes a run except the search space, the loss and a custom propagator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// Evaluations per worker.
    pub generations: u64,
    /// Number or sizes of islands.
    pub islands: IslandSpec,
    /// MPI ranks that evaluate one individual together.
    pub ranks_per_worker: usize,
    /// Probability that an island emigrates per generation (split over its workers, as in the reference).
    pub migration_probability: f64,
    /// Send copies (pollination) instead of moving individuals (migration).
    pub pollination: bool,
    /// Who migrates where.
    pub topology: TopologySpec,
    /// How emigrants are chosen.
    pub emigration: Selection,
    /// With pollination, which individuals immigrants replace.
    pub immigration: Selection,
    /// The built-in propagator and its settings; `None`: a resume breeds with its checkpoint's,
    /// a new run with what `auto` picks for its space, budget and objectives
    /// (`propagator::Problem::pick`), with the defaults for the number of workers. A run records
    /// the spec in effect in its checkpoint (defaults included) and refuses to resume with
    /// another. Checkpoints written before specs existed hold the genetic propagator's bare
    /// settings here, which still read (as `ga`).
    #[serde(default, deserialize_with = "spec_or_genetic_settings")]
    pub propagator: Option<PropagatorSpec>,
    /// The propagator as the command line asks for it (named or not, some settings given): when
    /// set, the run resolves it against the run it continues, where the checkpoint's manifest is
    /// read, and breeds with the result instead of `propagator`. Not recorded (the result is).
    #[serde(skip)]
    pub propagator_choice: Option<PropagatorChoice>,
    /// The name of the program's own propagator ([`Optimizer::propagator`](crate::Optimizer::propagator)),
    /// which then breeds instead of `propagator`: set by the run, recorded so that a resume with
    /// another one (or a built-in one) is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_propagator: Option<String>,
    /// What the run optimizes, by name and direction, when it optimizes several things at once
    /// (each evaluation then reports one value per objective); empty: one loss, minimized.
    /// Recorded only when declared, so single-objective checkpoints keep their format.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objectives: Vec<Objective>,
    /// The run seed; each worker draws from its own stream of it.
    pub seed: u64,
    /// How many best individuals to report, globally and per island.
    pub top_n: usize,
    /// Where and how to checkpoint; not recorded in the manifest itself.
    #[serde(skip)]
    pub checkpoint: Option<CheckpointSettings>,
    /// Whether world rank 0 gathers every evaluation into [`RunResult::trials`](crate::RunResult::trials)
    /// at the end (the default). A program that does not read them saves the gathering: every
    /// evaluation of the run travels to rank 0 and stays in its memory (a million evaluations:
    /// about a second on a 2-core machine and hundreds of megabytes). The totals, the best and a
    /// run's Pareto front are the same either way. Not recorded: a resume may choose either.
    #[serde(skip, default = "gather_trials_by_default")]
    pub gather_trials: bool,
    /// Configurations to evaluate first, by parameter name (`--enqueue FILE`): configuration k is
    /// the child of worker `k mod workers` in its generation `k / workers`, so each worker
    /// evaluates its share, in order, before it breeds, and a resume evaluates each exactly once.
    /// Recorded only when given; a resume with others is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enqueued: Vec<propulate_core::enqueued::Configuration>,
    /// Whether an island's workers share their generations (`--shared-budget`): the island
    /// evaluates its workers times `generations` in all, a worker whose evaluations were quick
    /// going on while the island's last, instead of each worker evaluating `generations` and the
    /// quick ones waiting for the slowest at the end. Not recorded: a resume may choose either.
    #[serde(skip)]
    pub shared_budget: bool,
    /// `generations` is a default, not a choice (the command line without `--generations`): a
    /// resume continues its checkpoint's budget instead (a run started with 500, or population-based
    /// training ended by its members' budget, resumed by a command that leaves the flag out, stopped
    /// at the default). Not recorded.
    #[serde(skip)]
    pub generations_by_default: bool,
}

fn gather_trials_by_default() -> bool {
    true
}

/// Checkpointing of a run: the directory (resumed if it holds a run) and the fsync policy.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckpointSettings {
    /// The checkpoint directory.
    pub dir: std::path::PathBuf,
    /// When journal lines are forced to disk.
    pub fsync: FsyncPolicy,
    /// Facts recorded in the manifest and compared on resume (the CLI records the function).
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// Seed a new checkpoint from this one, on a possibly different number of workers or islands.
    pub reshape_from: Option<std::path::PathBuf>,
    /// Seed a new checkpoint with the evaluations of earlier runs (checkpoints, `trials.csv`
    /// files, Optuna journals), not evaluated again (`crate::warm_start`).
    pub warm_start: Vec<std::path::PathBuf>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            generations: 100,
            islands: IslandSpec::Count(1),
            ranks_per_worker: 1,
            migration_probability: 0.9,
            pollination: false,
            topology: TopologySpec::FullyConnected,
            emigration: Selection::Best,
            immigration: Selection::Worst,
            propagator: None,
            propagator_choice: None,
            custom_propagator: None,
            objectives: Vec::new(),
            seed: 0,
            top_n: 1,
            checkpoint: None,
            gather_trials: true,
            shared_budget: false,
            generations_by_default: false,
            enqueued: Vec::new(),
        }
    }
}

/// `propagator` as recorded: a spec, or, in checkpoints written before specs existed, the genetic
/// propagator's settings without a name.
fn spec_or_genetic_settings<'de, D>(deserializer: D) -> std::result::Result<Option<PropagatorSpec>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Recorded {
        Spec(PropagatorSpec),
        GeneticSettings(DefaultPropagatorConfig),
    }
    Ok(Option::<Recorded>::deserialize(deserializer)?.map(|recorded| match recorded {
        Recorded::Spec(spec) => spec,
        Recorded::GeneticSettings(settings) => PropagatorSpec::Ga(settings),
    }))
}

/// The most generations per worker a run may ask for.
pub const MAX_GENERATIONS: u64 = 1 << 40;

impl RunConfig {
    /// Check the values that do not depend on the number of ranks.
    pub fn validate(&self) -> Result<()> {
        if self.generations == 0 {
            return Err(Error::InvalidConfig("generations must be at least 1 (evaluations per worker)".into()));
        }
        // Generation numbers are identities and journal keys; the cap keeps every sum of them (a
        // reshaped run's offset plus its generations) far from overflowing.
        if self.generations > MAX_GENERATIONS {
            return Err(Error::InvalidConfig(format!(
                "generations must be at most {MAX_GENERATIONS} (2^40) per worker, got {}",
                self.generations
            )));
        }
        if !(0.0..=1.0).contains(&self.migration_probability) {
            return Err(Error::InvalidConfig(format!(
                "migration probability must be in [0, 1], got {}",
                self.migration_probability
            )));
        }
        if self.top_n == 0 {
            return Err(Error::InvalidConfig("top-n must be at least 1".into()));
        }
        check_objectives(&self.objectives)?;
        if self.multi_objective()
            && let Some(spec) = &self.propagator
            && !PropagatorSpec::MULTI_OBJECTIVE.contains(&spec.name())
        {
            return Err(Error::InvalidConfig(format!(
                "propagator {} models one loss and cannot breed on {} objectives; use one of: {}",
                spec.name(),
                self.objectives.len(),
                PropagatorSpec::MULTI_OBJECTIVE.join(", ")
            )));
        }
        Ok(())
    }

    /// True when the run declares two or more objectives: islands rank by Pareto dominance.
    pub fn multi_objective(&self) -> bool {
        self.objectives.len() >= 2
    }

    /// The factors that make each declared objective one to minimize (1, or -1 if maximized).
    pub fn objective_signs(&self) -> Vec<f64> {
        propulate_core::objective::signs(&self.objectives)
    }
}
