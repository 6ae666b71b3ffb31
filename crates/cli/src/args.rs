//! The command line's flags: clap parses them, and `plan::Plan` resolves them (with the files they
//! name) into the run, whose driver resolves the propagator against the checkpoint; the library validates the result (in
//! `RunConfig::validate` and the driver, the one place for it).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::propagator_flags::PropagatorArgs;

use propulate::files::OutputFile;
use propulate::journal::FsyncPolicy;
use propulate::{IslandSpec, RunConfig};

/// Asynchronous island-model evolutionary hyperparameter optimization, on MPI.
///
/// Without --function it tunes the reference tutorial's CNN on Fashion-MNIST, every candidate
/// trained data-parallel by the ranks of one worker: `mpirun -np 8 propulate-rs --islands 2`.
/// With --function it minimises a benchmark function: `mpirun -np 8 propulate-rs --function rastrigin`.
#[derive(Debug, Clone, Parser)]
#[command(name = "propulate-rs", version, about, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// A subcommand; without one, run an optimization.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The optimization's options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Summarize a checkpoint (finished or not) and write the result files (the help names them:
    /// [`documented`]).
    Report(ReportArgs),
    /// Print, one line per rank in rank order, what each rank sees: launcher, local rank, host,
    /// GPUs and its device, and its place in the layout. Runs under mpirun/srun like a job; trains
    /// and writes nothing.
    Env(EnvArgs),
}

/// Options of `propulate-rs env`: the layout flags of the run to check.
#[derive(Debug, Clone, Args)]
pub struct EnvArgs {
    /// The run's layout flags, declared once for the run and `env`.
    #[command(flatten)]
    pub layout: LayoutArgs,
}

/// Where the ranks go: islands, workers and the ranks of a worker. One definition for a run and
/// `propulate-rs env`, so that `env` checks exactly what the same flags give a run.
#[derive(Debug, Clone, Args)]
pub struct LayoutArgs {
    /// Number of islands (workers split evenly: sizes differ by at most 1)
    #[arg(value_name = "N", long, default_value_t = 1, conflicts_with = "island_sizes")]
    pub islands: usize,
    /// Workers per island, comma separated (e.g. 3,5), instead of `--islands` [default: none:
    /// `--islands`]
    #[arg(value_name = "SIZES", long, value_delimiter = ',')]
    pub island_sizes: Option<Vec<usize>>,
    /// MPI ranks that evaluate one individual together; the world size must be a multiple of K
    /// [default: the CNN 2 (1 when the number of ranks is odd), a function or a command trial 1;
    /// `env` 1: give it the run's value]
    #[arg(value_name = "K", long)]
    pub ranks_per_worker: Option<usize>,
    /// Run N ranks (1 to 1,024) as threads of one process instead of MPI
    #[arg(value_name = "N", long)]
    pub local_ranks: Option<usize>,
}

impl LayoutArgs {
    /// The islands the flags ask for.
    pub fn island_spec(&self) -> IslandSpec {
        match &self.island_sizes {
            Some(sizes) => IslandSpec::Sizes(sizes.clone()),
            None => IslandSpec::Count(self.islands),
        }
    }
}

/// The result files' flags, declared once for a run and `report`.
#[derive(Debug, Clone, Args)]
pub struct ResultArgs {
    /// Best individuals to show per island
    #[arg(value_name = "N", long, default_value_t = RunConfig::default().top_n)]
    pub top_n: usize,
    /// The result files' directory (the help names the files: [`documented`]).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// The command line for the terminal: [`documented`]'s, each markdown link in a help text shown
/// as its text.
pub fn with_generated_help(cli: clap::Command) -> clap::Command {
    let terminal = |text: &clap::builder::StyledStr| crate::flag_reference::for_terminal(&text.to_string());
    documented(cli).mut_args(|mut a| {
        if let Some(help) = a.get_help().map(terminal) {
            a = a.help(help);
        }
        if let Some(long_help) = a.get_long_help().map(terminal) {
            a = a.long_help(long_help);
        }
        a
    })
}

/// The command line as the flag reference shows it (its help texts markdown): the help texts
/// that name the result files generated from the registry of files (`files::OutputFile`), so that
/// a new result file is named in the help too.
pub fn documented(cli: clap::Command) -> clap::Command {
    let files = OutputFile::help_list();
    // `mut_args`, not `mut_arg`, which would move the flag to the end of the help.
    let out = |help: String| move |a: clap::Arg| if a.get_id() == "out" { a.help(help.clone()) } else { a };
    cli.mut_args(out(format!("Directory to write {files} into at the end, checked writable before the run")))
        .mut_subcommand("report", |report| {
            report
                .about(format!("Summarize a checkpoint (finished or not) and write {files}"))
                .mut_args(out(format!("Where to write {files} [default: the checkpoint directory]")))
        })
}

/// Options of `propulate-rs report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// Where the result files go (default: the checkpoint directory) and what they show.
    #[command(flatten)]
    pub results: ResultArgs,
    /// Also write the run as an Optuna journal file (Optuna 4 and 5's JournalFileBackend), which
    /// `optuna-dashboard FILE` and Optuna's analysis open: every trial with its parameters, state,
    /// value, intermediate values, and island/worker/generation as user attributes.
    #[arg(long, value_name = "FILE")]
    pub optuna_journal: Option<PathBuf>,
    /// Beside a running job: rewrite report.html every SECONDS while the checkpoint grows, until
    /// the run has ended (or Ctrl-C); on a run that has ended, wait for its resume. Only reads the
    /// checkpoint; writes only report.html.
    #[arg(long, value_name = "SECONDS", conflicts_with = "optuna_journal")]
    pub watch: Option<f64>,
}

