//! The command task (`--space FILE -- COMMAND`): a user's own training program, every candidate
//! run by the ranks of one worker as one distributed job (`propulate::trial`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use propulate::early_stop::EarlyStopper;
use propulate::files::trials::{DEFAULT_TRIALS_DIR, TRIALS_DIR};
use propulate::trial::{CommandTrial, TrialSettings};
use propulate::{Error, Result, SearchSpace};

use super::args::RunArgs;
use super::early_stop_choice::early_stopper;
use super::task::{Loss, Task};

pub(crate) struct CommandTask {
    trial: Arc<CommandTrial>,
    early_stop: String,
}

impl CommandTask {
    /// The space from `space_text` (read from `space_file`), the command, the time limit and the
    /// GPU request, checked.
    pub fn new(args: &RunArgs, space_file: &std::path::Path, space_text: &str) -> Result<Self> {
        let bad = |what: String| Error::InvalidConfig(what);
        if args.trial.command.is_empty() {
            return Err(bad(format!(
                "--space {} needs the trial command after `--`, e.g. `-- python train.py`",
                space_file.display()
            )));
        }
        let space = SearchSpace::from_toml_read_from(space_text, space_file)?;
        early_stopper(&args.training.early_stop)?;
        let mut settings = TrialSettings::new(trials_dir(args));
        settings.gpus_per_rank = args.training.gpus_per_rank as usize;
        if let Some(text) = &args.objectives {
            settings.objectives = propulate::Objective::parse_list(text)?.into_iter().map(|o| o.name).collect();
        }
        settings.preload = args.trial.preload.clone();
        if let Some(seconds) = args.trial.trial_timeout {
            settings.timeout = Some(trial_timeout(seconds).map_err(bad)?);
        }
        let trial = CommandTrial::new(args.trial.command.clone(), space, settings).map_err(|e| bad(e.to_string()))?;
        Ok(CommandTask { trial: Arc::new(trial), early_stop: args.training.early_stop.clone() })
    }
}

/// The longest `--trial-timeout` taken (about 31 years): beyond it a deadline stops being a time.
const LONGEST_TIMEOUT_S: f64 = 1e9;

/// `--trial-timeout SECONDS` as a duration: positive, and not absurdly long (no limit is the
/// flag left out, which a huge value should not pretend to be).
fn trial_timeout(seconds: f64) -> Result<Duration, String> {
    if seconds > LONGEST_TIMEOUT_S && seconds.is_finite() || seconds == f64::INFINITY {
        return Err(format!(
            "--trial-timeout {seconds} is more than {LONGEST_TIMEOUT_S:e} s; leave the flag out for no time limit"
        ));
    }
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|t| !t.is_zero())
        .ok_or_else(|| format!("--trial-timeout must be a positive number of seconds, got {seconds}"))
}

/// `--trials-dir`, or beside the run's other files: in its checkpoint, else in `--out`.
fn trials_dir(args: &RunArgs) -> PathBuf {
    if let Some(dir) = &args.trial.trials_dir {
        return dir.clone();
    }
    match (args.checkpoint_dir("command"), &args.results.out) {
        (Some(checkpoint), _) => checkpoint.join(TRIALS_DIR),
        (None, Some(out)) => out.join(TRIALS_DIR),
        (None, None) => PathBuf::from(DEFAULT_TRIALS_DIR),
    }
}

impl Task for CommandTask {
    fn name(&self) -> String {
        "command".into()
    }

    fn space(&self) -> &SearchSpace {
        self.trial.space()
    }

    fn loss(&self) -> Loss {
        let trial = self.trial.clone();
        Arc::new(move |p, ctx| trial.evaluate(p, ctx))
    }

    fn checkpoint_facts(&self) -> serde_json::Map<String, serde_json::Value> {
        // A resume runs the same program: another command would mix incomparable losses.
        [("task".to_string(), json!("command")), ("command".to_string(), json!(self.trial.command()))]
            .into_iter()
            .collect()
    }

    fn default_generations(&self) -> u64 {
        10
    }

    fn default_propagator(&self) -> &'static str {
        // Trainings are expensive and few per worker, as the CNN task's: a model of all of them (the
        // GP) unless the space is mostly categorical or the budget long (`auto`'s rule).
        propulate::propagator::AUTO
    }

    fn early_stopper(&self) -> Option<Box<dyn EarlyStopper>> {
        early_stopper(&self.early_stop).expect("checked in CommandTask::new")
    }

    fn notices(&self) -> Vec<String> {
        self.trial.notices()
    }
    fn prints_each_evaluation(&self) -> bool {
        true
    }
}
