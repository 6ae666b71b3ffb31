//! An optimization run from the command line: set up the world, build the task and the
//! configuration, install the observers, run through [`Optimizer`] (the library's front door, as
//! any user program), and write the results on rank 0.

use std::process::ExitCode;

use anyhow::Context;
use serde_json::json;

use propulate::config::RunConfig;
use propulate::observe::{RankLog, StderrReporter};
use propulate::output::{summary_table, write_outputs};
use propulate::report_html::run_settings;
use propulate::transport::Communicator;
use propulate::{ObserverMode, Optimizer, RunResult};

use super::args::RunArgs;
use super::command_task::CommandTask;
use super::evaluation_lines::EvaluationLines;
use super::function_task::FunctionTask;
use super::objectives::objective_values;
use super::on_mpi_world;
use super::plan::{Plan, SetupFiles};
use super::report::wrote_line;
use super::say;
use super::task::{CnnTaskMaker, Task};

/// The task the flags select: a benchmark function with `--function`, a user's program with
/// `--space FILE -- COMMAND`, the CNN otherwise.
fn task(
    args: &RunArgs,
    files: &SetupFiles,
    world_rank: usize,
    cnn: Option<CnnTaskMaker>,
) -> propulate::Result<Box<dyn Task>> {
    if let (Some(path), Some(text)) = (&args.trial.space, &files.space) {
        return Ok(Box::new(CommandTask::new(args, path, text)?));
    }
    if !args.trial.command.is_empty() {
        let command = args.trial.command.join(" ");
        return Err(propulate::Error::InvalidConfig(match &args.function {
            Some(f) => format!("--function {f} and a trial command ({command}) are two tasks: give one of them"),
            None => format!("a trial command ({command}) needs its search space: add --space FILE"),
        }));
    }
    if args.trial.trial_timeout.is_some() || args.trial.trials_dir.is_some() || args.trial.preload.is_some() {
        return Err(propulate::Error::InvalidConfig(
            "--trial-timeout, --trials-dir and --preload belong to command trials (--space FILE -- COMMAND)".into(),
        ));
    }
    if let Some(name) = &args.function {
        return Ok(Box::new(FunctionTask::new(name, args.eval_delay_ms, args.eval_delay_spread)?));
    }
    match cnn {
        Some(make) => make(args, world_rank),
        None => Err(propulate::Error::InvalidConfig(
            "this build has no CNN task (cargo feature `cnn`); choose a benchmark with --function NAME".into(),
        )),
    }
}

/// The plan for `world_size` ranks from `files` (read once for the job), and the optimizer with its
/// observers.
fn prepare(
    args: &RunArgs,
    cnn: Option<CnnTaskMaker>,
    files: &SetupFiles,
    world_size: usize,
    world_rank: usize,
) -> propulate::Result<(Plan, Optimizer)> {
    files.check_read_for(args)?;
    let task = task(args, files, world_rank, cnn)?;
    prepare_task(args, task, files, world_size, world_rank)
}

/// [`prepare`] with the task given (another front's own, such as a Python loss).
pub(crate) fn prepare_task(
    args: &RunArgs,
    task: Box<dyn Task>,
    files: &SetupFiles,
    world_size: usize,
    world_rank: usize,
) -> propulate::Result<(Plan, Optimizer)> {
    let plan = Plan::new(args, task, files, world_size)?;
    // Rank 0 writes the results: find out now, not after the run, that it cannot.
    if let (Some(dir), 0) = (&args.results.out, world_rank) {
        propulate::output::check_output_dir(dir).map_err(|e| {
            propulate::Error::InvalidConfig(format!(
                "--out {}: the results could not be written there: {e}",
                dir.display()
            ))
        })?;
    }
    let task = plan.task.as_ref();
    if world_rank == 0 {
        for notice in task.notices() {
            crate::tell(&notice);
        }
    }
    let mut optimizer = Optimizer::new(task.space().clone());
    if let Some(stopper) = task.early_stopper() {
        optimizer = optimizer.early_stopping_boxed(stopper);
    }
    let mut optimizer = optimizer
        .config(plan.config.clone())
        .progress(!args.quiet && !task.prints_each_evaluation())
        .observer(ObserverMode::Never, StderrReporter);
    if task.prints_each_evaluation() && !args.quiet {
        optimizer = optimizer.observer(
            ObserverMode::Always,
            EvaluationLines::new(task.space().clone(), task.loss_name(), plan.config.objectives.clone()),
        );
    }
    if let Some(dir) = &args.log_dir {
        optimizer = optimizer.observer(ObserverMode::Every(args.log_interval), RankLog::new(dir));
    }
    Ok((plan, optimizer))
}

pub(crate) fn run(args: &RunArgs, cnn: Option<CnnTaskMaker>) -> anyhow::Result<ExitCode> {
    if let Some(n) = args.layout.local_ranks {
        // In-process ranks in one process of a launcher's several (srun -n 4 ... --local-ranks 8).
        if let Some(why) = propulate::launcher::copy_outside_the_mpi_world(|k| std::env::var(k).ok(), 1) {
            anyhow::bail!(why);
        }
        let files = SetupFiles::read(args)?;
        let (plan, optimizer) = prepare(args, cnn, &files, n, 0)?;
        let loss = objective_values(plan.task.loss(), plan.config.objectives.clone());
        let result = optimizer.run_local(n, loss)?;
        finish(args, &plan, n, &result, true)?;
        return Ok(exit_status(&result));
    }
    on_mpi_world(|world| run_on(args, cnn, world))
}

