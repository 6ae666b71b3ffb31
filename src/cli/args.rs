//! The command line's flags: clap parses them, `to_config` turns them into a [`RunConfig`] that the
//! library validates (in `RunConfig::validate` and the driver, the one place for it).

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use super::propagator_choice::{GpKernel, PropagatorArgs};
use super::task::Task;

use propulate::config::{CheckpointSettings, RunConfig};
use propulate::journal::{FsyncPolicy, Manifest};
use propulate::propagator::DefaultPropagatorConfig;
use propulate::topology::Topology;
use propulate::{Error, IslandSpec, Result, TopologySpec};

/// The genetic propagator's probabilities and step width when not given (the reference's values).
const CROSSOVER_PROB: f64 = 0.7;
const MUTATION_PROB: f64 = 0.4;
const RANDOM_INIT_PROB: f64 = 0.1;
const SIGMA_FACTOR: f64 = 0.05;

/// Asynchronous island-model evolutionary hyperparameter optimization, on MPI.
///
/// Without --function it tunes the reference tutorial's CNN on Fashion-MNIST, every candidate
/// trained data-parallel by the ranks of one worker: `mpirun -np 8 propulate-rs --islands 2`.
/// With --function it minimises a benchmark function: `mpirun -np 8 propulate-rs --function rastrigin`.
#[derive(Debug, Clone, Parser)]
#[command(name = "propulate-rs", version, about, args_conflicts_with_subcommands = true)]
pub(crate) struct Cli {
    /// A subcommand; without one, run an optimization.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The optimization's options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Clone, Subcommand)]
pub(crate) enum Command {
    /// Summarize a checkpoint (finished or not) and write best.json, trials.csv and trials.jsonl.
    Report(ReportArgs),
    /// Print, one line per rank in rank order, what each rank sees: launcher, local rank, host,
    /// GPUs and its device, and its place in the layout. Runs under mpirun/srun like a job; trains
    /// and writes nothing.
    Env(EnvArgs),
}

/// Options of `propulate-rs env`: the layout flags of the run to check.
#[derive(Debug, Clone, Args)]
pub(crate) struct EnvArgs {
    /// Number of islands (workers are split evenly).
    #[arg(long, default_value_t = 1, conflicts_with = "island_sizes")]
    pub islands: usize,
    /// Workers per island, comma separated (e.g. 3,5); overrides --islands.
    #[arg(long, value_delimiter = ',')]
    pub island_sizes: Option<Vec<usize>>,
    /// MPI ranks that evaluate one individual together (give the run's value: the CNN's default is 2).
    #[arg(long, default_value_t = 1)]
    pub ranks_per_worker: usize,
    /// Run this many ranks as threads of one process instead of using MPI.
    #[arg(long)]
    pub local_ranks: Option<usize>,
}

/// Options of `propulate-rs report`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ReportArgs {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// Where to write best.json, trials.csv and trials.jsonl (default: the checkpoint directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Best individuals to show per island.
    #[arg(long, default_value_t = 1)]
    pub top_n: usize,
}

