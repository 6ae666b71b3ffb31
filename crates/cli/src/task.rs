//! The task seam: what the CLI optimizes. A task turns its own flags into a search space and a loss
//! closure; the driver never knows which task runs.

use propulate::early_stop::EarlyStopper;
use propulate::{LossResult, Params, SearchSpace, WorkerContext};

/// How a binary builds the CNN task from the flags on a world rank. Only the CNN executable
/// (`propulate-rs-cnn`, which links libtorch) has one; the main binary hands CNN runs over to it,
/// so that `--version`, `report`, `env`, functions and command trials never load libtorch.
pub type CnnTaskMaker = fn(&super::args::RunArgs, usize) -> propulate::Result<Box<dyn Task>>;

/// A loss as the library takes it, shareable by the in-process ranks of `--local-ranks`.
pub type Loss = std::sync::Arc<dyn Fn(Params<'_>, &mut WorkerContext<'_>) -> LossResult + Send + Sync>;

/// Something the CLI can optimize.
pub trait Task {
    /// The task's name: the default checkpoint is `checkpoints/<name>-seed<seed>`.
    fn name(&self) -> String;
    /// What is searched.
    fn space(&self) -> &SearchSpace;
    /// The loss of one point, called on every rank of its worker.
    fn loss(&self) -> Loss;
    /// Facts recorded in the checkpoint's manifest and compared on resume (a resume with another
    /// function is refused), and written into `best.json`.
    fn checkpoint_facts(&self) -> serde_json::Map<String, serde_json::Value>;
    /// Evaluations per worker when `--generations` is not given.
    fn default_generations(&self) -> u64;
    /// Ranks per worker when `--ranks-per-worker` is not given, for a job of `world_size` ranks.
    fn default_ranks_per_worker(&self, _world_size: usize) -> usize {
        1
    }
    /// The propagator when `--propagator` is not given (a name `--propagator` takes).
    fn default_propagator(&self) -> &'static str {
        "ga"
    }
    /// The objectives the task itself declares (the multi-objective benchmark functions), reported
    /// as metrics of these names; empty: one loss, or what `--objectives` asks for.
    fn objectives(&self) -> Vec<propulate::Objective> {
        Vec::new()
    }
    /// The parameters population-based training must copy unchanged when it explores (a network's
    /// shape, which the training state it continues was saved with), unless `--pbt-fixed` says.
    fn pbt_fixed(&self) -> &'static [&'static str] {
        &[]
    }
    /// What stops hopeless evaluations early, if the task's flags asked for it.
    fn early_stopper(&self) -> Option<Box<dyn EarlyStopper>> {
        None
    }
    /// What the loss is, in the line per evaluation.
    fn loss_name(&self) -> &'static str {
        "loss"
    }
    /// True when every evaluation is worth a line of its own on stdout (slow losses).
    fn prints_each_evaluation(&self) -> bool {
        false
    }
    /// What to tell before the run starts (rank 0 prints it on stderr).
    fn notices(&self) -> Vec<String> {
        Vec::new()
    }
}
