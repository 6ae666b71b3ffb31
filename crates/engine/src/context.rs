//! The `WorkerContext` handed to a loss closure: who this rank is, the worker's communicator, its
//! seed and device. Everything a multi-rank loss needs, passed explicitly (no global singletons).

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{Error, Result};
use crate::launcher::Device;
use crate::panic_message::panic_message;
use crate::training_state::TrainingState;
use crate::transport::Communicator;
use propulate_core::early_stop::{Curve, Decision, MAX_CURVE_POINTS, StopRule};
use propulate_core::individual::IndividualId;
use propulate_core::layout::{IslandSpec, Layout};

/// What a loss closure knows about where it runs.
///
/// In a multi-rank worker every rank calls the loss with the same individual, and the root's value
/// is recorded. A loss that fails (error, panic, NaN) must fail on every rank of its worker or on
/// none: a rank that leaves early while the others wait in a collective of the loss would leave
/// them waiting, which no driver can undo.
pub struct WorkerContext<'a> {
    /// This rank in the whole job.
    pub world_rank: usize,
    /// Ranks in the whole job.
    pub world_size: usize,
    /// The worker this rank belongs to.
    pub worker: usize,
    /// Number of workers.
    pub workers: usize,
    /// The worker's island.
    pub island: usize,
    /// This rank's index in its worker (0 is the worker root).
    pub worker_rank: usize,
    /// Ranks in the worker.
    pub worker_size: usize,
    /// A seed for this evaluation, the same on every rank of the worker.
    pub seed: u64,
    /// The device this rank should use.
    pub device: Device,
    /// The individual under evaluation (island, worker, generation): unique in the run and the same
    /// on every rank of the worker. A resumed run evaluates an interrupted individual again under
    /// the same id, so a directory named after it is the same one (the command task's trial
    /// directories).
    pub trial: IndividualId,
    /// Population-based training: the state this evaluation continues and where it saves its own.
    pub(crate) training: Option<TrainingState>,
    pub(crate) comm: Option<&'a mut dyn Communicator>,
    /// Metrics recorded by the loss during this evaluation.
    pub(crate) metrics: Vec<(String, f64)>,
    /// The constraint values the loss reported ([`WorkerContext::set_constraints`]).
    pub(crate) constraints: Vec<f64>,
    /// What [`WorkerContext::report`] heard and decided.
    pub(crate) reports: Reports,
    /// On the worker root, when the early stopper hears running evaluations: where each report
    /// goes to the island's other workers and theirs come from.
    pub(crate) peers: Option<&'a mut dyn IslandReports>,
}

/// Evaluations of the island whose curves changed, each with its whole curve so far.
pub(crate) type HeardCurves = Vec<(IndividualId, Vec<(u64, f64)>)>;

/// The worker root's line to the other workers of its island during one evaluation.
pub(crate) trait IslandReports {
    /// Tell them of this evaluation's report `(step, value)`, and return what they reported since
    /// the last call: each changed evaluation with its whole curve so far.
    fn exchange(&mut self, step: u64, value: f64) -> Result<HeardCurves>;
}

/// The reports of one evaluation and the early stopping behind them.
#[derive(Default)]
pub(crate) struct Reports {
    /// The values reported (on the root, what is recorded).
    pub curve: Curve,
    /// The run has an early stopper: in a multi-rank worker every report is collective.
    pub stopping: bool,
    /// The worker root's rule for this evaluation (none on the other ranks).
    pub rule: Option<Box<dyn StopRule>>,
    /// A report this rank could not accept (a step that does not increase), returned after the
    /// worker agreed on the decision so that no rank is left in the collective.
    error: Option<String>,
}

impl WorkerContext<'static> {
    /// The context of a loss called outside a run, as a single-rank worker alone in its job: to
    /// evaluate one configuration again, or to test a loss.
    pub fn standalone(seed: u64, device: Device) -> Self {
        WorkerContext::new(&Layout::new(1, 1, &IslandSpec::Count(1)).expect("one rank"), 0, seed, device, None)
    }
}

