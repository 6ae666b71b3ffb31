//! The library front door: a builder that takes the search space, options and a loss closure, and
//! returns the best individuals.
//!
//! ```
//! use propulate_core::SearchSpace;
//! use propulate_engine::Optimizer;
//!
//! let space = SearchSpace::builder()
//!     .float("x", -5.0, 5.0)
//!     .int("n", 1, 8)
//!     .categorical("act", &["relu", "tanh"])
//!     .build()?;
//! // Four workers as threads of this process, two islands of two.
//! let result = Optimizer::new(space)
//!     .generations(60)
//!     .islands(2)
//!     .seed(1)
//!     .run_local(4, |p, _ctx| {
//!         let penalty = if p.category("act") == "relu" { 0.0 } else { 1.0 };
//!         Ok(p.float("x").powi(2) + (p.int("n") - 3).abs() as f64 + penalty)
//!     })?;
//! assert_eq!(result.evaluations, 4 * 60);
//! assert!(result.consistent);
//! assert!(result.best[0].loss < 1.0);
//! # Ok::<(), propulate_engine::Error>(())
//! ```
//!
//! Under MPI (`mpirun -np 8 my-program`), build the world communicator from an
//! [`MpiRuntime`](crate::transport::mpi::MpiRuntime) and call [`Optimizer::run`] on every rank.

use std::sync::Arc;

use crate::config::{CheckpointSettings, RunConfig, Selection};
use crate::context::WorkerContext;
use crate::driver::{self, LossError, LossValue};
use crate::error::{Error, Result};
use crate::observe::{Observer, ObserverMode, Observers, ProgressLine, RankLog};
use crate::result::RunResult;
use crate::transport::Communicator;
use crate::transport::local::run_local;
use propulate_core::early_stop::EarlyStopper;
use propulate_core::individual::Params;
use propulate_core::objective::Objective;

use propulate_core::layout::IslandSpec;
use propulate_core::propagator::{DefaultPropagatorConfig, Propagator, PropagatorSpec};
use propulate_core::space::SearchSpace;
use propulate_core::topology::TopologySpec;

/// The most in-process ranks [`Optimizer::run_local`] starts: each is a thread, and far more than
/// the machine's cores only slows a run down (or exhausts the process's threads).
pub const MAX_LOCAL_RANKS: usize = 1024;

/// Builder for an optimization run.
#[derive(Debug)]
pub struct Optimizer {
    space: SearchSpace,
    config: RunConfig,
    propagator: Option<Arc<dyn Propagator>>,
    stopper: Option<Arc<dyn EarlyStopper>>,
    observers: Observers,
}

