//! Appending events to a worker's journal segment: one `write` per line, so a kill leaves at most
//! one torn line at the end; `fsync` as often as the policy says.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Event;
use super::lock::{JournalLock, LockMode};
use super::mirror::JournalMirror;
use super::snapshot;
use crate::error::{Error, Result};
use crate::files::checkpoint::{parse_segment_name, segment_name};
use propulate_core::individual::Individual;

/// When journal lines are forced to disk. Every line is handed to the kernel at once, so a killed
/// process loses nothing under any policy; the policy matters when the node itself goes down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FsyncPolicy {
    /// Leave it to the kernel.
    Never,
    /// At most every this many milliseconds, and at the clean end (the default: 1000 ms).
    IntervalMs(u64),
    /// After every line.
    Always,
}

impl Default for FsyncPolicy {
    fn default() -> Self {
        FsyncPolicy::IntervalMs(1000)
    }
}

/// As the command line writes it (`never`, `always`, `1000ms`), which [`FsyncPolicy::from_str`] reads.
impl std::fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FsyncPolicy::Never => write!(f, "never"),
            FsyncPolicy::Always => write!(f, "always"),
            FsyncPolicy::IntervalMs(ms) => write!(f, "{ms}ms"),
        }
    }
}

impl FromStr for FsyncPolicy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "never" => Ok(FsyncPolicy::Never),
            "always" => Ok(FsyncPolicy::Always),
            other => {
                other.strip_suffix("ms").and_then(|n| n.parse().ok()).map(FsyncPolicy::IntervalMs).ok_or_else(|| {
                    format!("fsync policy must be never, always or an interval like 1000ms, got '{other}'")
                })
            }
        }
    }
}

/// The environment variable that sets [`segment_bytes`] (0: a segment is never closed mid-run).
pub const SEGMENT_BYTES_VAR: &str = "PROPULATE_SEGMENT_BYTES";

/// How long a running worker's segment grows before the worker closes it, leaves a snapshot
/// covering it and the ones before, and opens the next: `PROPULATE_SEGMENT_BYTES` where it is a
/// number, else the bytes a snapshot is worth writing for ([`snapshot::WORTH_WRITING`], 16 MiB). So
/// a run killed at any moment resumes from a snapshot and parses at most that much of each journal,
/// as a run that ended cleanly does; each snapshot costs encoding the worker's whole journal so far
/// (an eighth of its JSON), once per 16 MiB written.
pub fn segment_bytes() -> u64 {
    std::env::var(SEGMENT_BYTES_VAR).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(snapshot::WORTH_WRITING)
}

/// What [`JournalWriter::roll_if_due`] did.
#[derive(Debug)]
pub enum Rolled {
    /// Nothing: the segment is not due yet.
    No,
    /// Closed the segment and left a snapshot covering it.
    WithSnapshot,
    /// Closed the segment; the snapshot could not be written (why).
    WithoutSnapshot(Error),
}

/// The open journal segment of one worker.
pub struct JournalWriter {
    file: File,
    path: PathBuf,
    /// Bytes written into this segment.
    bytes: u64,
    /// [`segment_bytes`], read once when the journal is opened: not on every evaluation.
    segment_limit: u64,
    policy: FsyncPolicy,
    last_sync: Instant,
    line: Vec<u8>,
    /// Held while this process writes the worker's journal (released when the process ends).
    lock: JournalLock,
    worker: usize,
    segment: u32,
    /// What the journal says so far, for a snapshot at the clean end (a worker's own journal).
    mirror: Option<JournalMirror>,
}

/// Fail if another process is writing `worker`'s journal (checked before a resume starts, so that
/// every rank can agree on the error).
pub fn ensure_unlocked(dir: &Path, worker: usize) -> Result<()> {
    JournalLock::acquire(dir, worker, LockMode::from_env()).map(drop)
}