impl<'a> WorkerContext<'a> {
    /// The context of world rank `rank` in `layout`, evaluating with `seed` on `device`; `comm` is
    /// the worker's communicator (`None` for single-rank workers). The one constructor.
    pub(crate) fn new(
        layout: &Layout,
        rank: usize,
        seed: u64,
        device: Device,
        comm: Option<&'a mut dyn Communicator>,
    ) -> Self {
        let worker = layout.worker_of_rank(rank);
        WorkerContext {
            world_rank: rank,
            world_size: layout.world_size(),
            worker,
            workers: layout.workers(),
            island: layout.island_of_worker(worker),
            worker_rank: layout.rank_in_worker(rank),
            worker_size: layout.ranks_per_worker(),
            seed,
            device,
            trial: IndividualId { island: 0, worker: worker as u32, generation: 0 },
            training: None,
            comm,
            metrics: Vec::new(),
            constraints: Vec::new(),
            reports: Reports::default(),
            peers: None,
        }
    }
}

impl WorkerContext<'_> {
    /// True on the worker's root rank: the rank whose loss is recorded.
    pub fn is_worker_root(&self) -> bool {
        self.worker_rank == 0
    }

    /// The worker's communicator (`None` for single-rank workers).
    pub fn worker_comm(&mut self) -> Option<&mut (dyn Communicator + '_)> {
        match &mut self.comm {
            Some(c) => Some(&mut **c),
            None => None,
        }
    }

    /// Sum `values` element-wise over the worker's ranks (a no-op for single-rank workers).
    pub fn all_reduce_sum(&mut self, values: &mut [f64]) -> Result<()> {
        match &mut self.comm {
            Some(c) => c.all_reduce_sum(values),
            None => Ok(()),
        }
    }

    /// Map-reduce over the worker's ranks: every rank computes `f(worker_rank, worker_size)`, and
    /// every rank gets the sum.
    pub fn map_reduce_sum(&mut self, f: impl FnOnce(usize, usize) -> f64) -> Result<f64> {
        let mut v = [f(self.worker_rank, self.worker_size)];
        self.all_reduce_sum(&mut v)?;
        Ok(v[0])
    }

    /// Record a metric of this evaluation besides its loss (validation accuracy, epochs trained):
    /// it goes into the journal and the trial tables as a column of its own. The worker root's
    /// values are kept; a value that is not finite is left out (JSON has no NaN).
    pub fn record(&mut self, name: &str, value: f64) {
        if value.is_finite() {
            self.metrics.retain(|(n, _)| n != name);
            self.metrics.push((name.to_string(), value));
        }
    }

    /// Report the constraint values of this evaluation, measured by the training (memory used
    /// minus a budget, latency minus a limit): the configuration is feasible when every value is at
    /// most 0, Optuna's convention. The best individual is then the best feasible one, and the
    /// propagators breed towards feasible ones. Call it again to replace the values; the worker
    /// root's are kept, and a value that is not finite fails the evaluation. An evaluation that reports
    /// none counts as feasible.
    pub fn set_constraints(&mut self, values: &[f64]) {
        self.constraints = values.to_vec();
    }

    /// Take back the metric `name` recorded in this evaluation, if there is one: what a wrapper
    /// that turns metrics into objectives reads (an objective is not kept twice).
    pub fn take_metric(&mut self, name: &str) -> Option<f64> {
        let k = self.metrics.iter().position(|(n, _)| n == name)?;
        Some(self.metrics.remove(k).1)
    }

    /// Report an intermediate value of this evaluation (the validation loss after an epoch) at
    /// `step`, and learn whether to go on. Steps must increase from one report to the next.
    ///
    /// The values form the evaluation's curve, recorded with it (journal, trial tables) and used
    /// by the run's early stopper (`Optimizer::early_stopping`) to stop hopeless evaluations;
    /// without one the answer is always [`Decision::Continue`]. On [`Decision::Stop`] the loss
    /// should return at once (its return value is recorded, and the curve is marked pruned);
    /// later reports answer `Stop` again. Values that are not finite are not recorded.
    ///
    /// In a multi-rank worker with an early stopper, every rank must report the same steps: the
    /// worker root decides from its value and every rank gets the same answer, so all of them stop
    /// at the same step.
    pub fn report(&mut self, step: u64, value: f64) -> Result<Decision> {
        let r = &mut self.reports;
        if r.curve.pruned {
            return Ok(Decision::Stop);
        }
        match r.curve.last_step() {
            Some(last) if step <= last => {
                r.error = Some(format!("reported step {step} after step {last}; report steps must increase"));
            }
            _ if r.curve.points.len() >= MAX_CURVE_POINTS => {
                r.error =
                    Some(format!("more than {MAX_CURVE_POINTS} reports in one evaluation; report once per epoch"));
            }
            _ if value.is_finite() => r.curve.points.push((step, value)),
            _ => {}
        }
        // The island's other workers hear of the report, and the rule of theirs (an error here,
        // like a bad report, is returned once the worker agreed, so that no rank is left waiting).
        let mut heard = Vec::new();
        if let (None, Some(peers), Some(&(last, _))) = (&r.error, &mut self.peers, r.curve.points.last())
            && last == step
        {
            match peers.exchange(step, value) {
                Ok(changes) => heard = changes,
                Err(e) => r.error = Some(format!("could not exchange reports with the island's workers: {e}")),
            }
        }
        let mut stop = false;
        if let (None, Some(rule)) = (&r.error, r.rule.as_mut())
            && !r.curve.points.is_empty()
        {
            // A rule that panics must not leave the worker's other ranks in the agreement below.
            let decide = || {
                for (id, points) in &heard {
                    rule.observe(*id, points);
                }
                rule.should_stop(&r.curve.points)
            };
            match catch_unwind(AssertUnwindSafe(decide)) {
                Ok(decision) => stop = decision,
                Err(panic) => {
                    r.error = Some(format!("the early stopper's rule panicked: {}", panic_message(panic.as_ref())))
                }
            }
        }
        // The worker agrees: the root's decision, and whether any rank could not take its report
        // (then every rank returns an error, so that none goes on alone into the next report).
        let mut agreed = [f64::from(u8::from(stop)), f64::from(u8::from(r.error.is_some()))];
        if let (Some(c), true) = (&mut self.comm, r.stopping) {
            if c.rank() != 0 {
                agreed[0] = 0.0;
            }
            c.all_reduce_sum(&mut agreed)?;
        }
        if let Some(e) = self.reports.error.take() {
            return Err(Error::Report(e));
        }
        if agreed[1] > 0.0 {
            return Err(Error::Report("another rank of this worker could not take its report (see its error)".into()));
        }
        let stop = agreed[0] > 0.0;
        self.reports.curve.pruned = stop;
        Ok(if stop { Decision::Stop } else { Decision::Continue })
    }

    /// Population-based training (`--propagator pbt`): the state this evaluation continues, where
    /// it saves its own, and its steps; `None` for other propagators.
    pub fn training(&self) -> Option<&TrainingState> {
        self.training.as_ref()
    }

    /// Population-based training: the directory of the training state to load before training
    /// (`None`: a fresh member, or not population-based training).
    pub fn restore_from(&self) -> Option<&std::path::Path> {
        self.training.as_ref().and_then(|t| t.restore_from.as_deref())
    }

    /// Population-based training: the empty directory to save this evaluation's training state
    /// into (model, optimizer, schedule), for the member's next evaluation or a member that
    /// exploits it. It is renamed into place only when the evaluation succeeds.
    pub fn save_to(&self) -> Option<&std::path::Path> {
        self.training.as_ref().map(|t| t.save_to.as_path())
    }

    /// Population-based training: training steps already done in the restored state (0 for a
    /// fresh member and outside population-based training).
    pub fn step(&self) -> u64 {
        self.training.as_ref().map_or(0, |t| t.step)
    }

    /// Run `f` on the worker root only (logging, saving a model).
    pub fn on_root<T>(&self, f: impl FnOnce() -> T) -> Option<T> {
        self.is_worker_root().then(f)
    }
}
