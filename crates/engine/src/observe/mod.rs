//! Observers: how a run tells the world what it does. The engine itself prints nothing; a program
//! installs observers with [`Optimizer::observer`](crate::Optimizer::observer), each with a mode that
//! says which evaluations it hears of (as argmin's observers: always, every n-th, new bests). The
//! stock ones: [`ProgressLine`] (rank 0's progress on stderr), [`RankLog`] (one log file per rank),
//! [`StderrReporter`] (warnings and notices on stderr). The CLI installs all three.
//!
//! Observers run on the rank where the event happens, inside the driver's loop: keep them cheap.
//! With in-process ranks (`run_local`) one observer is shared by the ranks' threads, so every call
//! carries the [`RankInfo`] of the rank it comes from.

mod progress;
mod rank_log;
mod stderr;

use std::sync::{Arc, Mutex};

pub use progress::ProgressLine;
pub use rank_log::RankLog;
pub use stderr::StderrReporter;

use crate::launcher::Launcher;
use propulate_core::individual::Individual;

/// Which evaluations an observer hears of. Every other event (start, failures, warnings, the end)
/// reaches every observer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObserverMode {
    /// Every evaluation.
    Always,
    /// Every n-th evaluation of each worker (counted from the run's first, resumed ones included).
    Every(u64),
    /// Evaluations that improved their island's best loss, as their worker knows it.
    NewBest,
    /// No evaluations: only the other events.
    Never,
}

/// Who and where the rank is that reports an event.
#[derive(Debug, Clone, PartialEq)]
pub struct RankInfo {
    /// The rank in the whole job.
    pub rank: usize,
    /// Ranks in the job.
    pub world_size: usize,
    /// The rank's worker.
    pub worker: usize,
    /// Workers in the job.
    pub workers: usize,
    /// The worker's island.
    pub island: usize,
    /// Islands in the job.
    pub islands: usize,
    /// The rank's index in its worker (0: the worker root).
    pub rank_in_worker: usize,
    /// Ranks per worker.
    pub ranks_per_worker: usize,
    /// The launcher that started the job, from its environment variables.
    pub launcher: Launcher,
    /// The rank's index on its node.
    pub local_rank: usize,
    /// The node's name.
    pub host: String,
}

/// Where a worker stands after an evaluation (reported by worker roots).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerStatus {
    /// Generations done, counted as generation numbers: the next generation this worker breeds.
    pub generation: u64,
    /// The generation number at which this worker stops (with a shared budget, the most it may
    /// reach: its island's whole budget).
    pub last_generation: u64,
    /// With a shared budget (`--shared-budget`): the island's evaluations this worker knows of,
    /// and the island's budget.
    pub island_budget: Option<(u64, u64)>,
    /// Evaluations of this worker so far, resumed ones included.
    pub evaluations: u64,
    /// Evaluations of this worker that were in the checkpoint when the run started.
    pub resumed: u64,
    /// Failed evaluations among `evaluations`.
    pub failed: u64,
    /// The best loss of the island's active population, as this worker knows it.
    pub island_best: Option<f64>,
    /// Active individuals on the island, as this worker knows it.
    pub active: usize,
    /// Individuals this worker sent to other islands.
    pub emigrated: u64,
    /// Seconds since the run started (after checkpoint preparation).
    pub elapsed_s: f64,
}

