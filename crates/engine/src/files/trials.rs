//! The command trials' directories (the trial crate): one per evaluation under `trials/` in the
//! checkpoint (or `--out`, or `--trials-dir`), holding what each rank's process printed and the
//! result file the program writes.

use propulate_core::individual::IndividualId;

/// The directory of the trials' directories inside a checkpoint or `--out`.
pub const TRIALS_DIR: &str = "trials";

/// Where the trials' directories go in a run with neither a checkpoint nor `--out`.
pub const DEFAULT_TRIALS_DIR: &str = "propulate-trials";

/// The result file a trial's program writes (`PROPULATE_RESULT`).
pub const RESULT_FILE: &str = "result.json";

/// The directory of the trial `id`.
pub fn trial_dir_name(id: IndividualId) -> String {
    format!("island{}-worker{}-gen{}", id.island, id.worker, id.generation)
}

/// The trial whose directory `name` is.
pub fn parse_trial_dir_name(name: &str) -> Option<IndividualId> {
    let rest = name.strip_prefix("island")?;
    let (island, rest) = rest.split_once("-worker")?;
    let (worker, generation) = rest.split_once("-gen")?;
    Some(IndividualId {
        island: island.parse().ok()?,
        worker: worker.parse().ok()?,
        generation: generation.parse().ok()?,
    })
}

/// What a worker rank's process of a trial printed: (stdout, stderr).
pub fn output_names(rank: usize) -> (String, String) {
    (format!("rank{rank}.stdout"), format!("rank{rank}.stderr"))
}

/// The pipe a preloaded Python's forked process writes its stdout into (`--preload`).
pub fn stdout_pipe_name(rank: usize) -> String {
    format!("{}.fifo", output_names(rank).0)
}

/// Which file of a trial's directory `name` is.
pub fn parse_trial_file_name(name: &str) -> Option<TrialFile> {
    if name == RESULT_FILE {
        return Some(TrialFile::Result);
    }
    let rest = name.strip_prefix("rank")?;
    let (rank, suffix) = rest.split_once('.')?;
    super::digits_at_least(rank, 1).then_some(())?;
    match suffix {
        "stdout" => Some(TrialFile::Stdout),
        "stderr" => Some(TrialFile::Stderr),
        "stdout.fifo" => Some(TrialFile::StdoutPipe),
        _ => None,
    }
}

/// A file in a trial's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrialFile {
    /// [`RESULT_FILE`].
    Result,
    /// A rank's stdout.
    Stdout,
    /// A rank's stderr.
    Stderr,
    /// A rank's stdout pipe ([`stdout_pipe_name`]).
    StdoutPipe,
}

/// The log of a rank's preloaded Python (`--preload`), in the trials' directory.
pub fn preload_log_name(host: &str, pid: u32) -> String {
    format!("preload-{host}-{pid}.log")
}

/// Whether `name` is a preloaded Python's log.
pub fn is_preload_log_name(name: &str) -> bool {
    name.strip_prefix("preload-")
        .and_then(|r| r.strip_suffix(".log"))
        .is_some_and(|r| r.rsplit_once('-').is_some_and(|(host, pid)| !host.is_empty() && pid.parse::<u32>().is_ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_nothing_else_does() {
        let id = IndividualId { island: 0, worker: 12, generation: 3 };
        assert_eq!(trial_dir_name(id), "island0-worker12-gen3");
        assert_eq!(parse_trial_dir_name(&trial_dir_name(id)), Some(id));
        assert_eq!(parse_trial_dir_name("island0-worker1"), None);
        let (out, err) = output_names(2);
        assert_eq!(parse_trial_file_name(&out), Some(TrialFile::Stdout));
        assert_eq!(parse_trial_file_name(&err), Some(TrialFile::Stderr));
        assert_eq!(parse_trial_file_name(&stdout_pipe_name(2)), Some(TrialFile::StdoutPipe));
        assert_eq!(parse_trial_file_name(RESULT_FILE), Some(TrialFile::Result));
        for other in ["rank.stdout", "rankx.stdout", "rank0.log", "result.jsonl", "model.pt"] {
            assert_eq!(parse_trial_file_name(other), None, "{other}");
        }
        assert!(is_preload_log_name(&preload_log_name("node-7", 4242)));
        assert!(!is_preload_log_name("preload-4242.log") && !is_preload_log_name("preload-host-x.log"));
    }
}