/// Options of an optimization run.
#[derive(Debug, Clone, Args)]
pub(crate) struct RunArgs {
    /// Minimise this benchmark function instead of tuning the CNN (sphere, rosenbrock, step,
    /// quartic, rastrigin, griewank, schwefel, bisphere, birastrigin, bukin, eggcrate, himmelblau,
    /// keane, leon).
    #[arg(long)]
    pub function: Option<String>,
    /// Number of islands (workers are split evenly).
    #[arg(long, default_value_t = 1, conflicts_with = "island_sizes")]
    pub islands: usize,
    /// Workers per island, comma separated (e.g. 3,5); overrides --islands.
    #[arg(long, value_delimiter = ',')]
    pub island_sizes: Option<Vec<usize>>,
    /// MPI ranks that evaluate one individual together [default: the CNN 2 (1 when the number of
    /// ranks is odd), a function 1].
    #[arg(long)]
    pub ranks_per_worker: Option<usize>,
    /// Evaluations per worker [default: the CNN 4, a function 1000].
    #[arg(long)]
    pub generations: Option<u64>,
    /// Breeding pool of the default propagator: the best this many on the island (default: half
    /// the workers, at least 4; with --reference-genetic: 2 x workers).
    #[arg(long)]
    pub pop_size: Option<usize>,
    /// Random individuals until the island holds this many, then breeding (default: 2 x workers,
    /// at least 4; with --reference-genetic: the pop size; never below --pop-size).
    #[arg(long)]
    pub random_start: Option<usize>,
    /// The Python reference's genetic propagator instead of the default's settings: a pool of 2 x
    /// workers, no wider random start, Gaussian steps of one parameter and fixed width, no
    /// differential children (the default beat it on 12 of its 14 benchmark functions).
    #[arg(long)]
    pub reference_genetic: bool,
    /// Probability that an island sends emigrants per generation.
    #[arg(long, default_value_t = 0.9)]
    pub migration_probability: f64,
    /// Send copies to other islands (pollination) instead of moving individuals.
    #[arg(long)]
    pub pollination: bool,
    /// Migration topology: fully-connected, ring, or the path of a matrix file (one row per island).
    #[arg(long, default_value = "fully-connected")]
    pub topology: String,
    /// Probability that a child is a crossover of two parents [default: 0.7].
    #[arg(long)]
    pub crossover_prob: Option<f64>,
    /// Probability that one parameter is re-sampled [default: 0.4].
    #[arg(long)]
    pub mutation_prob: Option<f64>,
    /// Probability that the child is replaced by a random point [default: 0.1].
    #[arg(long)]
    pub random_init_prob: Option<f64>,
    /// Largest width of the Gaussian mutation as a fraction of each parameter's range [default: 0.05].
    #[arg(long)]
    pub sigma_factor: Option<f64>,
    /// Powers of ten below --sigma-factor that a Gaussian step may reach, drawn log-uniformly per
    /// child (default: 3; with --reference-genetic: 0, the reference's fixed step).
    #[arg(long)]
    pub step_decades: Option<f64>,
    /// Probability that a child is a differential-evolution step from the pool instead of a
    /// genetic one (default: 0.3; with --reference-genetic: 0, genetic only as the reference).
    #[arg(long)]
    pub differential_prob: Option<f64>,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Best individuals to show per island.
    #[arg(long, default_value_t = 1)]
    pub top_n: usize,
    /// Directory for best.json, trials.csv and trials.jsonl.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Checkpoint directory; a directory that holds a run is resumed
    /// [default: checkpoints/<task>-seed<seed>, the task being `cnn` or the function].
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Do not checkpoint.
    #[arg(long, conflicts_with = "checkpoint")]
    pub no_checkpoint: bool,
    /// When journal lines are forced to disk: never, always, or an interval such as 1000ms.
    #[arg(long, default_value = "1000ms")]
    pub fsync: FsyncPolicy,
    /// Start this run's checkpoint from the run in DIR, redistributing its active individuals over
    /// this run's islands (any number of workers and islands). DIR is only read. Once the new
    /// checkpoint exists, the same command simply resumes it.
    #[arg(long, value_name = "DIR", conflicts_with = "no_checkpoint")]
    pub reshape_from: Option<PathBuf>,
    /// Write one log file per rank into DIR (rank-00000.log, ...): role, host, status lines, failed
    /// evaluations. Appended to when a run is resumed.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// Generations between two status lines in the per-rank logs.
    #[arg(long, default_value_t = 10, requires = "log_dir", value_parser = clap::value_parser!(u64).range(1..))]
    pub log_interval: u64,
    /// Sleep this long in every evaluation, to stand in for an expensive loss (demos, crash tests).
    #[arg(long, default_value_t = 0.0)]
    pub eval_delay_ms: f64,
    /// The CNN task's options.
    #[command(flatten)]
    pub cnn: CnnArgs,
    /// Early stopping and GPUs of the tasks that train.
    #[command(flatten)]
    pub training: TrainingArgs,
    /// A user's program as the task.
    #[command(flatten)]
    pub trial: CommandArgs,
    #[command(flatten)]
    pub breeding: PropagatorArgs,
    /// Run this many ranks as threads of one process instead of using MPI.
    #[arg(long)]
    pub local_ranks: Option<usize>,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

impl RunArgs {
    /// The checkpoint directory this run uses, if any.
    pub fn checkpoint_dir(&self, task: &str) -> Option<PathBuf> {
        if self.no_checkpoint {
            return None;
        }
        Some(
            self.checkpoint
                .clone()
                .unwrap_or_else(|| PathBuf::from("checkpoints").join(format!("{task}-seed{}", self.seed))),
        )
    }