/// Options of an optimization run.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Minimise this benchmark function instead of tuning the CNN: one of the reference's 14
    /// (sphere, rosenbrock, step, quartic, rastrigin, griewank, schwefel, bisphere, birastrigin,
    /// bukin, eggcrate, himmelblau, keane, leon; an unknown name lists them), or a problem with
    /// several objectives: zdt1, zdt2, zdt3 (30 parameters, 2 objectives), dtlz2 (12 parameters, 3
    /// objectives) [default: none: the CNN]
    #[arg(value_name = "NAME", long)]
    pub function: Option<String>,
    /// Optimize several objectives at once and keep the Pareto front: `NAME:min` or `NAME:max`,
    /// comma separated (a `NAME` alone is minimized). A command trial's result file holds them by name (and `loss` may be one);
    /// the CNN offers `loss`, `accuracy`, `seconds` (training time) and `params` (parameter count);
    /// zdt1, zdt2, zdt3 and dtlz2 declare their own (`f1`, `f2`, `f3`). With the genetic propagator
    /// (the default then) or `random`; see [several objectives](multi-objective.md) [default: none:
    /// one loss]
    #[arg(long, value_name = "LIST")]
    pub objectives: Option<String>,
    /// Islands, workers and the ranks of a worker.
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Evaluations per worker (at most 2^40) [default: the CNN 4, a function 1000, a command trial
    /// 10]
    #[arg(value_name = "G", long)]
    pub generations: Option<u64>,
    /// Probability that an island sends emigrants per generation (each worker emigrates with P /
    /// island size)
    #[arg(value_name = "P", long, default_value_t = RunConfig::default().migration_probability)]
    pub migration_probability: f64,
    /// Send copies to other islands (pollination) instead of moving individuals (migration)
    #[arg(long)]
    pub pollination: bool,
    /// Let an island's workers share their generations: the island evaluates its workers x
    /// `--generations` in all (less at most one running on each other worker), and a worker whose
    /// evaluations are quick goes on while the island's last instead of waiting for the slowest at
    /// the end (evaluation times that vary: [scale](../benchmarks/scale.md#what-falls-short));
    /// configurations given with `--enqueue` are evaluated all the same, each once; a resume may
    /// turn it on or off
    #[arg(long)]
    pub shared_budget: bool,
    /// Migration topology: `fully-connected`, `ring`, or the path of a file with an n x n matrix of
    /// migrant counts (one row per island, zero diagonal)
    #[arg(value_name = "TOPOLOGY", long, default_value = "fully-connected")]
    pub topology: String,
    /// Run seed; worker w draws from ChaCha stream w of it
    #[arg(value_name = "SEED", long, default_value_t = 0)]
    pub seed: u64,
    /// Where the result files go (none without `--out`) and what they show.
    #[command(flatten)]
    pub results: ResultArgs,
    /// Journal the run in this directory; a directory that holds the run is resumed [default:
    /// `checkpoints/<task>-seed<seed>`, the task being `cnn`, `command` or the function]
    #[arg(value_name = "DIR", long)]
    pub checkpoint: Option<PathBuf>,
    /// Do not journal the run (it cannot be resumed)
    #[arg(long, conflicts_with = "checkpoint")]
    pub no_checkpoint: bool,
    /// When journal records are forced to disk: `never`, `always`, or an interval such as `1000ms`
    #[arg(value_name = "WHEN", long, default_value_t = FsyncPolicy::default())]
    pub fsync: FsyncPolicy,
    /// Start this run's checkpoint from the run in DIR on other numbers of workers or islands, its
    /// active individuals dealt over this run's islands. DIR is only read; once the new checkpoint
    /// exists, the same command simply resumes it
    #[arg(long, value_name = "DIR", conflicts_with = "no_checkpoint")]
    pub reshape_from: Option<PathBuf>,
    /// Start a new run with the evaluations of an earlier one, not evaluated again (repeatable):
    /// PATH is a propulate-rs checkpoint directory, a `trials.csv`, or an Optuna journal file (one
    /// study; complete trials, the first value as the loss, negated where the study maximizes it,
    /// its constraints, as `constraints_func` or `Trial.set_constraint` stored them). Parameters
    /// match by name: one missing from the earlier run, one it has that this space has not, or
    /// one of another type is an error naming it; with `--objectives`, each objective is taken by
    /// name (by position from an Optuna study that named none), and one the earlier run lacks or
    /// runs the other way is an error; an evaluation with a value outside this space, or without
    /// one for a parameter active here, is left out, and failed, pruned and unfinished ones too
    /// (the run says how many of each); one source given twice is an error, and an evaluation an
    /// earlier source gave already (the same values and loss: a run's checkpoint and its
    /// trials.csv) is imported once. They are dealt over the islands as `--reshape-from` deals,
    /// recorded in the new checkpoint (a resume does not import them again), marked `"imported":
    /// true` (and `"worker": null`) where they appear (`best.json`'s top lists), and not in
    /// `trials.csv`, which lists this run's evaluations; needs a checkpoint (they are recorded
    /// there): not with `--no-checkpoint` or `--reshape-from`
    #[arg(long, value_name = "PATH", conflicts_with_all = ["no_checkpoint", "reshape_from"])]
    pub warm_start: Vec<PathBuf>,
    /// Evaluate these configurations first: a CSV file whose header names the parameters (quoted
    /// fields read as pandas and Python's csv module write them), JSON lines of objects (name to
    /// value) or a JSON array of them; configuration k is worker `k mod workers`'s generation `k
    /// / workers`, so each worker evaluates its share in order before it breeds, and a resume
    /// evaluates each once. Every active parameter must be given and inside the space (an inactive
    /// conditional one may be left out or empty, and a value given to one is left out, said at the
    /// start; else one error naming the configuration and the parameter, before any evaluation);
    /// more of them than the run evaluates (workers times
    /// generations) are named at its start and wait for a longer run; a resume needs the same
    /// file; not with `--propagator pbt`
    #[arg(long, value_name = "FILE")]
    pub enqueue: Option<PathBuf>,
    /// Write one log file per rank into DIR (`rank-00000.log`, ...): role, host, status lines,
    /// failed evaluations; appended to when a run is resumed
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// Generations between two status lines in the per-rank logs (at least 1)
    #[arg(value_name = "N", long, default_value_t = 10, requires = "log_dir", value_parser = clap::value_parser!(u64).range(1..))]
    pub log_interval: u64,
    /// With `--function`: sleep this many milliseconds in every evaluation, a stand-in for an
    /// expensive loss (demos, crash tests); 0 to 3,600,000
    #[arg(value_name = "MS", long, default_value_t = 0.0)]
    pub eval_delay_ms: f64,
    /// With `--eval-delay-ms`: spread each sleep uniformly by up to this share of it either way
    /// (0.5: half to one and a half times it), drawn from the evaluation's seed, which its identity
    /// and the run's seed make; at least 0, below 1
    #[arg(value_name = "SHARE", long, default_value_t = 0.0, requires = "eval_delay_ms")]
    pub eval_delay_spread: f64,
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
    pub(crate) breeding: PropagatorArgs,
    /// No progress line, no per-evaluation lines
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
}

