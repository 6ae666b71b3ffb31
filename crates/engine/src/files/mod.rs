//! Every file name a run reads or writes, in one place: the checkpoint's own files, the result
//! files, the per-rank logs, the command trials' directories and the training states. Each crate
//! that names a file takes the name from here; [`classify`] tells what a path inside a checkpoint
//! directory is, so that a resume tolerates exactly what runs write there, and a test walks real
//! runs' directories and fails on a file this registry does not name. [`markdown_table`] is the
//! table in docs/guide/checkpoints.md (a unit test keeps the two equal).

pub mod checkpoint;
pub mod logs;
pub mod outputs;
pub mod place;
pub mod states;
pub mod trials;

use std::path::{Component, Path};

pub use outputs::OutputFile;
use trials::TrialFile;

/// The suffix of the temporary file a file is written to before it is renamed into place.
pub const TEMPORARY_SUFFIX: &str = ".tmp";

/// Whether `s` is a number of at least `n` digits (names pad numbers to `n`).
fn digits_at_least(s: &str, n: usize) -> bool {
    s.len() >= n && s.bytes().all(|b| b.is_ascii_digit())
}

/// `name` without `suffix`, and whether it had it (a temporary or partial file's base name).
fn without_suffix<'a>(name: &'a str, suffix: &str) -> (&'a str, bool) {
    match name.strip_suffix(suffix) {
        Some(base) => (base, true),
        None => (name, false),
    }
}

/// What a file or directory inside a checkpoint directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// [`checkpoint::MANIFEST`].
    Manifest,
    /// [`checkpoint::MANIFEST_TEMPORARY`].
    ManifestTemporary,
    /// [`checkpoint::segment_name`].
    JournalSegment,
    /// [`checkpoint::snapshot_name`].
    Snapshot,
    /// [`checkpoint::snapshot_temporary_name`].
    SnapshotTemporary,
    /// [`checkpoint::lock_name`].
    Lock,
    /// [`checkpoint::owner_name`].
    Owner,
    /// A result file.
    Output(OutputFile),
    /// A result file's temporary file.
    OutputTemporary(OutputFile),
    /// A directory of per-rank logs (`--log-dir`, named by the user).
    LogDir,
    /// [`logs::rank_log_name`] in a log directory.
    RankLog,
    /// [`trials::TRIALS_DIR`].
    TrialsDir,
    /// [`trials::trial_dir_name`].
    TrialDir,
    /// A file of a trial's directory.
    Trial(TrialFile),
    /// What the program wrote into its trial's directory itself (`PROPULATE_TRIAL_DIR`).
    TrialProgramFile,
    /// [`trials::preload_log_name`].
    PreloadLog,
    /// [`states::STATES_DIR`].
    StatesDir,
    /// [`states::state_dir_name`].
    StateDir,
    /// [`states::partial_state_dir_name`].
    PartialStateDir,
    /// What the program saved in a state directory (the CNN: [`states::MODEL_FILE`],
    /// [`states::OPTIMIZER_FILE`]).
    StateContent,
}

