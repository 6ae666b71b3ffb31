//! `propulate-rs report DIR`: summarize a checkpoint, finished or not, and write the result files;
//! with `--watch`, keep report.html up to date beside a running job.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Map, Value as Json, json};

use propulate::files::OutputFile;
use propulate::journal::{Replay, read_checkpoint};
use propulate::output::{summary_table, write_outputs, write_report};
use propulate::report_html::{report_html, run_settings};

use super::args::ReportArgs;
use super::say;

/// The line that tells where a run's result files are (a run's end and `report` print it).
pub(crate) fn wrote_line(dir: &Path, result: &propulate::RunResult) -> String {
    let mut tables: Vec<&str> = OutputFile::written(result.objectives.len())
        .filter(|f| *f != OutputFile::Report)
        .map(OutputFile::name)
        .collect();
    let first = tables.remove(0);
    let rest: String = tables.iter().map(|n| format!(", {n}")).collect();
    format!("wrote {0}/{first}{rest}; the report: {0}/{1}\n", dir.display(), OutputFile::Report.name())
}

/// The run's settings as its checkpoint recorded them, for best.json and the report.
fn recorded_settings(replay: &Replay) -> Map<String, Json> {
    let mut settings = replay.manifest.extra.clone();
    // The manifest holds the first start's generations; a resume may have asked for more, and
    // the journals say how many each worker evaluated (with a shared budget a quick worker takes
    // more than its share: there, only the manifest's).
    let mut config = replay.manifest.config.clone();
    if !config.shared_budget {
        let evaluated = replay.workers.iter().map(|w| w.evaluated.len() as u64).max().unwrap_or(0);
        config.generations = config.generations.max(evaluated);
    }
    settings.extend(run_settings(&config, replay.layout.workers()));
    settings.insert("ranks".into(), json!(replay.layout.world_size()));
    settings
}

pub(crate) fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    if args.results.top_n == 0 {
        bail!("--top-n must be at least 1 (as for a run)");
    }
    let out = args.results.out.clone().unwrap_or_else(|| args.dir.clone());
    let mut places = vec![("--out", out.as_path(), Some(args.dir.as_path()))];
    if let Some(file) = &args.optuna_journal {
        places.push(("--optuna-journal", file.as_path(), None));
    }
    crate::inside_checkpoint::refuse_inside(&args.dir, &places).map_err(anyhow::Error::msg)?;
    if let Some(seconds) = args.watch {
        return watch(&args.dir, &out, seconds, args.results.top_n);
    }
    let replay = propulate::report::load(&args.dir)?;
    for w in &replay.warnings {
        crate::tell(&format!("warning: {w}"));
    }
    let result = propulate::report::result_of(&replay, args.results.top_n);
    let space = &replay.manifest.space;
    say(&propulate::report::progress_table(&replay));
    say(&summary_table(space, &result));
    write_outputs(&out, space, &result, recorded_settings(&replay))?;
    say(&wrote_line(&out, &result));
    if let Some(file) = &args.optuna_journal {
        // The study is named after the checkpoint directory, as a run is known.
        let name = args.dir.canonicalize().unwrap_or_else(|_| args.dir.clone());
        let name = name.file_name().map_or("propulate-rs".into(), |n| n.to_string_lossy().into_owned());
        propulate::optuna_journal::write_optuna_journal(file, &name, space, &result.objectives, &result.trials)?;
        say(&format!("wrote {} (an Optuna journal: optuna-dashboard {0})\n", file.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// Shortest `--watch` interval: reading a large checkpoint more often would compete with the run.
const MIN_WATCH_S: f64 = 0.1;

/// How long `--watch` tries again on a checkpoint it cannot read before it ends with the error.
const WATCH_GIVES_UP: Duration = Duration::from_secs(10);

/// Rewrite `out/report.html` whenever the checkpoint in `dir` has grown, every `seconds`, until
/// the run it saw running has ended (every worker ended cleanly). Started on a run that has
/// already ended, it writes the report and waits for a resume: a resume is often a queued job.
/// Reads the checkpoint as `report` does (no locks, nothing written there but report.html when
/// `out` is `dir`), so the run never waits for it; a record being written as it reads is a torn
/// last line, which the reader leaves for the next time.
fn watch(dir: &Path, out: &Path, seconds: f64, top_n: usize) -> anyhow::Result<ExitCode> {
    if seconds.is_nan() || seconds < MIN_WATCH_S || seconds.is_infinite() {
        bail!("--watch takes seconds, at least {MIN_WATCH_S}; got {seconds}");
    }
    std::fs::create_dir_all(out).with_context(|| format!("--out {}", out.display()))?;
    let file: PathBuf = out.join(OutputFile::Report.name());
    say(&format!(
        "watching {} every {seconds} s; the report: {} (ends with the run, or Ctrl-C)\n",
        dir.display(),
        file.display()
    ));
    let mut shown: Option<(usize, bool)> = None;
    let mut seen_running = false;
    let mut said: HashSet<String> = HashSet::new();
    let mut tell_once = |message: String| {
        if said.insert(message.clone()) {
            crate::tell(&message);
        }
    };
    // An error that outlasts this is the checkpoint's, not a write caught half-way (the manifest
    // is replaced whole, a journal's torn last line is left for the next look).
    let mut failing_since: Option<Instant> = None;
    loop {
        let read = read_checkpoint(dir);
        failing_since = if read.is_err() { failing_since.or(Some(Instant::now())) } else { None };
        match read {
            Ok(None) => tell_once(format!("no checkpoint in {} yet; waiting for one", dir.display())),
            Err(e) if failing_since.is_some_and(|t| t.elapsed() >= WATCH_GIVES_UP) => {
                bail!("{e} (for {} s; --watch gives up)", WATCH_GIVES_UP.as_secs())
            }
            Err(e) => tell_once(format!("cannot read the checkpoint yet ({e}); trying again")),
            Ok(Some(replay)) => {
                let done = replay.workers.iter().all(|w| w.done);
                let evaluated = replay.workers.iter().map(|w| w.evaluated.len()).sum();
                if shown != Some((evaluated, done)) {
                    let result = propulate::report::result_of(&replay, top_n);
                    let page = report_html(&replay.manifest.space, &result, &recorded_settings(&replay));
                    write_report(out, &page)?;
                    let best = result.best_value().unwrap_or_else(|| "loss none".into());
                    say(&format!("report: {evaluated} evaluations, best {best}\n"));
                    shown = Some((evaluated, done));
                }
                seen_running |= !done;
                if done && seen_running {
                    // Only now: while the run writes, a torn last record is a write in progress.
                    for w in &replay.warnings {
                        tell_once(format!("warning: {w}"));
                    }
                    say(&format!("the run has ended; the report: {}\n", file.display()));
                    return Ok(ExitCode::SUCCESS);
                }
                if done {
                    tell_once("the run in this checkpoint has ended; waiting for a resume (Ctrl-C to stop)".into());
                }
            }
        }
        std::thread::sleep(Duration::from_secs_f64(seconds));
    }
}