/// `--lr-scale`: how the CNN task searches its learning rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LrScaleArg {
    Log,
    Linear,
}

/// Options of the CNN task (ignored with --function and --space).
#[derive(Debug, Clone, Args)]
pub struct CnnArgs {
    /// Directory of MNIST-format idx files (`train-images-idx3-ubyte[.gz]`,
    /// `train-labels-idx1-ubyte[.gz]`, `t10k-images-idx3-ubyte[.gz]`,
    /// `t10k-labels-idx1-ubyte[.gz]`), e.g. digit MNIST's; Debian's `dataset-fashion-mnist`
    /// installs Fashion-MNIST in the default
    #[arg(long, value_name = "DIR", default_value = "/usr/share/datasets/fashion-mnist", help_heading = "CNN task")]
    pub data: PathBuf,
    /// Training images: the first N of the training split (0: all 60,000)
    #[arg(long, value_name = "N", default_value_t = 2000, help_heading = "CNN task")]
    pub train_images: usize,
    /// Validation images: the first N of the test split (0: all 10,000)
    #[arg(long, value_name = "N", default_value_t = 1000, help_heading = "CNN task")]
    pub valid_images: usize,
    /// Most epochs per evaluation
    #[arg(long, value_name = "N", default_value_t = 20, help_heading = "CNN task")]
    pub epochs: u64,
    /// Stop a training after N epochs in a row without a better validation loss
    #[arg(long, value_name = "N", default_value_t = 5, help_heading = "CNN task")]
    pub patience: u64,
    /// Images per training step on each rank
    #[arg(long, value_name = "N", default_value_t = 8, help_heading = "CNN task")]
    pub batch: usize,
    /// How the learning rate (1e-4 to 1e-2) is searched: `log`, evenly in its logarithm, or
    /// `linear`, evenly in its value as the reference does (most draws near 1e-2, where Adadelta
    /// learns fastest in a few epochs; see [the CNN search against the
    /// reference](../benchmarks/cnn.md))
    #[arg(long, value_enum, value_name = "SCALE", default_value_t = LrScaleArg::Log, help_heading = "CNN task")]
    pub lr_scale: LrScaleArg,
    /// Burn's backend: `tch` (libtorch, burn-tch) or `flex` (pure Rust) [default: `tch` when built
    /// in, else `flex`]
    #[arg(value_name = "BACKEND", long, help_heading = "CNN task")]
    pub backend: Option<String>,
    /// Where to train: `cpu`, `cuda`, or `auto` (the rank's GPU when libtorch sees one, else the
    /// CPU)
    #[arg(value_name = "DEVICE", long, default_value = "auto", help_heading = "CNN task")]
    pub device: String,
}

