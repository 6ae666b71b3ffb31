//! The command line, private to the binary: flags (`args`, `propagator_flags`), the tasks it can
//! optimize (`task`, `cnn_task`, `function_task`, `command_task`), a run resolved into a plan
//! (`plan`) and run (`run`, `evaluation_lines`), `report` and `env`.

mod args;
#[cfg(feature = "cnn")]
mod cnn_task;
mod command_task;
mod early_stop_choice;
mod env;
mod evaluation_lines;
mod function_task;
mod plan;
mod propagator_flags;
mod report;
mod run;
mod task;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

/// Parse the command line and do what it says; errors are printed once, exit status 2.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Some(Command::Report(a)) => report::report(a),
        Some(Command::Env(a)) => env::env(a),
        None => run::run(&cli.run),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("propulate-rs: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Print to stdout; a closed pipe (`propulate-rs report DIR | head`) is not an error worth a panic.
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Run `job` on this process's rank of the MPI world (a job started by mpirun, srun, ...), and
/// finalize MPI after it.
fn on_mpi_world(
    job: impl FnOnce(&mut dyn propulate::transport::Communicator) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    #[cfg(feature = "mpi")]
    {
        // The runtime is declared first so that it is dropped (MPI_Finalize) after the communicator.
        let runtime = propulate::transport::mpi::MpiRuntime::init()?;
        let mut world = runtime.world();
        let code = job(&mut world);
        drop(world);
        code
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = job;
        anyhow::bail!("this build has no MPI support (cargo feature `mpi`); use --local-ranks N")
    }
}
