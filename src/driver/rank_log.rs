//! Per-rank log files: `rank-NNNNN.log` in the log directory, one per MPI rank, appended to across
//! resumes. A line says what this rank is, how its worker is doing every few generations, each failed
//! evaluation and the end. They are for finding out what one rank of a large job did (a slow node,
//! a loss that fails only there), so every line is flushed at once and survives a kill.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The log file of one rank, or nothing when logging is off.
pub(crate) struct RankLog {
    file: Option<(File, PathBuf)>,
    prefix: String,
}

impl RankLog {
    /// A log that writes nothing.
    pub fn off() -> Self {
        RankLog { file: None, prefix: String::new() }
    }

    /// Open (append to) `dir/rank-NNNNN.log`, creating `dir` if needed. `prefix` starts every line
    /// after the timestamp (the rank and its role).
    pub fn open(dir: &Path, rank: usize, prefix: String) -> Result<Self> {
        let path = dir.join(format!("rank-{rank:05}.log"));
        let open = std::fs::create_dir_all(dir)
            .and_then(|()| OpenOptions::new().create(true).append(true).open(&path))
            .map_err(|e| Error::RankLog(format!("{}: {e}", path.display())))?;
        Ok(RankLog { file: Some((open, path)), prefix })
    }

    /// True when lines are written (so callers can skip building them).
    pub fn is_on(&self) -> bool {
        self.file.is_some()
    }

    /// Write one line. A log that cannot be written is not worth ending a run for: the first failure
    /// is reported on stderr and the log is switched off.
    pub fn line(&mut self, message: impl FnOnce() -> String) {
        let Some((file, path)) = self.file.as_mut() else { return };
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        let text = format!("{now} {}: {}\n", self.prefix, message());
        if let Err(e) = file.write_all(text.as_bytes()) {
            eprintln!("propulate-rs: warning: {}: {e}; per-rank logging stops on this rank", path.display());
            self.file = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_appended_with_timestamp_and_prefix_across_opens() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("logs");
        for run in 0..2 {
            let mut log = RankLog::open(&dir, 3, "rank 3 (worker 1)".into()).unwrap();
            assert!(log.is_on());
            log.line(|| format!("run {run}"));
        }
        let text = std::fs::read_to_string(dir.join("rank-00003.log")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].ends_with(" rank 3 (worker 1): run 0"), "{}", lines[0]);
        assert!(lines[1].ends_with(" rank 3 (worker 1): run 1"), "{}", lines[1]);
        assert!(chrono::DateTime::parse_from_rfc3339(lines[0].split(' ').next().unwrap()).is_ok());
    }

    #[test]
    fn an_unusable_directory_is_an_error_naming_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let blocker = tmp.path().join("file");
        std::fs::write(&blocker, "not a directory").unwrap();
        let err = RankLog::open(&blocker, 0, String::new()).err().unwrap().to_string();
        assert!(err.starts_with("per-rank log: ") && err.contains("rank-00000.log"), "{err}");
    }

    #[test]
    fn off_writes_nothing_and_does_not_build_lines() {
        let mut log = RankLog::off();
        assert!(!log.is_on());
        log.line(|| unreachable!("an off log must not build its lines"));
    }
}