/// What an observer hears.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A worker root continues from its checkpoint with this many evaluations done.
    Resumed {
        /// Evaluations of this worker found in the journal.
        evaluations: u64,
    },
    /// A worker root finished an evaluation (filtered by the observer's mode).
    Evaluated {
        /// The evaluated individual (its loss is `+inf` when it failed).
        individual: &'a Individual,
        /// The worker after the evaluation.
        status: &'a WorkerStatus,
        /// True if the evaluation improved the island's best loss.
        new_best: bool,
    },
    /// An evaluation failed on this rank (an error, a panic, a NaN); the run goes on.
    Failed {
        /// The generation of the failed individual.
        generation: u64,
        /// Why it failed.
        reason: &'a str,
    },
    /// A worker root has done all its generations and the run ended cleanly.
    Finished(&'a WorkerStatus),
    /// A non-root rank of a multi-rank worker is done.
    FollowerFinished {
        /// Evaluations this rank took part in.
        evaluations: u64,
    },
    /// Something the user should know that does not stop the run (a torn journal tail, ...).
    Warning(&'a str),
    /// What the run does with its checkpoint (resuming, seeding from another run).
    Notice(&'a str),
}

/// Something that watches a run. A closure `FnMut(&RankInfo, &Event)` is an observer too.
pub trait Observer: Send {
    /// Called on every rank before the run starts. An error stops the run on every rank before
    /// any evaluation, with the message of the lowest failing rank.
    fn start(&mut self, _rank: &RankInfo) -> Result<(), String> {
        Ok(())
    }
    /// One event on `rank`. An error switches this observer off on that rank; the other observers
    /// hear of it as a warning.
    fn observe(&mut self, rank: &RankInfo, event: &Event<'_>) -> Result<(), String>;
}

impl<F: FnMut(&RankInfo, &Event<'_>) + Send> Observer for F {
    fn observe(&mut self, rank: &RankInfo, event: &Event<'_>) -> Result<(), String> {
        self(rank, event);
        Ok(())
    }
}

/// The observers installed on a run, shared by the ranks of one process.
#[derive(Clone, Default)]
pub struct Observers {
    list: Vec<(ObserverMode, Arc<Mutex<dyn Observer>>)>,
}

impl std::fmt::Debug for Observers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let modes: Vec<ObserverMode> = self.list.iter().map(|(m, _)| *m).collect();
        f.debug_struct("Observers").field("modes", &modes).finish()
    }
}

impl Observers {
    /// Add an observer.
    pub fn push(&mut self, mode: ObserverMode, observer: impl Observer + 'static) {
        self.list.push((mode, Arc::new(Mutex::new(observer))));
    }

    /// Number of installed observers.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when no observer is installed.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The observers as one rank drives them.
    pub(crate) fn for_rank(&self, info: RankInfo) -> RankObservers<'_> {
        RankObservers { list: &self.list, on: vec![true; self.list.len()], info }
    }
}

/// The observers of one rank: who the rank is, and which observers are still on there.
pub(crate) struct RankObservers<'a> {
    list: &'a [(ObserverMode, Arc<Mutex<dyn Observer>>)],
    on: Vec<bool>,
    pub info: RankInfo,
}

impl RankObservers<'_> {
    /// Start every observer on this rank; the first error, if any.
    pub fn start(&mut self) -> Result<(), String> {
        for (_, o) in self.list {
            lock(o).start(&self.info)?;
        }
        Ok(())
    }

    /// Tell every observer that is on (events other than evaluations ignore the modes).
    pub fn emit(&mut self, event: &Event<'_>) {
        self.emit_where(event, |_| true);
    }

    /// A worker root's evaluation, to the observers whose mode asks for it.
    pub fn evaluated(&mut self, individual: &Individual, status: &WorkerStatus, new_best: bool) {
        if self.list.is_empty() {
            return;
        }
        let event = Event::Evaluated { individual, status, new_best };
        self.emit_where(&event, |mode| match mode {
            ObserverMode::Always => true,
            ObserverMode::Every(n) => n > 0 && status.evaluations.is_multiple_of(n),
            ObserverMode::NewBest => new_best,
            ObserverMode::Never => false,
        });
    }

    /// True if some observer that is on hears of evaluations (so the hot loop can skip building
    /// the status for observers such as a warnings reporter that never do).
    pub fn hear_evaluations(&self) -> bool {
        self.list.iter().zip(&self.on).any(|((mode, _), &on)| on && *mode != ObserverMode::Never)
    }

    fn emit_where(&mut self, event: &Event<'_>, wants: impl Fn(ObserverMode) -> bool) {
        let mut failures = Vec::new();
        for (i, (mode, o)) in self.list.iter().enumerate() {
            if self.on[i]
                && wants(*mode)
                && let Err(e) = lock(o).observe(&self.info, event)
            {
                self.on[i] = false;
                failures.push(e);
            }
        }
        for e in failures {
            let text = format!("an observer stopped on rank {}: {e}", self.info.rank);
            self.emit(&Event::Warning(&text));
        }
    }
}

/// An observer that panicked once is still usable: its state is whatever it was.
fn lock<'m>(o: &'m Mutex<dyn Observer + 'static>) -> std::sync::MutexGuard<'m, dyn Observer + 'static> {
    o.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