impl Optimizer {
    /// A run over `space` with the default configuration (100 generations, one island).
    pub fn new(space: SearchSpace) -> Self {
        Optimizer {
            space,
            config: RunConfig::default(),
            propagator: None,
            stopper: None,
            observers: Observers::default(),
        }
    }
    /// Replace the whole configuration.
    pub fn config(mut self, config: RunConfig) -> Self {
        self.config = config;
        self
    }
    /// Evaluations per worker.
    pub fn generations(mut self, g: u64) -> Self {
        self.config.generations = g;
        self
    }
    /// Number of islands (sizes differ by at most one).
    pub fn islands(mut self, n: usize) -> Self {
        self.config.islands = IslandSpec::Count(n);
        self
    }
    /// Explicit workers per island.
    pub fn island_sizes(mut self, sizes: Vec<usize>) -> Self {
        self.config.islands = IslandSpec::Sizes(sizes);
        self
    }
    /// MPI ranks per worker.
    pub fn ranks_per_worker(mut self, k: usize) -> Self {
        self.config.ranks_per_worker = k;
        self
    }
    /// Per-island emigration probability per generation.
    pub fn migration_probability(mut self, p: f64) -> Self {
        self.config.migration_probability = p;
        self
    }
    /// Let an island's workers share their generations ([`RunConfig::shared_budget`]): quick
    /// workers go on while the island's evaluations last instead of waiting for the slowest.
    pub fn shared_budget(mut self, on: bool) -> Self {
        self.config.shared_budget = on;
        self
    }
    /// Send copies instead of moving individuals.
    pub fn pollination(mut self, on: bool) -> Self {
        self.config.pollination = on;
        self
    }
    /// The migration topology.
    pub fn topology(mut self, t: TopologySpec) -> Self {
        self.config.topology = t;
        self
    }
    /// How emigrants are chosen.
    pub fn emigration(mut self, s: Selection) -> Self {
        self.config.emigration = s;
        self
    }
    /// With pollination, which individuals the immigrants replace.
    pub fn immigration(mut self, s: Selection) -> Self {
        self.config.immigration = s;
        self
    }
    /// The run seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }
    /// How many best individuals to report.
    pub fn top_n(mut self, n: usize) -> Self {
        self.config.top_n = n;
        self
    }
    /// Optimize several objectives at once, each by name and direction: the loss then returns one
    /// value per objective, in this order (a `Vec<f64>` or an array), and the islands rank
    /// evaluations by Pareto dominance. Works with the genetic propagator and random search.
    pub fn objectives(mut self, objectives: Vec<Objective>) -> Self {
        self.config.objectives = objectives;
        self
    }
    /// Evaluate these configurations first (each a map of parameter name to value: a number, or a
    /// categorical's choice as a string), in order across the workers: configuration k is worker
    /// `k mod workers`'s child of its generation `k / workers`. A configuration that misses a
    /// parameter, names an unknown one or lies outside the space is an error naming it, before
    /// anything is evaluated; [`enqueued::parse`](propulate_core::enqueued::parse) reads them from
    /// CSV or JSON lines.
    pub fn enqueue(mut self, configurations: Vec<propulate_core::enqueued::Configuration>) -> Self {
        self.config.enqueued = configurations;
        self
    }
    /// Print a progress line on rank 0 (installs a [`ProgressLine`] observer).
    pub fn progress(self, on: bool) -> Self {
        if on { self.observer(ObserverMode::Always, ProgressLine::default()) } else { self }
    }
    /// Install an observer: it hears of the run's start, failures, warnings and end on every rank,
    /// and of the evaluations its `mode` selects.
    pub fn observer(mut self, mode: ObserverMode, observer: impl Observer + 'static) -> Self {
        self.observers.push(mode, observer);
        self
    }
    /// Whether world rank 0 gathers every evaluation into the result's `trials` (default: yes;
    /// see [`RunConfig::gather_trials`](crate::config::RunConfig::gather_trials)).
    pub fn gather_trials(mut self, gather: bool) -> Self {
        self.config.gather_trials = gather;
        self
    }
    /// Checkpoint into `dir` (resumed if it holds this run) with the default fsync policy.
    pub fn checkpoint(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        let warm_start = self.config.checkpoint.take().map(|ck| ck.warm_start).unwrap_or_default();
        self.config.checkpoint = Some(CheckpointSettings { dir: dir.into(), warm_start, ..Default::default() });
        self
    }
    /// Start a new run with the evaluations of the earlier run at `path` (a propulate-rs
    /// checkpoint directory, a `trials.csv` or an Optuna journal file; call again for several),
    /// not evaluated again: the CLI's `--warm-start`. It seeds the run's checkpoint, so it needs
    /// one ([`Optimizer::checkpoint`], before or after); a resume does not import again.
    pub fn warm_start(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.config.checkpoint.get_or_insert_with(Default::default).warm_start.push(path.into());
        self
    }
    /// Write one log file per rank into `dir`, with a status line every `interval` generations
    /// (installs a [`RankLog`] observer; an interval of 0 is taken as 1).
    pub fn rank_logs(self, dir: impl Into<std::path::PathBuf>, interval: u64) -> Self {
        self.observer(ObserverMode::Every(interval.max(1)), RankLog::new(dir))
    }
    /// Breed with the genetic propagator and these settings (without any propagator set, a new run
    /// breeds with what `auto` picks for its space, budget and objectives).
    pub fn default_propagator(mut self, cfg: DefaultPropagatorConfig) -> Self {
        self.config.propagator = Some(PropagatorSpec::Ga(cfg));
        self
    }
    /// Breed with a built-in propagator and its settings (e.g.
    /// `PropagatorSpec::with_defaults("gp", workers)`), recorded in the checkpoint: a resume with
    /// another propagator or setting is refused.
    pub fn propagator_spec(mut self, spec: PropagatorSpec) -> Self {
        self.config.propagator = Some(spec);
        self.propagator = None;
        self
    }
    /// Use a custom propagator (one offspring per call) instead of a built-in one. The checkpoint
    /// records its [`Propagator::name`], so that a resume with another is refused.
    pub fn propagator(mut self, p: impl Propagator + 'static) -> Self {
        self.propagator = Some(Arc::new(p));
        self
    }
    /// Stop hopeless evaluations early: a loss reports intermediate values with
    /// [`WorkerContext::report`], and `stopper` (e.g. [`MedianStopper`](propulate_core::early_stop::MedianStopper))
    /// decides after each report from the island's completed evaluations.
    pub fn early_stopping(mut self, stopper: impl EarlyStopper + 'static) -> Self {
        self.stopper = Some(Arc::new(stopper));
        self
    }
    /// [`Optimizer::early_stopping`] with a stopper chosen at run time (`early_stop::by_name`).
    pub fn early_stopping_boxed(mut self, stopper: Box<dyn EarlyStopper>) -> Self {
        self.stopper = Some(Arc::from(stopper));
        self
    }
    /// The configuration as it stands.
    pub fn run_config(&self) -> &RunConfig {
        &self.config
    }

