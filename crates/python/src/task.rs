//! A Python loss as the command line's task: each evaluation takes the GIL, hands the candidate's
//! values to the package's `evaluate(params, ctx)` (which calls the user's loss) and turns what
//! comes back into the engine's loss. An `Exception` fails the evaluation with its message and the
//! run goes on; anything else raised (Ctrl-C's `KeyboardInterrupt`, `SystemExit`) ends the run
//! with the checkpoint whole, and is raised again by `run` once the engine has returned.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use propulate::space::{Domain, Param};
use propulate::{Params, SearchSpace, Value, WorkerContext};
use propulate_cli::args::RunArgs;
use propulate_cli::early_stop_choice::early_stopper;
use propulate_cli::task::{Loss, Task};

use crate::context::Context;

/// The search space the Python side describes as JSON: a list of parameters as the core
/// serializes them (`{"name": "lr", "type": "float", "lo": 1e-4, "hi": 0.1, "log": true}`).
pub fn space_from_json(text: &str) -> PyResult<SearchSpace> {
    let params: Vec<Param> =
        serde_json::from_str(text).map_err(|e| PyValueError::new_err(format!("search space: {e}")))?;
    SearchSpace::new(params).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The exception that ended a run, kept for `run` to raise again.
#[derive(Clone, Default)]
pub struct Interruption(Arc<Mutex<Option<PyErr>>>);

impl Interruption {
    /// The exception, once.
    pub fn take(&self) -> Option<PyErr> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Keep `error` and unwind out of the engine's loss (the engine returns
    /// `Error::Interrupted`, or aborts a job of several ranks).
    fn stop_the_run(&self, py: Python<'_>, error: PyErr) -> ! {
        let why = error.value(py).repr().map(|r| r.to_string()).unwrap_or_else(|_| "an exception".into());
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
        std::panic::resume_unwind(Box::new(propulate::Interrupted(format!("the loss raised {why}"))))
    }
}

/// How a run's loss is named: `name` (the default checkpoint directory, a fact the checkpoint
/// records) and `source`, where it is defined (`train.py:loss`, recorded where known: two scripts
/// with a loss of the same name would otherwise resume each other's run).
pub struct LossName {
    pub name: String,
    pub source: Option<String>,
}

/// The Python loss of a run.
pub struct PythonTask {
    evaluate: Arc<Py<PyAny>>,
    space: SearchSpace,
    loss: LossName,
    early_stop: String,
    interruption: Interruption,
}

impl PythonTask {
    /// The task of `evaluate` over `space` with the flags `args`.
    pub fn boxed(
        args: &RunArgs,
        evaluate: Py<PyAny>,
        space: SearchSpace,
        loss: LossName,
        interruption: Interruption,
    ) -> propulate::Result<Box<dyn Task>> {
        // Checked now, on every rank, so that a bad name is a set-up error and not a late one.
        early_stopper(&args.training.early_stop)?;
        Ok(Box::new(PythonTask {
            evaluate: Arc::new(evaluate),
            space,
            loss,
            early_stop: args.training.early_stop.clone(),
            interruption,
        }))
    }
}

impl Task for PythonTask {
    fn name(&self) -> String {
        self.loss.name.clone()
    }
    fn space(&self) -> &SearchSpace {
        &self.space
    }
    fn loss(&self) -> Loss {
        let (evaluate, interruption) = (self.evaluate.clone(), self.interruption.clone());
        let space = Arc::new(self.space.clone());
        Arc::new(move |params: Params<'_>, ctx: &mut WorkerContext<'_>| {
            Python::attach(|py| evaluate_in_python(py, &evaluate, &interruption, &space, params, ctx))
        })
    }
    fn checkpoint_facts(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut facts = serde_json::Map::new();
        facts.insert("task".into(), "python".into());
        facts.insert("loss".into(), self.loss.name.clone().into());
        if let Some(source) = &self.loss.source {
            facts.insert("loss_source".into(), source.clone().into());
        }
        facts
    }
    fn default_generations(&self) -> u64 {
        100
    }
    fn default_propagator(&self) -> &'static str {
        propulate::propagator::AUTO
    }
    fn early_stopper(&self) -> Option<Box<dyn propulate::early_stop::EarlyStopper>> {
        early_stopper(&self.early_stop).ok().flatten()
    }
}

/// One evaluation on this rank: `evaluate(params, ctx)` returns the loss as a float (the Python
/// side has already turned a dict of objectives into metrics and checked the type).
fn evaluate_in_python(
    py: Python<'_>,
    evaluate: &Py<PyAny>,
    interruption: &Interruption,
    space: &SearchSpace,
    params: Params<'_>,
    ctx: &mut WorkerContext<'_>,
) -> propulate::LossResult {
    // Ctrl-C while the engine bred or waited: CPython only set a flag, which is read here.
    if let Err(e) = py.check_signals() {
        interruption.stop_the_run(py, e);
    }
    let outcome = params_dict(py, space, params.values()).and_then(|dict| {
        let context = Context::live(py, ctx)?;
        let value = evaluate.bind(py).call1((dict, context.clone_ref(py)));
        context.borrow(py).end();
        value?.extract::<f64>()
    });
    match outcome {
        Ok(loss) => Ok(loss),
        Err(e) if e.is_instance_of::<PyException>(py) => Err(e.to_string().into()),
        Err(e) => interruption.stop_the_run(py, e),
    }
}

/// The candidate as a dict of plain Python values: float, int, or the categorical's string; an
/// inactive conditional parameter is absent.
pub fn params_dict<'py>(py: Python<'py>, space: &SearchSpace, values: &[Value]) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (_, param, value) in space.active_values(values) {
        match (&value, &param.domain) {
            (Value::Float(x), _) => dict.set_item(&param.name, *x)?,
            (Value::Int(n), _) => dict.set_item(&param.name, *n)?,
            (Value::Cat(k), Domain::Categorical { choices }) => dict.set_item(&param.name, &choices[*k as usize])?,
            (Value::Cat(k), _) => dict.set_item(&param.name, *k)?,
        }
    }
    Ok(dict)
}