/// What `relative`, a path inside a checkpoint directory, is; `None` for what no run writes there.
/// `is_dir` tells a directory from a file. Only the names are looked at, never the disk.
pub fn classify(relative: &Path, is_dir: bool) -> Option<Kind> {
    let names: Vec<&str> = relative
        .components()
        .map(|c| match c {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    match names.as_slice() {
        [name] if is_dir => Some(match *name {
            trials::TRIALS_DIR => Kind::TrialsDir,
            states::STATES_DIR => Kind::StatesDir,
            _ => Kind::LogDir,
        }),
        [name] => top_level_file(name),
        [trials::TRIALS_DIR, name] if is_dir => trials::parse_trial_dir_name(name).map(|_| Kind::TrialDir),
        [trials::TRIALS_DIR, name] => trials::is_preload_log_name(name).then_some(Kind::PreloadLog),
        [trials::TRIALS_DIR, dir, name] if !is_dir && trials::parse_trial_dir_name(dir).is_some() => {
            Some(trials::parse_trial_file_name(name).map_or(Kind::TrialProgramFile, Kind::Trial))
        }
        [trials::TRIALS_DIR, dir, _, ..] if trials::parse_trial_dir_name(dir).is_some() => Some(Kind::TrialProgramFile),
        [states::STATES_DIR, name] if is_dir => states::parse_state_dir_name(name)
            .map(|(_, partial)| if partial { Kind::PartialStateDir } else { Kind::StateDir }),
        [states::STATES_DIR, dir, _, ..] if states::parse_state_dir_name(dir).is_some() => Some(Kind::StateContent),
        [dir, name] if !is_dir && *dir != trials::TRIALS_DIR && *dir != states::STATES_DIR => {
            logs::parse_rank_log_name(name).map(|_| Kind::RankLog)
        }
        _ => None,
    }
}

/// A file directly in the checkpoint directory.
fn top_level_file(name: &str) -> Option<Kind> {
    if name == checkpoint::MANIFEST {
        return Some(Kind::Manifest);
    }
    if name == checkpoint::MANIFEST_TEMPORARY {
        return Some(Kind::ManifestTemporary);
    }
    if checkpoint::parse_segment_name(name).is_some() {
        return Some(Kind::JournalSegment);
    }
    if let Some((_, temporary)) = checkpoint::parse_snapshot_name(name) {
        return Some(if temporary { Kind::SnapshotTemporary } else { Kind::Snapshot });
    }
    if let Some(w) = checkpoint::parse_lock_name(name) {
        return Some(if name == checkpoint::lock_name(w) { Kind::Lock } else { Kind::Owner });
    }
    let (base, temporary) = without_suffix(name, TEMPORARY_SUFFIX);
    let file = OutputFile::ALL.into_iter().find(|f| f.name() == base)?;
    Some(if temporary { Kind::OutputTemporary(file) } else { Kind::Output(file) })
}

/// One row of the docs' table: a path as a pattern (capitals stand for numbers and names), an
/// example of it, and what it is.
struct Row {
    pattern: String,
    // The example's path and kind are read by the tests, which classify every example.
    #[cfg_attr(not(test), allow(dead_code))]
    example: String,
    #[cfg_attr(not(test), allow(dead_code))]
    is_dir: bool,
    meaning: String,
}

/// Every kind of file, in the order the docs list them.
fn rows() -> Vec<Row> {
    let row = |pattern: &str, example: String, is_dir: bool, meaning: &str| Row {
        pattern: pattern.to_string(),
        example,
        is_dir,
        meaning: meaning.to_string(),
    };
    let id = propulate_core::individual::IndividualId { island: 1, worker: 3, generation: 7 };
    let trial = trials::trial_dir_name(id);
    let (stdout, stderr) = trials::output_names(0);
    let mut rows = vec![
        row(
            checkpoint::MANIFEST,
            checkpoint::MANIFEST.into(),
            false,
            "the run: format and version, layout, search space, settings, the propagator",
        ),
        row(
            checkpoint::MANIFEST_TEMPORARY,
            checkpoint::MANIFEST_TEMPORARY.into(),
            false,
            "the manifest being written; renamed over it",
        ),
        row(
            "worker-WWWWW.SSSS.jsonl",
            checkpoint::segment_name(3, 0),
            false,
            "worker W's journal, segment S: every breeding, evaluation and migration, appended, never rewritten",
        ),
        row(
            "worker-WWWWW.snapshot",
            checkpoint::snapshot_name(3),
            false,
            "what a resume read of worker W's journal, binary (a cache: deleting it loses nothing)",
        ),
        row("worker-WWWWW.snapshot.tmp", checkpoint::snapshot_temporary_name(3), false, "a snapshot being written"),
        row(
            "worker-WWWWW.lock",
            checkpoint::lock_name(3),
            false,
            "held (`flock`) by the rank writing worker W's journal",
        ),
        row(
            "worker-WWWWW.owner",
            checkpoint::owner_name(3),
            false,
            "the journal's owner and heartbeat where `flock` is refused (`PROPULATE_JOURNAL_LOCK=file`)",
        ),
    ];
    for f in OutputFile::ALL {
        rows.push(row(
            f.name(),
            f.name().into(),
            false,
            &format!("{}; in `--out`, or here by `propulate-rs report`", f.meaning()),
        ));
    }
    let temporary = format!("NAME{TEMPORARY_SUFFIX}");
    rows.push(row(
        &temporary,
        format!("{}{TEMPORARY_SUFFIX}", OutputFile::Best.name()),
        false,
        "a result file being written; renamed over it",
    ));
    rows.extend([
        row(
            "LOGDIR/",
            "logs".into(),
            true,
            "`--log-dir` (any name; inside a checkpoint it may hold nothing but rank logs)",
        ),
        row(
            "LOGDIR/rank-RRRRR.log",
            format!("logs/{}", logs::rank_log_name(0)),
            false,
            "rank R's log, appended to on resume",
        ),
        row(
            "trials/",
            trials::TRIALS_DIR.into(),
            true,
            "command trials' directories (`--trials-dir`; without a checkpoint in `--out`, else `propulate-trials`)",
        ),
        row(
            "trials/islandI-workerW-genG/",
            format!("{}/{trial}", trials::TRIALS_DIR),
            true,
            "one evaluation's trial (`PROPULATE_TRIAL_DIR`)",
        ),
        row(
            "trials/islandI-workerW-genG/rankR.stdout",
            format!("{}/{trial}/{stdout}", trials::TRIALS_DIR),
            false,
            "what worker rank R's process printed",
        ),
        row(
            "trials/islandI-workerW-genG/rankR.stderr",
            format!("{}/{trial}/{stderr}", trials::TRIALS_DIR),
            false,
            "its errors; their tail is quoted when the trial fails",
        ),
        row(
            "trials/islandI-workerW-genG/rankR.stdout.fifo",
            format!("{}/{trial}/{}", trials::TRIALS_DIR, trials::stdout_pipe_name(0)),
            false,
            "the pipe of a process forked by a preloaded Python (`--preload`)",
        ),
        row(
            "trials/islandI-workerW-genG/result.json",
            format!("{}/{trial}/{}", trials::TRIALS_DIR, trials::RESULT_FILE),
            false,
            "the result file the program writes (`PROPULATE_RESULT`)",
        ),
        row(
            "trials/islandI-workerW-genG/NAME",
            format!("{}/{trial}/seen.txt", trials::TRIALS_DIR),
            false,
            "what the program wrote there itself",
        ),
        row(
            "trials/preload-HOST-PID.log",
            format!("{}/{}", trials::TRIALS_DIR, trials::preload_log_name("node1", 4242)),
            false,
            "a preloaded Python's own log",
        ),
        row("states/", states::STATES_DIR.into(), true, "population-based training's states"),
        row(
            "states/I-W-G/",
            format!("{}/{}", states::STATES_DIR, states::state_dir_name(id)),
            true,
            "the state evaluation (I, W, G) saved, complete",
        ),
        row(
            "states/I-W-G.partial/",
            format!("{}/{}", states::STATES_DIR, states::partial_state_dir_name(id)),
            true,
            "a state being saved; renamed once the evaluation succeeded",
        ),
        row(
            "states/I-W-G/NAME",
            format!("{}/{}/{}", states::STATES_DIR, states::state_dir_name(id), states::MODEL_FILE),
            false,
            &format!("what the program saved (the CNN: `{}`, `{}`)", states::MODEL_FILE, states::OPTIMIZER_FILE),
        ),
    ]);
    rows
}

/// The table of every file a run writes into a checkpoint, as docs/guide/checkpoints.md shows it.
pub fn markdown_table() -> String {
    let mut table = String::from("| path | what it is |\n|---|---|\n");
    for r in rows() {
        table.push_str(&format!("| `{}` | {} |\n", r.pattern, r.meaning));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn every_row_s_example_is_classified_and_the_kinds_differ() {
        let mut seen = Vec::new();
        for r in rows() {
            let kind = classify(Path::new(&r.example), r.is_dir);
            assert!(kind.is_some(), "{} ({}) is not classified", r.example, r.pattern);
            seen.push(kind);
        }
        let kinds = seen.len();
        seen.dedup();
        assert_eq!(seen.len(), kinds, "two rows of one kind: {seen:?}");
    }

    #[test]
    fn what_no_run_writes_is_not_classified() {
        for (path, is_dir) in [
            ("data.csv", false),
            ("notes.txt", false),
            ("best.json.tmp.tmp", false),
            ("trials/island0-worker0-gen/model.pt", false),
            ("trials/notes.txt", false),
            ("trials/other", true),
            ("states/1-2", true),
            ("states/notes.txt", false),
            ("logs/notes.txt", false),
            ("logs/sub/rank-00000.log", false),
            ("../manifest.json", false),
        ] {
            assert_eq!(classify(&PathBuf::from(path), is_dir), None, "{path}");
        }
    }

    #[test]
    fn the_checkpoints_guide_shows_the_table() {
        let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide/checkpoints.md");
        let text = std::fs::read_to_string(&guide).unwrap();
        let (begin, end) = ("<!-- files: generated from crates/engine/src/files -->\n", "<!-- files: end -->");
        let start = text.find(begin).expect("the guide has the files table") + begin.len();
        let stop = start + text[start..].find(end).expect("the table ends");
        let table = markdown_table();
        assert!(
            text[start..stop] == table,
            "docs/guide/checkpoints.md's table of files differs from the registry; put this between the markers:\n{table}"
        );
    }
}
