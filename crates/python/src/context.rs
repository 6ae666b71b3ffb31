//! `propulate_rs.Context`, the `ctx` a loss gets: where it runs (its rank and size within the
//! worker, the worker, the island, the device), `report` for early stopping, `record` for metrics,
//! and population-based training's state directories and steps. The Python side adds `comm`, the
//! worker's mpi4py communicator.
//!
//! It reaches the engine's `WorkerContext` of the evaluation in progress through a pointer that is
//! cleared when the evaluation returns: a `ctx` kept past its evaluation answers with an error,
//! never with a dangling reference.

use std::cell::Cell;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use propulate::WorkerContext;
use propulate::early_stop::Decision;
use propulate::launcher::Device;

/// The engine's context of the evaluation in progress, moved to the thread that releases the GIL.
struct Live(*mut WorkerContext<'static>);

// SAFETY: the pointer is used only while the evaluation that owns the context is running on this
// same thread, which waits for the detached call to return.
unsafe impl Send for Live {}

/// What the loss of one evaluation is told, on one rank.
#[pyclass(unsendable, module = "propulate_rs", name = "Context")]
pub struct Context {
    /// This rank's index in its worker (0: the worker root, whose loss is recorded).
    #[pyo3(get)]
    rank: usize,
    /// Ranks in the worker.
    #[pyo3(get)]
    size: usize,
    /// The worker.
    #[pyo3(get)]
    worker: usize,
    /// The worker's island.
    #[pyo3(get)]
    island: usize,
    /// This rank in the whole job.
    #[pyo3(get)]
    world_rank: usize,
    /// Ranks in the whole job.
    #[pyo3(get)]
    world_size: usize,
    /// The device this rank should use: "cpu", or "cuda:N" (the local rank's GPU).
    #[pyo3(get)]
    device: String,
    /// A seed for this evaluation, the same on every rank of the worker.
    #[pyo3(get)]
    seed: u64,
    /// The evaluation's identity, "island/worker/generation": unique in the run, the same again
    /// when a resume evaluates an interrupted one.
    #[pyo3(get)]
    trial: String,
    /// Population-based training: the directory of the state to continue (None: a fresh member).
    #[pyo3(get)]
    restore_from: Option<String>,
    /// Population-based training: the empty directory to save this evaluation's state into.
    #[pyo3(get)]
    save_to: Option<String>,
    /// Population-based training: steps already trained in the restored state.
    #[pyo3(get)]
    step: u64,
    /// Population-based training: steps to train in this evaluation (0 otherwise).
    #[pyo3(get)]
    steps: u64,
    /// The worker's mpi4py communicator, set by the Python side (None without mpi4py).
    #[pyo3(get, set)]
    comm: Option<Py<PyAny>>,
    live: Cell<*mut WorkerContext<'static>>,
}

impl Context {
    /// The `ctx` of the evaluation `ctx` runs; [`Context::end`] when it returns.
    pub fn live(py: Python<'_>, ctx: &mut WorkerContext<'_>) -> PyResult<Py<Context>> {
        let device = match ctx.device {
            Device::Cpu => "cpu".to_string(),
            Device::Gpu(i) => format!("cuda:{i}"),
        };
        let training = ctx.training();
        let path = |p: Option<&std::path::Path>| p.map(|p| p.display().to_string());
        let context = Context {
            rank: ctx.worker_rank,
            size: ctx.worker_size,
            worker: ctx.worker,
            island: ctx.island,
            world_rank: ctx.world_rank,
            world_size: ctx.world_size,
            device,
            seed: ctx.seed,
            trial: ctx.trial.to_string(),
            restore_from: path(ctx.restore_from()),
            save_to: path(ctx.save_to()),
            step: ctx.step(),
            steps: training.map_or(0, |t| t.steps),
            comm: None,
            // The lifetime is erased for as long as the evaluation runs; `end` clears it.
            live: Cell::new((ctx as *mut WorkerContext<'_>).cast::<WorkerContext<'static>>()),
        };
        Py::new(py, context)
    }

    /// The evaluation returned: the engine's context is gone.
    pub fn end(&self) {
        self.live.set(std::ptr::null_mut());
    }

    fn engine(&self) -> PyResult<Live> {
        let ptr = self.live.get();
        if ptr.is_null() {
            return Err(PyRuntimeError::new_err(
                "this ctx belongs to an evaluation that has returned; use the ctx of the running one",
            ));
        }
        Ok(Live(ptr))
    }
}

#[pymethods]
impl Context {
    /// Report an intermediate loss at `step` (steps increase: an epoch, a batch count). Returns
    /// False when early stopping ends this training: the loss should then return at once. In a
    /// worker of several ranks every rank reports the same steps.
    fn report(&self, py: Python<'_>, step: u64, loss: f64) -> PyResult<bool> {
        let live = self.engine()?;
        // The worker's ranks and the island's workers may be waited for: without the GIL.
        let decision = py.detach(move || {
            let live = live;
            // SAFETY: `live` points at the running evaluation's context (checked above).
            unsafe { (*live.0).report(step, loss) }
        });
        match decision {
            Ok(Decision::Continue) => Ok(true),
            Ok(Decision::Stop) => Ok(false),
            Err(e) => Err(PyValueError::new_err(e.to_string())),
        }
    }

    /// Record a metric of this evaluation besides its loss (an accuracy, a time): a column of the
    /// trial tables, and an objective of that name with `objectives=`.
    fn record(&self, name: &str, value: f64) -> PyResult<()> {
        let live = self.engine()?;
        // SAFETY: as in `report`.
        unsafe { (*live.0).record(name, value) };
        Ok(())
    }

    /// Report the constraint values of this evaluation (feasible when each is at most 0), what a
    /// loss's dict gives as `"constraints"`.
    fn set_constraints(&self, values: Vec<f64>) -> PyResult<()> {
        let live = self.engine()?;
        // SAFETY: as in `report`.
        unsafe { (*live.0).set_constraints(&values) };
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "Context(rank={}, size={}, worker={}, island={}, device='{}', trial='{}')",
            self.rank, self.size, self.worker, self.island, self.device, self.trial
        )
    }
}
