//! `propulate-rs report DIR`: summarize a checkpoint, finished or not, and write the result files.

use std::process::ExitCode;

use propulate::output::{summary_table, write_outputs};

use super::args::ReportArgs;
use super::say;

pub(crate) fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let replay = propulate::report::load(&args.dir)?;
    for w in &replay.warnings {
        eprintln!("propulate-rs: warning: {w}");
    }
    let result = propulate::report::result_of(&replay, args.top_n);
    let space = &replay.manifest.space;
    say(&propulate::report::progress_table(&replay));
    say(&summary_table(space, &result));
    let out = args.out.clone().unwrap_or_else(|| args.dir.clone());
    write_outputs(&out, space, &result, replay.manifest.extra.clone())?;
    say(&format!("wrote {}/best.json, trials.csv, trials.jsonl, progress.svg\n", out.display()));
    if let Some(file) = &args.optuna_journal {
        // The study is named after the checkpoint directory, as a run is known.
        let name = args.dir.canonicalize().unwrap_or_else(|_| args.dir.clone());
        let name = name.file_name().map_or("propulate-rs".into(), |n| n.to_string_lossy().into_owned());
        propulate::optuna_journal::write_optuna_journal(file, &name, space, &result.trials)?;
        say(&format!("wrote {} (an Optuna journal: optuna-dashboard {0})\n", file.display()));
    }
    Ok(ExitCode::SUCCESS)
}
