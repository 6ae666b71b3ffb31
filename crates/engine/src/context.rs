//! The `WorkerContext` handed to a loss closure: who this rank is, the worker's communicator, its
//! seed and device. Everything a multi-rank loss needs, passed explicitly (no global singletons).

use crate::error::Result;
use crate::launcher::Device;
use crate::transport::Communicator;
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
    pub(crate) comm: Option<&'a mut dyn Communicator>,
    /// Metrics recorded by the loss during this evaluation.
    pub(crate) metrics: Vec<(String, f64)>,
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
            comm,
            metrics: Vec::new(),
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

    /// Run `f` on the worker root only (logging, saving a model).
    pub fn on_root<T>(&self, f: impl FnOnce() -> T) -> Option<T> {
        self.is_worker_root().then(f)
    }
}
