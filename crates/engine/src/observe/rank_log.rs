//! Per-rank log files: `rank-NNNNN.log` in the log directory, one per MPI rank, appended to across
//! resumes. A line says what this rank is, how its worker is doing every few generations (the
//! observer's mode), each failed evaluation, warnings and the end. They are for finding out what
//! one rank of a large job did (a slow node, a loss that fails only there), so every line is
//! flushed at once and survives a kill.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Event, Observer, RankInfo};

/// The log files of the ranks of this process (one under MPI; all of them with in-process ranks).
#[derive(Debug)]
pub struct RankLog {
    dir: PathBuf,
    files: HashMap<usize, (File, String)>,
}

impl RankLog {
    /// Logs into `dir` (created if missing when the run starts). Install it with
    /// `ObserverMode::Every(n)` for a status line every n evaluations of a worker.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RankLog { dir: dir.into(), files: HashMap::new() }
    }

    /// The file of `rank` in `dir`.
    pub fn path(dir: &Path, rank: usize) -> PathBuf {
        dir.join(crate::files::logs::rank_log_name(rank))
    }

    fn line(&mut self, rank: usize, text: String) -> Result<(), String> {
        let Some((file, prefix)) = self.files.get_mut(&rank) else { return Ok(()) };
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        file.write_all(format!("{now} {prefix}: {text}\n").as_bytes()).map_err(|e| {
            let path = RankLog::path(&self.dir, rank);
            format!("per-rank log: {}: {e}; logging stops on this rank", path.display())
        })
    }
}

fn role(r: &RankInfo) -> String {
    match r.ranks_per_worker {
        1 => format!("rank {} (worker {}, island {})", r.rank, r.worker, r.island),
        _ => format!("rank {} (worker {} rank {}, island {})", r.rank, r.worker, r.rank_in_worker, r.island),
    }
}

impl Observer for RankLog {
    fn start(&mut self, r: &RankInfo) -> Result<(), String> {
        let path = RankLog::path(&self.dir, r.rank);
        let file = std::fs::create_dir_all(&self.dir)
            .and_then(|()| OpenOptions::new().create(true).append(true).open(&path))
            .map_err(|e| format!("per-rank log: {}: {e}", path.display()))?;
        self.files.insert(r.rank, (file, role(r)));
        let text = format!(
            "start: {} ranks, {} workers on {} islands, launcher {:?}, local rank {}, host {}",
            r.world_size, r.workers, r.islands, r.launcher, r.local_rank, r.host
        );
        self.line(r.rank, text)
    }

    fn observe(&mut self, r: &RankInfo, event: &Event<'_>) -> Result<(), String> {
        let status_line = |what: &str, s: &super::WorkerStatus| {
            let best = s.island_best.map_or("none yet".to_string(), |l| format!("{l:.6e}"));
            format!(
                "{what} {}: {} evaluations ({} failed), island best {best}, {} active, {} emigrated",
                s.generation, s.evaluations, s.failed, s.active, s.emigrated
            )
        };
        let text = match event {
            Event::Resumed { evaluations } => format!("resumed after {evaluations} evaluations of this worker"),
            Event::Evaluated { status, .. } => status_line("generation", status),
            Event::Failed { generation, reason } if r.rank_in_worker == 0 => {
                format!("generation {generation} failed: {reason}")
            }
            Event::Failed { generation, reason } => format!("generation {generation} failed on this rank: {reason}"),
            Event::Finished(status) => status_line("done after generation", status),
            Event::FollowerFinished { evaluations } => format!("done: took part in {evaluations} evaluations"),
            Event::Warning(text) => format!("warning: {text}"),
            Event::Notice(text) => text.to_string(),
        };
        self.line(r.rank, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launcher::Launcher;

    fn info(rank: usize) -> RankInfo {
        RankInfo {
            rank,
            world_size: 4,
            worker: 1,
            workers: 2,
            island: 0,
            islands: 1,
            rank_in_worker: 1,
            ranks_per_worker: 2,
            launcher: Launcher::Direct,
            local_rank: rank,
            host: "node".into(),
        }
    }

    #[test]
    fn lines_are_appended_with_timestamp_and_role_across_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("logs");
        for run in 0..2 {
            let mut log = RankLog::new(&dir);
            log.start(&info(3)).unwrap();
            log.observe(&info(3), &Event::Notice(&format!("run {run}"))).unwrap();
        }
        let text = std::fs::read_to_string(dir.join("rank-00003.log")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].contains(" rank 3 (worker 1 rank 1, island 0): start: 4 ranks, 2 workers"), "{}", lines[0]);
        assert!(lines[1].ends_with(" rank 3 (worker 1 rank 1, island 0): run 0"), "{}", lines[1]);
        assert!(lines[3].ends_with(": run 1"), "{}", lines[3]);
        assert!(chrono::DateTime::parse_from_rfc3339(lines[0].split(' ').next().unwrap()).is_ok());
    }

    #[test]
    fn ranks_of_one_process_write_their_own_files() {
        let tmp = tempfile::tempdir().unwrap();
        let mut log = RankLog::new(tmp.path());
        for r in 0..2 {
            log.start(&info(r)).unwrap();
        }
        log.observe(&info(1), &Event::Failed { generation: 7, reason: "NaN" }).unwrap();
        let one = std::fs::read_to_string(tmp.path().join("rank-00001.log")).unwrap();
        let zero = std::fs::read_to_string(tmp.path().join("rank-00000.log")).unwrap();
        assert!(one.contains("generation 7 failed on this rank: NaN"), "{one}");
        assert!(!zero.contains("failed"), "{zero}");
    }

    #[test]
    fn an_unusable_directory_is_an_error_naming_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let blocker = tmp.path().join("file");
        std::fs::write(&blocker, "not a directory").unwrap();
        let err = RankLog::new(&blocker).start(&info(0)).unwrap_err();
        assert!(err.starts_with("per-rank log: ") && err.contains("rank-00000.log"), "{err}");
    }
}