    /// Run on `world` (collective: every rank calls it). Every rank gets the result; rank 0's
    /// also holds every trial.
    pub fn run<F, V>(&self, world: &mut dyn Communicator, mut loss: F) -> Result<RunResult>
    where
        F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> std::result::Result<V, LossError>,
        V: LossValue,
    {
        let (propagator, stopper) = (self.propagator.as_deref(), self.stopper.as_deref());
        let values = move |p: Params<'_>, c: &mut WorkerContext<'_>| loss(p, c).map(V::into_values);
        driver::run(world, &self.config, &self.space, propagator, stopper, &self.observers, values)
    }

    /// Run with `ranks` in-process ranks (threads, at most [`MAX_LOCAL_RANKS`]), no MPI needed.
    /// Returns rank 0's result.
    pub fn run_local<F, V>(&self, ranks: usize, loss: F) -> Result<RunResult>
    where
        F: Fn(Params<'_>, &mut WorkerContext<'_>) -> std::result::Result<V, LossError> + Send + Sync + 'static,
        V: LossValue,
    {
        if ranks == 0 {
            return Err(Error::InvalidConfig(
                "the in-process ranks (--local-ranks N, Optimizer::run_local) must be at least 1, got 0".into(),
            ));
        }
        if ranks > MAX_LOCAL_RANKS {
            return Err(Error::InvalidConfig(format!(
                "{ranks} in-process ranks: at most {MAX_LOCAL_RANKS} run as threads of one process (each a \
                 thread with its own stack); start more ranks with MPI (mpirun, srun)"
            )));
        }
        let loss = Arc::new(loss);
        let (space, config) = (self.space.clone(), self.config.clone());
        let (propagator, stopper, observers) = (self.propagator.clone(), self.stopper.clone(), self.observers.clone());
        let mut results = run_local(ranks, move |mut comm| {
            let loss = loss.clone();
            let (propagator, stopper) = (propagator.as_deref(), stopper.as_deref());
            let values = move |p: Params<'_>, c: &mut WorkerContext<'_>| loss(p, c).map(V::into_values);
            driver::run(&mut comm, &config, &space, propagator, stopper, &observers, values)
        });
        for (rank, r) in results.iter().enumerate() {
            if r.is_err() {
                return Err(Error::Transport(format!(
                    "in-process rank {rank} aborted the run (see its message above)"
                )));
            }
        }
        results.swap_remove(0).expect("checked above")
    }
}