/// One rank's share of an MPI job. Rank 0 reads the files the flags name and hands them to every
/// rank; every rank prepares (the CNN reads its data) and the ranks agree on the outcome before any
/// other collective, so that a rank that could not prepare does not leave the others waiting;
/// configuration errors found later by the driver are agreed on by it. Rank 0 reports, and all
/// exit together.
fn run_on(args: &RunArgs, cnn: Option<CnnTaskMaker>, world: &mut dyn Communicator) -> anyhow::Result<ExitCode> {
    if let Some(why) = propulate::launcher::copy_outside_the_mpi_world(|k| std::env::var(k).ok(), world.size()) {
        anyhow::bail!(why);
    }
    let files = SetupFiles::read_once(args, world);
    let prepared = files.and_then(|files| prepare(args, cnn, &files, world.size(), world.rank()));
    if let Some(message) = set_up_failure(world, prepared.as_ref().err())? {
        return fail_together(world, &message);
    }
    let outcome = prepared.and_then(|(plan, optimizer)| {
        let loss = objective_values(plan.task.loss(), plan.config.objectives.clone());
        let result = optimizer.run(world, loss)?;
        Ok((plan, result))
    });
    let (plan, result) = match outcome {
        Ok(done) => done,
        Err(e) => return fail_together(world, &e.to_string()),
    };
    if world.rank() == 0 {
        finish(args, &plan, world.size(), &result, true)?;
    }
    if result.all_failed() {
        // A rank that ends with an error ends the job: not before rank 0 has written and said it.
        world.barrier()?;
    }
    Ok(exit_status(&result))
}

/// The status of a run that ended with every evaluation failed, on every rank: its outputs are
/// written (they hold the failures' reasons), but there is no result to use, which a script that
/// checks the status must learn. Not 1, which a rank killed or an MPI abort gives as well: a
/// resubmitting job script retries those, and a run that ended would be resubmitted for nothing.
pub const ALL_FAILED_STATUS: u8 = 3;

fn exit_status(result: &RunResult) -> ExitCode {
    if result.all_failed() { ExitCode::from(ALL_FAILED_STATUS) } else { ExitCode::SUCCESS }
}

/// The ranks agree on their set-up before any other collective: the first failing rank's message
/// (prefixed with its rank when the others did not fail alike), the same on every rank, or none.
pub(crate) fn set_up_failure(
    world: &mut dyn Communicator,
    mine: Option<&propulate::Error>,
) -> propulate::Result<Option<String>> {
    let mine = mine.map(|e| e.to_string()).unwrap_or_default();
    let all = world.all_gather(mine.into_bytes())?;
    Ok(all.iter().position(|m| !m.is_empty()).map(|rank| {
        let text = String::from_utf8_lossy(&all[rank]);
        let everywhere = all.iter().all(|m| *m == all[rank]);
        if everywhere { text.to_string() } else { format!("rank {rank}: {text}") }
    }))
}

/// An error every rank has: rank 0 reports it, and all exit together with status 2 (a rank leaving
/// early makes mpirun kill rank 0 before it has spoken).
pub(super) fn fail_together(world: &mut dyn Communicator, message: &str) -> anyhow::Result<ExitCode> {
    if world.rank() == 0 {
        crate::tell(&format!("error: {message}"));
    }
    world.barrier()?;
    Ok(ExitCode::from(2))
}

/// Rank 0: the summary table, and the result files with `--out`. A run whose every evaluation
/// failed says so, as an error where it ends the program with one (`as_error`: the command line's
/// status 3; a Python run returns its result instead).
pub(crate) fn finish(
    args: &RunArgs,
    plan: &Plan,
    ranks: usize,
    result: &RunResult,
    as_error: bool,
) -> anyhow::Result<()> {
    let task = plan.task.as_ref();
    say(&summary_table(task.space(), result));
    if let Some(dir) = &args.results.out {
        let mut extra = task.checkpoint_facts();
        let workers = ranks / plan.config.ranks_per_worker.max(1);
        let config = RunConfig { propagator: result.propagator.clone(), ..plan.config.clone() };
        extra.extend(run_settings(&config, workers));
        extra.insert("ranks".into(), json!(ranks));
        // The files are replaced together or not at all; the evaluations are in the checkpoint.
        let again = match &plan.config.checkpoint {
            Some(ck) => format!(
                " (the earlier files are left as they were; the checkpoint holds every evaluation: `propulate-rs \
                 report {} --out {}` writes them once there is room)",
                ck.dir.display(),
                dir.display()
            ),
            None => String::new(),
        };
        write_outputs(dir, task.space(), result, extra).with_context(|| format!("writing {}{again}", dir.display()))?;
        say(&wrote_line(dir, result));
    }
    if result.all_failed() {
        let error = if as_error { "error: " } else { "" };
        crate::tell(&format!("{error}all {} evaluations failed; there is no best configuration", result.evaluations));
    }
    if result.resumed > 0 && result.evaluations == result.resumed {
        // Population-based training ended by its members' budget; else the generations, given or
        // (without the flag) the checkpoint's own.
        let members = match &result.propagator {
            Some(propulate::propagator::PropagatorSpec::Pbt(pbt)) => pbt.steps,
            _ => None,
        };
        let more = match (members, args.generations) {
            (Some(steps), _) => format!(" (its members trained their {steps} steps, --pbt-steps)"),
            (None, Some(generations)) if generations < propulate::config::MAX_GENERATIONS => {
                format!(" (--generations {generations}; a larger value goes on)")
            }
            (None, None) => " (its own generations; --generations with a larger value goes on)".to_string(),
            _ => String::new(),
        };
        crate::tell(&format!("nothing was evaluated: the checkpoint's run had already ended{more}"));
    }
    Ok(())
}
