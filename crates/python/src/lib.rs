//! `propulate_rs._native`: the Python package's bindings over the engine (the Python side is
//! `python/propulate_rs/`). Thin on purpose: the Python side checks the user's input and shapes the
//! results; this side runs the command line's plan ([`propulate_cli::front`]) with a Python loss as
//! its task on the communicator mpi4py made, and keeps an ask/tell study.
//!
//! MPI belongs to mpi4py: it initialises and finalises, and this module only duplicates the
//! communicator it is given (and frees its duplicate before returning). The GIL is released for the
//! whole run and taken back for each call of the loss.

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

mod context;
mod records;
mod study;
mod task;
mod world;

use propulate_cli::front::{self, FrontError};
use propulate_cli::option_words::in_option_words;

/// The run flags a Python run takes, as `(name, flag, switch, help)`: `name` is the keyword of
/// `optimize`, `flag` the command line's, `switch` whether it is given or not (no value).
#[pyfunction]
fn options() -> Vec<(String, String, bool, String)> {
    front::options().into_iter().map(|o| (o.name, o.flag, o.switch, o.help)).collect()
}

/// Why this process, alone in its MPI world, is one of several copies a launcher started without
/// one MPI job (torchrun, srun without its MPI plugin): each would search on its own, on one
/// checkpoint. `None` where it is not (`propulate::launcher::copy_outside_the_mpi_world`).
#[pyfunction]
fn copy_outside_the_mpi_world() -> Option<String> {
    propulate::launcher::copy_outside_the_mpi_world(|k| std::env::var(k).ok(), 1)
}

/// The MPI library this module was built against (`MPI_Get_library_version`), to compare with
/// mpi4py's: two MPI libraries in one process crash it.
#[pyfunction]
fn mpi_library_version() -> PyResult<String> {
    let text = mpi::environment::library_version().map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok(text.trim_end_matches('\0').trim_end().to_string())
}

/// Run the optimization: `evaluate(params, ctx)` is called on every rank of a worker for each
/// candidate, `space` is the search space as JSON (a list of parameters), `words` the run flags,
/// `comm_address` `MPI._addressof` of the world communicator (collective over it), `name` the
/// loss's name (the default checkpoint directory, and a fact the checkpoint records), `source`
/// where it is defined (`train.py:loss`; recorded, so that another script's loss of the same name
/// does not resume this run). Returns the result as JSON.
#[pyfunction]
#[pyo3(signature = (evaluate, space, words, comm_address, name, source = None))]
fn run(
    py: Python<'_>,
    evaluate: Py<PyAny>,
    space: &str,
    words: Vec<String>,
    comm_address: usize,
    name: String,
    source: Option<String>,
) -> PyResult<String> {
    let space = task::space_from_json(space)?;
    let space_for_result = space.clone();
    let args = front::parse(&words).map_err(|e| PyValueError::new_err(in_option_words(&e.to_string())))?;
    let interruption = task::Interruption::default();
    let stopped = interruption.clone();
    let outcome = py.detach(move || {
        // SAFETY: the Python side passes `MPI._addressof` of a live intra-communicator.
        let mut world = unsafe { world::duplicate(comm_address) };
        let loss = task::LossName { name, source };
        let make_task =
            |args: &propulate_cli::args::RunArgs| task::PythonTask::boxed(args, evaluate, space, loss, stopped);
        let outcome = front::run(&args, make_task, &mut world);
        drop(world);
        outcome
    });
    match outcome {
        Ok(result) => Ok(records::result_json(&space_for_result, &result).to_string()),
        Err(FrontError::Run(propulate::Error::Interrupted(why))) => {
            Err(interruption.take().unwrap_or_else(|| pyo3::exceptions::PyKeyboardInterrupt::new_err(why)))
        }
        // In the words of the options the run was given, not the command line's flags.
        Err(FrontError::Setup(m)) => Err(PyValueError::new_err(in_option_words(&m))),
        Err(FrontError::Output(m)) => Err(PyOSError::new_err(in_option_words(&m))),
        Err(FrontError::Run(e @ (propulate::Error::InvalidConfig(_) | propulate::Error::Core(_)))) => {
            Err(PyValueError::new_err(in_option_words(&e.to_string())))
        }
        Err(FrontError::Run(e)) => Err(PyRuntimeError::new_err(in_option_words(&e.to_string()))),
    }
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(options, m)?)?;
    m.add_function(wrap_pyfunction!(copy_outside_the_mpi_world, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_library_version, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_class::<context::Context>()?;
    m.add_class::<study::Study>()?;
    // The trial tables' own column names, so that to_dict prefixes a parameter as trials.csv does.
    m.add("OWN_COLUMNS", propulate::output::OWN_COLUMNS.to_vec())?;
    Ok(())
}