    /// What a resume must agree with besides the configuration: the task's facts, the propagator
    /// and its settings in effect ([`RunArgs::breeding_in_effect`]).
    fn checkpoint_facts(&self, task: &dyn Task, propagator: &str) -> serde_json::Map<String, serde_json::Value> {
        let mut facts = task.checkpoint_facts();
        facts.insert("propagator".into(), propagator.into());
        facts.extend(self.breeding_in_effect(task, propagator).settings_given());
        facts
    }

    /// The manifest of the run this one continues: its checkpoint's, or else the run it reshapes
    /// (`--reshape-from`); `None` for a new run (or an unreadable manifest, which the resume reports).
    fn recorded_run(&self, task: &dyn Task) -> Option<Manifest> {
        let own = self.checkpoint_dir(&task.name()).and_then(|dir| Manifest::read(&dir).ok());
        own.or_else(|| self.reshape_from.as_deref().and_then(|dir| Manifest::read(dir).ok()))
    }

    /// The propagator flags in effect for a run breeding with `propagator`: the command line's,
    /// and each one it leaves out as the run it continues recorded it, when that run bred with the
    /// same propagator, so that the same command line resumes a run as it was bred (as with the
    /// propagator's name). The GP's kernel is always recorded; a GP run that recorded none bred
    /// with the shared one, the only kernel until 2026-11-24.
    pub fn breeding_in_effect(&self, task: &dyn Task, propagator: &str) -> PropagatorArgs {
        let mut breeding = self.breeding.clone();
        if let Some(manifest) = self.recorded_run(task)
            && propagator_of(&manifest) == propagator
        {
            breeding.fill_from(&manifest.extra);
            if propagator == "gp" && breeding.gp_kernel.is_none() {
                breeding.gp_kernel = Some(GpKernel::Shared);
            }
        }
        if propagator == "gp" && breeding.gp_kernel.is_none() {
            breeding.gp_kernel = Some(GpKernel::PerAxis);
        }
        breeding
    }

    /// The propagator this run breeds with: `--propagator`; else, when it resumes, the one its
    /// checkpoint was bred with (so that the same command line resumes a run as it was, even one
    /// written when the task's default was another); else, when it reshapes a run
    /// (`--reshape-from`), that run's; else the task's default. A resume naming another
    /// propagator than its checkpoint's is refused: a silent switch would breed the rest of the
    /// run differently.
    pub fn propagator_name(&self, task: &dyn Task) -> Result<String> {
        let dir = self.checkpoint_dir(&task.name());
        let recorded = dir.as_deref().and_then(recorded_propagator);
        match (&self.breeding.propagator, recorded) {
            (Some(given), Some(recorded)) if *given != recorded => Err(Error::InvalidConfig(format!(
                "--propagator {given}: the checkpoint in {} was bred with {recorded}; resume with \
                 --propagator {recorded} (or without --propagator), or start a new run with another --checkpoint",
                dir.as_deref().unwrap_or(Path::new("")).display()
            ))),
            (Some(given), _) => Ok(given.clone()),
            (None, Some(recorded)) => Ok(recorded),
            (None, None) => Ok(self
                .reshape_from
                .as_deref()
                .and_then(recorded_propagator)
                .unwrap_or_else(|| task.default_propagator().to_string())),
        }
    }

    /// The genetic propagator's flags given with another propagator are an error, not ignored: the
    /// CNN task breeds with gp unless told otherwise, and `--pop-size 16` there would change nothing.
    fn check_genetic_flags(&self, propagator: &str) -> Result<()> {
        if propagator == "ga" {
            return Ok(());
        }
        let given: Vec<&str> = [
            ("--pop-size", self.pop_size.is_some()),
            ("--random-start", self.random_start.is_some()),
            ("--reference-genetic", self.reference_genetic),
            ("--crossover-prob", self.crossover_prob.is_some()),
            ("--mutation-prob", self.mutation_prob.is_some()),
            ("--random-init-prob", self.random_init_prob.is_some()),
            ("--sigma-factor", self.sigma_factor.is_some()),
            ("--step-decades", self.step_decades.is_some()),
            ("--differential-prob", self.differential_prob.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, set)| set.then_some(flag))
        .collect();
        if given.is_empty() {
            return Ok(());
        }
        Err(Error::InvalidConfig(format!(
            "{} set the genetic propagator, but the propagator is {propagator}: add --propagator ga, \
             or leave them out",
            given.join(", ")
        )))
    }

