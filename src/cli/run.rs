//! An optimization run from the command line: set up the world, build the task and the
//! configuration, install the observers, run through [`Optimizer`] (the library's front door, as
//! any user program), and write the results on rank 0.

use std::process::ExitCode;

use anyhow::Context;
use serde_json::json;

use propulate::observe::{RankLog, StderrReporter};
use propulate::output::{summary_table, write_outputs};
#[cfg(feature = "mpi")]
use propulate::transport::Communicator;
use propulate::{ObserverMode, Optimizer, RunConfig, RunResult};

use super::args::RunArgs;
use super::command_task::CommandTask;
use super::evaluation_lines::EvaluationLines;
use super::function_task::FunctionTask;
use super::say;
use super::task::Task;

/// The task the flags select: a benchmark function with `--function`, a user's program with
/// `--space FILE -- COMMAND`, the CNN otherwise.
fn task(args: &RunArgs, world_rank: usize) -> propulate::Result<Box<dyn Task>> {
    if let Some(space) = &args.trial.space {
        return Ok(Box::new(CommandTask::new(args, space)?));
    }
    if !args.trial.command.is_empty() {
        return Err(propulate::Error::InvalidConfig(format!(
            "a trial command ({}) needs its search space: add --space FILE",
            args.trial.command.join(" ")
        )));
    }
    if args.trial.trial_timeout.is_some() || args.trial.trials_dir.is_some() {
        return Err(propulate::Error::InvalidConfig(
            "--trial-timeout and --trials-dir belong to command trials (--space FILE -- COMMAND)".into(),
        ));
    }
    if let Some(name) = &args.function {
        return Ok(Box::new(FunctionTask::new(name, args.eval_delay_ms)?));
    }
    #[cfg(feature = "cnn")]
    {
        Ok(Box::new(super::cnn_task::CnnTask::new(&args.cnn, &args.training, world_rank)?))
    }
    #[cfg(not(feature = "cnn"))]
    {
        let _ = world_rank;
        Err(propulate::Error::InvalidConfig(
            "this build has no CNN task (cargo feature `cnn`); choose a benchmark with --function NAME".into(),
        ))
    }
}

/// The task, the configuration for `world_size` ranks and the optimizer with its observers.
fn prepare(
    args: &RunArgs,
    world_size: usize,
    world_rank: usize,
) -> propulate::Result<(Box<dyn Task>, RunConfig, Optimizer)> {
    let task = task(args, world_rank)?;
    let propagator = args.propagator_name(task.as_ref())?;
    let cfg = args.to_config(world_size, task.as_ref(), &propagator)?;
    // Rank 0 writes the results: find out now, not after the run, that it cannot.
    if let (Some(dir), 0) = (&args.out, world_rank) {
        propulate::output::check_output_dir(dir).map_err(|e| {
            propulate::Error::InvalidConfig(format!(
                "--out {}: the results could not be written there: {e}",
                dir.display()
            ))
        })?;
    }
    let mut optimizer = Optimizer::new(task.space().clone());
    if let Some(stopper) = task.early_stopper() {
        optimizer = optimizer.early_stopping_boxed(stopper);
    }
    if let Some(p) = args.breeding_in_effect(task.as_ref(), &propagator).build(&propagator, task.space())? {
        optimizer = optimizer.propagator(p);
    }
    let mut optimizer = optimizer
        .config(cfg.clone())
        .progress(!args.quiet && !task.prints_each_evaluation())
        .observer(ObserverMode::Never, StderrReporter);
    if task.prints_each_evaluation() && !args.quiet {
        optimizer =
            optimizer.observer(ObserverMode::Always, EvaluationLines::new(task.space().clone(), task.loss_name()));
    }
    if let Some(dir) = &args.log_dir {
        optimizer = optimizer.observer(ObserverMode::Every(args.log_interval), RankLog::new(dir));
    }
    Ok((task, cfg, optimizer))
}

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(n) = args.local_ranks {
        let (task, cfg, optimizer) = prepare(args, n, 0)?;
        let loss = task.loss();
        let result = optimizer.run_local(n, move |p, ctx| loss(p, ctx))?;
        finish(args, task.as_ref(), &cfg, n, &result)?;
        return Ok(ExitCode::SUCCESS);
    }
    #[cfg(feature = "mpi")]
    {
        // The runtime is declared first so that it is dropped (MPI_Finalize) after the communicators.
        let runtime = propulate::transport::mpi::MpiRuntime::init()?;
        let mut world = runtime.world();
        let code = run_on(args, &mut world);
        drop(world);
        code
    }
    #[cfg(not(feature = "mpi"))]
    {
        anyhow::bail!("this build has no MPI support (cargo feature `mpi`); use --local-ranks N")
    }
}

/// One rank's share of an MPI job. Every rank prepares (reads the data, a topology file) and the
/// ranks agree on the outcome before any collective, so that a rank that could not read a file
/// does not leave the others waiting; configuration errors found later by the driver are agreed
/// on by it. Rank 0 reports, and all exit together.
#[cfg(feature = "mpi")]
fn run_on(args: &RunArgs, world: &mut dyn Communicator) -> anyhow::Result<ExitCode> {
    let prepared = prepare(args, world.size(), world.rank());
    let mine = prepared.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
    let all = world.all_gather(mine.into_bytes())?;
    if let Some(rank) = all.iter().position(|m| !m.is_empty()) {
        let text = String::from_utf8_lossy(&all[rank]);
        let everywhere = all.iter().all(|m| *m == all[rank]);
        let message = if everywhere { text.to_string() } else { format!("rank {rank}: {text}") };
        return fail_together(world, &message);
    }
    let outcome = prepared.and_then(|(task, cfg, optimizer)| {
        let loss = task.loss();
        let result = optimizer.run(world, |p, ctx| loss(p, ctx))?;
        Ok((task, cfg, result))
    });
    let (task, cfg, result) = match outcome {
        Ok(done) => done,
        Err(e) => return fail_together(world, &e.to_string()),
    };
    if world.rank() == 0 {
        finish(args, task.as_ref(), &cfg, world.size(), &result)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// An error every rank has: rank 0 reports it, and all exit together with status 2 (a rank leaving
/// early makes mpirun kill rank 0 before it has spoken).
#[cfg(feature = "mpi")]
pub(super) fn fail_together(world: &mut dyn Communicator, message: &str) -> anyhow::Result<ExitCode> {
    if world.rank() == 0 {
        eprintln!("propulate-rs: error: {message}");
    }
    world.barrier()?;
    Ok(ExitCode::from(2))
}

/// Rank 0: the summary table, and the result files with `--out`.
fn finish(args: &RunArgs, task: &dyn Task, cfg: &RunConfig, ranks: usize, result: &RunResult) -> anyhow::Result<()> {
    say(&summary_table(task.space(), result));
    if let Some(dir) = &args.out {
        let mut extra = task.checkpoint_facts();
        let propagator = args.propagator_name(task)?;
        let settings = args.breeding_in_effect(task, &propagator).settings_given();
        extra.insert("propagator".into(), json!(propagator));
        extra.insert("propagator_settings".into(), json!(settings));
        extra.insert("ranks".into(), json!(ranks));
        extra.insert("seed".into(), json!(cfg.seed));
        extra.insert("generations".into(), json!(cfg.generations));
        write_outputs(dir, task.space(), result, extra).with_context(|| format!("writing {}", dir.display()))?;
        say(&format!("wrote {}/best.json, trials.csv, trials.jsonl, progress.svg\n", dir.display()));
    }
    Ok(())
}