/// Options of the tasks that train (the CNN task and command trials).
#[derive(Debug, Clone, Args)]
pub struct TrainingArgs {
    /// Stop hopeless trainings early, judged after every reported step (the CNN: every epoch)
    /// against the island's finished ones (`halving`: and its running ones): `none`, `median`,
    /// `static`, `log-linear`, `dynamic` or `halving` (successive halving); see [early
    /// stopping](early-stopping.md)
    #[arg(long, value_name = "NAME", default_value = "none", help_heading = "Training (CNN task, command trials)")]
    pub early_stop: String,
    /// GPUs per rank, 1 to 64: each rank trains its replica on K consecutive GPUs (local rank x K,
    /// ...); the CNN puts its convolutions on the first and its classifier on the last, a command
    /// trial's process gets them as `CUDA_VISIBLE_DEVICES` (see [GPUs and
    /// clusters](gpus-and-clusters.md))
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64), help_heading = "Training (CNN task, command trials)")]
    pub gpus_per_rank: u64,
}

/// Options of command trials: a user's program tuned as it is (`--space FILE -- COMMAND`).
#[derive(Debug, Clone, Args)]
pub struct CommandArgs {
    /// Tune the program given after `--` over this search space (TOML: a `[params]` table of float,
    /// int and categorical parameters; see [command trials](command-trials.md)). Every rank of a
    /// worker runs one process of the program per evaluation, with torchrun's environment (`RANK`,
    /// `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, ...)
    #[arg(long, value_name = "FILE", conflicts_with = "function", help_heading = "Command trials")]
    pub space: Option<PathBuf>,
    /// Stop a trial still running after this many seconds (every process of it, on every rank); it
    /// is recorded as failed
    #[arg(long, value_name = "SECONDS", help_heading = "Command trials")]
    pub trial_timeout: Option<f64>,
    /// Where each trial gets a directory of its own (logs per rank, result file) [default:
    /// `<checkpoint>/trials`; with `--no-checkpoint`, `<out>/trials` or else `./propulate-trials`]
    #[arg(long, value_name = "DIR", help_heading = "Command trials")]
    pub trials_dir: Option<PathBuf>,
    /// Python modules to import once per rank (comma separated, e.g. `torch`): each trial's process
    /// is then forked from that Python instead of starting anew, which saves the imports' time in
    /// every evaluation; the command must be `PYTHON [-u] SCRIPT ...` or `PYTHON [-u] -m MODULE
    /// ...`
    #[arg(long, value_name = "MODULES", help_heading = "Command trials")]
    pub preload: Option<propulate::trial::PreloadModules>,
    /// The trial command, after `--`: `{name}` in it is replaced by a parameter's value; without
    /// any placeholder, `--name=value` is appended for every parameter
    #[arg(last = true, value_name = "COMMAND", help_heading = "Command trials")]
    pub command: Vec<String>,
}
