//! The propulate-rs command line, shared by its two executables: flags (`args`,
//! `propagator_flags`), the tasks it can optimize (`task`, `function_task`, `command_task`), a run
//! resolved into a plan (`plan`) and run (`run`, `evaluation_lines`), `report` and `env`. The CNN
//! task is not here: the CNN executable (`propulate-rs-cnn`, `src/cnn_main.rs` of the root
//! package) passes it to [`main`]. Without Burn among its dependencies, `propulate-rs` built on
//! this crate alone never links libtorch.

pub mod args;
mod command_task;
pub mod early_stop_choice;
mod env;
mod evaluation_lines;
pub mod flag_reference;
pub mod front;
mod function_task;
mod inside_checkpoint;
pub mod objectives;
pub mod option_words;
mod plan;
mod propagator_flags;
mod report;
mod run;
pub mod task;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use args::{Cli, Command};
use task::CnnTaskMaker;

/// Parse the command line and do what it says; errors are printed once, exit status 2. `cnn` is
/// how this binary builds the CNN task: the main binary has none and hands a CNN run over to the
/// CNN executable beside it.
pub fn main(cnn: Option<CnnTaskMaker>) -> ExitCode {
    let command = args::with_generated_help(Cli::command());
    let cli = Cli::from_arg_matches(&command.try_get_matches().unwrap_or_else(|e| exit_once(e)))
        .unwrap_or_else(|e| exit_once(e));
    let outcome = match &cli.command {
        Some(Command::Report(a)) => report::report(a),
        Some(Command::Env(a)) => env::env(a),
        // Before MPI starts, as a bad flag: rank 0 alone says the CNN executable is missing.
        None if cnn.is_none() && trains_the_cnn(&cli.run) => {
            hand_over_to_the_cnn_executable().inspect_err(|_| quiet_unless_rank_0())
        }
        None => run::run(&cli.run, cnn),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            tell(&format!("error: {}", full_message(&e)));
            ExitCode::from(2)
        }
    }
}

/// An error with its causes, each once: the library's errors already show their cause (an I/O
/// error's reason after its path), which `{:#}` would print a second time.
pub(crate) fn full_message(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1).map(|c| c.to_string()) {
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

/// End with a command-line error (or `--help`): every rank of an MPI job reads the same flags, so
/// rank 0 alone prints it and ends with its status, which becomes the job's. The others end
/// quietly with 0, before MPI starts: one ending with an error would make mpirun kill rank 0,
/// maybe before it has printed.
fn exit_once(e: clap::Error) -> ! {
    quiet_unless_rank_0();
    e.exit()
}

/// Before MPI starts, on an error every rank meets alike: ranks above 0 end here, quietly.
fn quiet_unless_rank_0() {
    if propulate::launcher::job_rank(|k| std::env::var(k).ok()).is_some_and(|rank| rank > 0) {
        std::process::exit(0);
    }
}

/// The CNN executable's file name, beside the main binary.
const CNN_EXECUTABLE: &str = "propulate-rs-cnn";

/// Whether the flags choose the CNN task (neither `--function` nor a command trial).
fn trains_the_cnn(args: &args::RunArgs) -> bool {
    args.function.is_none() && args.trial.space.is_none() && args.trial.command.is_empty()
}

/// Replace this process by the CNN executable beside it, with the same arguments (before MPI
/// starts, so that the launcher sees the same process). Returns only on failure.
fn hand_over_to_the_cnn_executable() -> anyhow::Result<ExitCode> {
    let me = std::env::current_exe()?;
    let cnn = me.with_file_name(CNN_EXECUTABLE);
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(&cnn).args(std::env::args_os().skip(1)).exec();
    anyhow::bail!(
        "the CNN task runs in {CNN_EXECUTABLE}, which should be beside this binary ({}): {error}; build both \
         with `cargo build --release --features cnn,tch` (or choose a benchmark with --function NAME)",
        cnn.display()
    )
}

/// Print to stdout; a closed pipe (`propulate-rs report DIR | head`) is not an error worth a panic.
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Print a line to stderr, `propulate-rs: ` before it; a closed pipe (`... 2>&1 | head`) is not
/// worth a panic either (eprintln's would end the run with status 101 instead of its own).
fn tell(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(format!("propulate-rs: {line}\n").as_bytes());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_errors_cause_is_printed_once() {
        let io = std::io::Error::from_raw_os_error(20); // ENOTDIR on Linux
        let e = anyhow::Error::from(propulate::Error::io("afile", io)).context("writing out");
        assert_eq!(full_message(&e), "writing out: afile: Not a directory (os error 20)");
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(full_message(&plain), "outer: inner");
    }
}