    /// The run configuration for a job of `world_size` ranks running `task` (its name and the
    /// facts its checkpoint records) and breeding with `propagator_name` (from
    /// [`RunArgs::propagator_name`]).
    pub fn to_config(&self, world_size: usize, task: &dyn Task, propagator_name: &str) -> Result<RunConfig> {
        let islands = match &self.island_sizes {
            Some(sizes) => IslandSpec::Sizes(sizes.clone()),
            None => IslandSpec::Count(self.islands),
        };
        let topology = match self.topology.as_str() {
            "fully-connected" | "full" => TopologySpec::FullyConnected,
            "ring" => TopologySpec::Ring,
            path => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::InvalidConfig(format!(
                        "--topology '{path}' is neither fully-connected, ring nor a readable matrix file: {e}"
                    ))
                })?;
                TopologySpec::Matrix(Topology::parse_matrix(&text)?)
            }
        };
        self.check_genetic_flags(propagator_name)?;
        let ranks_per_worker = self.ranks_per_worker.unwrap_or_else(|| task.default_ranks_per_worker(world_size));
        let workers = (world_size / ranks_per_worker.max(1)).max(1);
        let defaults = if self.reference_genetic {
            DefaultPropagatorConfig::reference(workers)
        } else {
            DefaultPropagatorConfig::for_workers(workers)
        };
        let pop_size = self.pop_size.unwrap_or(defaults.pop_size);
        let propagator = DefaultPropagatorConfig {
            pop_size,
            random_start: self.random_start.or(defaults.random_start).map(|n| n.max(pop_size)),
            crossover_prob: self.crossover_prob.unwrap_or(CROSSOVER_PROB),
            mutation_prob: self.mutation_prob.unwrap_or(MUTATION_PROB),
            random_init_prob: self.random_init_prob.unwrap_or(RANDOM_INIT_PROB),
            sigma_factor: self.sigma_factor.unwrap_or(SIGMA_FACTOR),
            step_points: defaults.step_points,
            step_decades: self.step_decades.unwrap_or(defaults.step_decades),
            differential_prob: self.differential_prob.unwrap_or(defaults.differential_prob),
        };
        let cfg = RunConfig {
            generations: self.generations.unwrap_or_else(|| task.default_generations()),
            islands,
            ranks_per_worker,
            migration_probability: self.migration_probability,
            pollination: self.pollination,
            topology,
            propagator: Some(propagator),
            seed: self.seed,
            top_n: self.top_n,
            checkpoint: self.checkpoint_dir(&task.name()).map(|dir| CheckpointSettings {
                dir,
                fsync: self.fsync,
                extra: self.checkpoint_facts(task, propagator_name),
                reshape_from: self.reshape_from.clone(),
            }),
            ..RunConfig::default()
        };
        Ok(cfg)
    }
}

/// `--lr-scale`: how the CNN task searches its learning rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LrScaleArg {
    Log,
    Linear,
}