impl JournalWriter {
    /// Open a new segment for `worker` in `dir`, after the ones already there.
    pub fn create(dir: &Path, worker: usize, policy: FsyncPolicy) -> Result<Self> {
        let lock = JournalLock::acquire(dir, worker, LockMode::from_env())?;
        let next = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| parse_segment_name(&e.file_name().to_string_lossy()))
            .filter(|(w, _)| *w == worker)
            .map(|(_, s)| s + 1)
            .max()
            .unwrap_or(0);
        let (file, path) = open_segment(dir, worker, next)?;
        Ok(JournalWriter {
            file,
            path,
            bytes: 0,
            segment_limit: segment_bytes(),
            policy,
            last_sync: Instant::now(),
            line: Vec::with_capacity(512),
            lock,
            worker,
            segment: next,
            mirror: None,
        })
    }

    /// Keep `mirror` up with every event from now on, for [`JournalWriter::leave_snapshot`].
    pub fn with_mirror(mut self, mirror: JournalMirror) -> Self {
        self.mirror = Some(mirror);
        self
    }

    /// Append one event now (with any deferred ones before it, in the same `write`).
    pub fn append(&mut self, event: Event) -> Result<()> {
        serde_json::to_writer(&mut self.line, &event).expect("events serialize");
        self.line.push(b'\n');
        self.file.write_all(&self.line).map_err(|e| Error::io(&self.path, e))?;
        self.bytes += self.line.len() as u64;
        self.line.clear();
        if let Some(m) = &mut self.mirror {
            m.record(event);
        }
        match self.policy {
            FsyncPolicy::Never => Ok(()),
            FsyncPolicy::Always => self.sync(),
            FsyncPolicy::IntervalMs(ms) => {
                if self.last_sync.elapsed() >= Duration::from_millis(ms) {
                    self.sync()?;
                }
                Ok(())
            }
        }
    }

    /// Queue an informational event (nothing is resumed from it) to go out with the next `append`:
    /// one system call fewer per received migrant batch. A kill can lose the queued events.
    pub fn defer(&mut self, event: Event) {
        serde_json::to_writer(&mut self.line, &event).expect("events serialize");
        self.line.push(b'\n');
        if let Some(m) = &mut self.mirror {
            m.record(event);
        }
    }

    /// What the user should hear about the journal's lock (a fallback to an owner file, a stale
    /// lock taken over), if anything.
    pub fn lock_warning(&self) -> Option<&str> {
        self.lock.warning()
    }

    /// At a clean end (everything appended and synced): write the worker's snapshot, covering the
    /// journal's every segment, if it saves the next resume enough parsing. `evaluated` is every
    /// evaluation the journal records, in order. Returns whether one was written.
    pub fn leave_snapshot(&mut self, evaluated: &[Individual]) -> Result<bool> {
        let Some(mirror) = &mut self.mirror else { return Ok(false) };
        let size = self.file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
        if !mirror.worth_a_snapshot(size) {
            return Ok(false);
        }
        let dir = self.path.parent().expect("a segment lies in its checkpoint directory");
        mirror.write_snapshot(dir, self.worker, (self.segment, size), evaluated).map(|()| true)
    }

    /// Mid-run, with nothing deferred: once this segment has grown to [`segment_bytes`], close it
    /// (synced), leave a snapshot covering it and every segment before, and go on in a new segment.
    /// `evaluated` is every evaluation the journal records, in order. An error is the journal's
    /// (it cannot be synced or continued); a snapshot that cannot be written is not one: the
    /// segment is closed all the same (a snapshot is a cache), and the next try comes a segment
    /// later.
    pub fn roll_if_due(&mut self, evaluated: &[Individual]) -> Result<Rolled> {
        let Some(mirror) = &mut self.mirror else { return Ok(Rolled::No) };
        if self.segment_limit == 0 || self.bytes < self.segment_limit || !self.line.is_empty() {
            return Ok(Rolled::No);
        }
        // The snapshot names the segment's size; that size must be on disk before the snapshot is.
        self.last_sync = Instant::now();
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))?;
        let size = self.file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
        let dir = self.path.parent().expect("a segment lies in its checkpoint directory").to_path_buf();
        let snapshot = mirror.write_snapshot(&dir, self.worker, (self.segment, size), evaluated);
        mirror.close_segment((self.segment, size), snapshot.is_ok());
        let (file, path) = open_segment(&dir, self.worker, self.segment + 1)?;
        (self.file, self.path, self.bytes, self.segment) = (file, path, 0, self.segment + 1);
        Ok(match snapshot {
            Ok(()) => Rolled::WithSnapshot,
            Err(e) => Rolled::WithoutSnapshot(e),
        })
    }

    /// Force everything written so far to disk.
    pub fn sync(&mut self) -> Result<()> {
        self.last_sync = Instant::now();
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }
}

/// Create segment `segment` of `worker`'s journal in `dir`, to append to.
fn open_segment(dir: &Path, worker: usize, segment: u32) -> Result<(File, PathBuf)> {
    let path = dir.join(segment_name(worker, segment));
    let file = OpenOptions::new().append(true).create_new(true).open(&path).map_err(|e| Error::io(&path, e))?;
    // Make the new file's directory entry durable, or a crash of the node could lose the segment.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok((file, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_reads_back_as_it_is_written() {
        for policy in [FsyncPolicy::Never, FsyncPolicy::Always, FsyncPolicy::IntervalMs(250), FsyncPolicy::default()] {
            assert_eq!(policy.to_string().parse::<FsyncPolicy>(), Ok(policy));
        }
        assert!("1000".parse::<FsyncPolicy>().unwrap_err().contains("like 1000ms"));
    }
}
