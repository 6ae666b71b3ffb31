//! The command line's run for another front (the Python package, `crates/python`): its options are
//! the run flags of `propulate-rs`, given as argument words, its task is the front's own (a loss of
//! the front's language) and its world a communicator the front made. So a front has every run
//! flag, its defaults and its checks, the same checkpoint and the same result files, without a list
//! of its own to keep in step.

use clap::{ArgAction, Args, Command, Parser};

use propulate::transport::Communicator;
use propulate::{Error, RunResult};

use super::args::{Cli, RunArgs};
use super::objectives::objective_values;
use super::plan::SetupFiles;
use super::run::{finish, prepare_task, set_up_failure};
use super::task::Task;

/// The run flags a front's task has no use for: those that choose another task (a function, a
/// command trial, the CNN's data and training), and in-process ranks (a front's loss runs on the
/// ranks its launcher started).
const NOT_FOR_FRONTS: &[&str] = &[
    "function",
    "space",
    "trial-timeout",
    "trials-dir",
    "preload",
    "local-ranks",
    "eval-delay-ms",
    "eval-delay-spread",
    "gpus-per-rank",
    "data",
    "train-images",
    "valid-images",
    "epochs",
    "patience",
    "batch",
    "lr-scale",
    "backend",
    "device",
];

/// A run flag as a front's option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontOption {
    /// The flag without its dashes, `-` as `_` (`migration_probability`).
    pub name: String,
    /// The flag itself (`--migration-probability`).
    pub flag: String,
    /// A switch, given or not (`--pollination`), rather than a flag with a value.
    pub switch: bool,
    /// The flag's help, its first line.
    pub help: String,
}

/// Every option a front's run takes: the run flags of `propulate-rs` but those of [`NOT_FOR_FRONTS`].
pub fn options() -> Vec<FrontOption> {
    let command = RunArgs::augment_args(Command::new("propulate-rs"));
    command
        .get_arguments()
        .filter_map(|arg| {
            let long = arg.get_long()?;
            if NOT_FOR_FRONTS.contains(&long) || long == "help" || long == "version" {
                return None;
            }
            Some(FrontOption {
                name: long.replace('-', "_"),
                flag: format!("--{long}"),
                switch: matches!(arg.get_action(), ArgAction::SetTrue),
                help: arg.get_help().map(|h| crate::flag_reference::for_terminal(&h.to_string())).unwrap_or_default(),
            })
        })
        .collect()
}

/// Why a front's run did not give a result.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// The options or the task are wrong (every rank has the same message).
    #[error("{0}")]
    Setup(String),
    /// The run itself ended in an error (an interruption among them).
    #[error(transparent)]
    Run(#[from] Error),
    /// The run ended, but its result files could not be written.
    #[error("{0}")]
    Output(String),
}

/// The run flags in `words` (`["--generations", "10", "--pollination"]`), as the command line
/// parses them; a flag of [`NOT_FOR_FRONTS`] is refused by name.
pub fn parse(words: &[String]) -> Result<RunArgs, FrontError> {
    if let Some(word) = words.iter().find(|w| {
        w.strip_prefix("--").map(|f| f.split('=').next().unwrap_or(f)).is_some_and(|f| NOT_FOR_FRONTS.contains(&f))
    }) {
        return Err(FrontError::Setup(format!(
            "{word} chooses another task of the command line; a front's run has its own"
        )));
    }
    let argv = std::iter::once("propulate-rs".to_string()).chain(words.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string();
        FrontError::Setup(first)
    })?;
    if cli.command.is_some() || !cli.run.trial.command.is_empty() {
        return Err(FrontError::Setup(format!("not a run's flags: {}", words.join(" "))));
    }
    Ok(cli.run)
}

/// Run `args` with the task `make_task` builds on this rank of `world` (collective: every rank
/// calls it). As `propulate-rs` does: the ranks agree on the set-up before any other collective,
/// every evaluation is gathered on world rank 0, which prints the summary table and, with `--out`,
/// writes the result files. Every rank gets the result; rank 0's holds the trials.
pub fn run(
    args: &RunArgs,
    make_task: impl FnOnce(&RunArgs) -> propulate::Result<Box<dyn Task>>,
    world: &mut dyn Communicator,
) -> Result<RunResult, FrontError> {
    let files = SetupFiles::read_once(args, world);
    let prepared = files.and_then(|files| {
        let task = make_task(args)?;
        prepare_task(args, task, &files, world.size(), world.rank())
    });
    if let Some(message) = set_up_failure(world, prepared.as_ref().err())? {
        return Err(FrontError::Setup(message));
    }
    let (plan, optimizer) = prepared?;
    let loss = objective_values(plan.task.loss(), plan.config.objectives.clone());
    let result = optimizer.gather_trials(true).run(world, loss)?;
    if world.rank() == 0 {
        finish(args, &plan, world.size(), &result, false).map_err(|e| FrontError::Output(crate::full_message(&e)))?;
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_front_has_the_run_flags_but_those_of_other_tasks() {
        let names: Vec<String> = options().into_iter().map(|o| o.name).collect();
        for name in ["generations", "islands", "ranks_per_worker", "propagator", "tpe_gamma", "early_stop", "out"] {
            assert!(names.contains(&name.to_string()), "{name} missing from {names:?}");
        }
        for name in ["function", "space", "data", "local_ranks", "help", "command"] {
            assert!(!names.contains(&name.to_string()), "{name} offered");
        }
        let pollination = options().into_iter().find(|o| o.name == "pollination").unwrap();
        assert!(pollination.switch && pollination.flag == "--pollination");
        assert!(!options().into_iter().find(|o| o.name == "seed").unwrap().switch);
    }

    #[test]
    fn words_parse_as_the_command_line_and_other_tasks_are_refused() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let args = parse(&words(&["--generations", "7", "--pollination", "--tpe-gamma", "0.2"])).unwrap();
        assert_eq!(args.generations, Some(7));
        assert!(args.pollination);
        let e = parse(&words(&["--function", "sphere"])).unwrap_err().to_string();
        assert!(e.contains("--function"), "{e}");
        let e = parse(&words(&["--generations", "many"])).unwrap_err().to_string();
        assert!(e.contains("many"), "{e}");
    }
}