/// Options of the CNN task (ignored with --function and --space).
#[derive(Debug, Clone, Args)]
pub(crate) struct CnnArgs {
    /// Directory of MNIST-format idx files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
    /// t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]); Debian's dataset-fashion-mnist
    /// installs Fashion-MNIST in the default.
    #[arg(long, value_name = "DIR", default_value = "/usr/share/datasets/fashion-mnist", help_heading = "CNN task")]
    pub data: PathBuf,
    /// Training images to use, the first N of the training split (0: all).
    #[arg(long, value_name = "N", default_value_t = 2000, help_heading = "CNN task")]
    pub train_images: usize,
    /// Validation images, the first N of the test split (0: all).
    #[arg(long, value_name = "N", default_value_t = 1000, help_heading = "CNN task")]
    pub valid_images: usize,
    /// Most epochs per evaluation.
    #[arg(long, value_name = "N", default_value_t = 20, help_heading = "CNN task")]
    pub epochs: u64,
    /// Stop a training after this many epochs without a better validation loss.
    #[arg(long, value_name = "N", default_value_t = 5, help_heading = "CNN task")]
    pub patience: u64,
    /// Images per training step on each rank.
    #[arg(long, value_name = "N", default_value_t = 8, help_heading = "CNN task")]
    pub batch: usize,
    /// How the learning rate (1e-4 to 1e-2) is searched: log (each decade alike) or linear (evenly
    /// in its value, as the reference does: most draws near the top, where Adadelta learns fastest).
    #[arg(long, value_enum, value_name = "SCALE", default_value_t = LrScaleArg::Log, help_heading = "CNN task")]
    pub lr_scale: LrScaleArg,
    /// Burn backend: tch (libtorch) or flex (pure Rust) [default: tch when built in, else flex].
    #[arg(long, help_heading = "CNN task")]
    pub backend: Option<String>,
    /// Where to train: cpu, cuda, or auto (the rank's GPU when libtorch sees one).
    #[arg(long, default_value = "auto", help_heading = "CNN task")]
    pub device: String,
}

/// Options of the tasks that train (the CNN task and command trials).
#[derive(Debug, Clone, Args)]
pub(crate) struct TrainingArgs {
    /// Stop hopeless trainings early, judged after every reported step (the CNN: every epoch)
    /// against the island's finished ones (halving: and its running ones): none, median, static,
    /// log-linear, dynamic or halving (successive halving).
    #[arg(long, value_name = "NAME", default_value = "none", help_heading = "Training (CNN task, command trials)")]
    pub early_stop: String,
    /// GPUs per rank: each rank trains its replica on K consecutive GPUs (local rank x K ...); the
    /// CNN puts its convolutions on the first and its classifier on the last, a command trial's
    /// process gets them as CUDA_VISIBLE_DEVICES.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64), help_heading = "Training (CNN task, command trials)")]
    pub gpus_per_rank: u64,
}

/// Options of command trials: a user's program tuned as it is (`--space FILE -- COMMAND`).
#[derive(Debug, Clone, Args)]
pub(crate) struct CommandArgs {
    /// Tune the program given after `--` over this search space (TOML: a [params] table of float,
    /// int and categorical parameters). Every rank of a worker runs one process of the program per
    /// evaluation, with torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, ...).
    #[arg(long, value_name = "FILE", conflicts_with = "function", help_heading = "Command trials")]
    pub space: Option<PathBuf>,
    /// Stop a trial still running after this many seconds (every process of it, on every rank);
    /// it is recorded as failed.
    #[arg(long, value_name = "SECONDS", help_heading = "Command trials")]
    pub trial_timeout: Option<f64>,
    /// Where each trial gets a directory of its own (logs per rank, result file) [default:
    /// <checkpoint>/trials; with --no-checkpoint, <out>/trials or else ./propulate-trials].
    #[arg(long, value_name = "DIR", help_heading = "Command trials")]
    pub trials_dir: Option<PathBuf>,
    /// The trial command, after `--`: `{name}` in it is replaced by a parameter's value; without
    /// any placeholder, `--name=value` is appended for every parameter.
    #[arg(last = true, value_name = "COMMAND", help_heading = "Command trials")]
    pub command: Vec<String>,
}

/// The propagator a checkpoint in `dir` was bred with, if `dir` holds a readable one: the name its
/// manifest records, or `ga` where it records none (until 2026-11-24 the CLI recorded only
/// propagators other than `ga`, then every task's default). An unreadable manifest is left to the
/// resume, which reports it.
fn recorded_propagator(dir: &Path) -> Option<String> {
    Manifest::read(dir).ok().map(|m| propagator_of(&m).to_string())
}

/// The propagator `manifest`'s run bred with (`ga` where it records none).
fn propagator_of(manifest: &Manifest) -> &str {
    manifest.extra.get("propagator").and_then(|v| v.as_str()).unwrap_or("ga")
}
