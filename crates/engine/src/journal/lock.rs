//! The lock that keeps two processes from writing one worker's journal: a rank of an earlier job
//! that outlived its `mpirun` (OpenMPI ranks survive a killed `mpirun`) and still appends would
//! interleave two runs in one journal.
//!
//! The lock is `flock` on `worker-NNNNN.lock`. Parallel file systems mounted without lock support
//! (Lustre without `flock`, some NFS set-ups) refuse it; there, and wherever
//! `PROPULATE_JOURNAL_LOCK=file` asks for it (Lustre's `localflock` gives locks that only hold
//! within one node), the lock is an owner file, `worker-NNNNN.owner`, created exclusively and kept
//! fresh by a heartbeat. An owner file whose heartbeat stopped long ago belongs to a job that died
//! (a kill leaves it behind) and is taken over, so a resubmitted job on another node can resume.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};
use crate::files::checkpoint::{lock_name, owner_name};

/// How often the owner file's modification time is renewed.
const HEARTBEAT: Duration = Duration::from_secs(20);
/// An owner file not renewed for this long belongs to a job that is gone.
const STALE_AFTER: Duration = Duration::from_secs(120);

/// Which kind of lock to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// `flock`, falling back to an owner file where the file system refuses it.
    Auto,
    /// An owner file with a heartbeat.
    OwnerFile,
}

impl LockMode {
    /// `PROPULATE_JOURNAL_LOCK=file` asks for owner files; anything else is `Auto`.
    pub fn from_env() -> Self {
        match std::env::var("PROPULATE_JOURNAL_LOCK").as_deref() {
            Ok("file") => LockMode::OwnerFile,
            _ => LockMode::Auto,
        }
    }
}

/// A held journal lock; released when dropped (or when the process ends).
pub struct JournalLock {
    _flock: Option<File>,
    owner: Option<OwnerFile>,
    warning: Option<String>,
}

impl JournalLock {
    /// Take the lock on `worker`'s journal in `dir`. It fails while another process holds it.
    pub fn acquire(dir: &Path, worker: usize, mode: LockMode) -> Result<Self> {
        let mut warning = None;
        if mode == LockMode::Auto {
            let path = dir.join(lock_name(worker));
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| Error::io(&path, e))?;
            match file.try_lock() {
                Ok(()) => return Ok(JournalLock { _flock: Some(file), owner: None, warning: None }),
                Err(std::fs::TryLockError::WouldBlock) => return Err(still_written(&path, worker, "another process")),
                Err(std::fs::TryLockError::Error(e)) if locks_unsupported(&e) => {
                    warning = Some(format!(
                        "{}: this file system does not support file locks ({e}); worker {worker}'s journal is \
                         guarded by an owner file with a heartbeat instead",
                        path.display()
                    ));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
            }
        }
        let (owner, took_over) = OwnerFile::create(&dir.join(owner_name(worker)), worker)?;
        if let Some(stale) = took_over {
            let w = warning.map_or(String::new(), |w| format!("{w}; "));
            warning = Some(format!("{w}{stale}"));
        }
        Ok(JournalLock { _flock: None, owner: Some(owner), warning })
    }

    /// What the caller should tell the user about this lock (a fallback, a stale lock taken over).
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// True if this lock is an owner file.
    pub fn is_owner_file(&self) -> bool {
        self.owner.is_some()
    }
}

/// Errors of `flock` that mean "this file system has no locks", not "someone holds it".
fn locks_unsupported(e: &std::io::Error) -> bool {
    const ENOLCK: i32 = 37;
    const ENOSYS: i32 = 38;
    const EOPNOTSUPP: i32 = 95;
    e.kind() == std::io::ErrorKind::Unsupported || matches!(e.raw_os_error(), Some(ENOLCK | ENOSYS | EOPNOTSUPP))
}

fn still_written(path: &Path, worker: usize, by: &str) -> Error {
    Error::Checkpoint(format!(
        "{}: worker {worker}'s journal is still being written by {by} (a rank of an earlier job?); end that \
         job (e.g. `pkill -9 propulate-rs` on its nodes) before resuming",
        path.display()
    ))
}

/// Whether an owner file's `owner` (`host H pid P`) names a process of this host that is gone: a
/// job killed a moment ago, whose heartbeat has not yet aged (a resume right after a kill -9 was
/// refused for up to the stale time, and a resubmitting batch script took that for a bad
/// configuration). A process of another host cannot be seen from here: its heartbeat decides.
fn gone_from_this_host(owner: &str) -> bool {
    let mut words = owner.split_whitespace();
    match (words.next(), words.next(), words.next(), words.next()) {
        (Some("host"), Some(host), Some("pid"), Some(pid)) if host == crate::launcher::hostname() => {
            pid.parse::<u32>().is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
        }
        _ => false,
    }
}

/// An exclusively created file naming its owner, renewed by a heartbeat thread, removed when
/// dropped.
struct OwnerFile {
    path: PathBuf,
    stop: Option<Sender<()>>,
    heartbeat: Option<JoinHandle<()>>,
}

impl OwnerFile {
    /// Create the owner file at `path`; returns the lock and, if a stale one was taken over, a
    /// note saying whose.
    fn create(path: &Path, worker: usize) -> Result<(Self, Option<String>)> {
        let me = format!("host {} pid {}\n", crate::launcher::hostname(), std::process::id());
        let mut took_over = None;
        loop {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut file) => {
                    file.write_all(me.as_bytes()).and_then(|()| file.sync_all()).map_err(|e| Error::io(path, e))?;
                    return Ok((OwnerFile::start(path.to_path_buf(), file), took_over));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && took_over.is_none() => {
                    let owner = std::fs::read_to_string(path).unwrap_or_default().trim().to_string();
                    let silent = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .unwrap_or_default();
                    if silent < STALE_AFTER && !gone_from_this_host(&owner) {
                        let by = format!("{owner} (its heartbeat is {} s old)", silent.as_secs());
                        return Err(still_written(path, worker, &by));
                    }
                    // Not atomic: two processes that both judged the file stale could, in the
                    // microseconds between one's removal and creation, have the second remove the
                    // first's fresh file and both go on. That needs two resumes of one checkpoint
                    // at the same instant after a job died on a file system without flock.
                    // Likewise a writer stopped for longer than STALE_AFTER (SIGSTOP, a hung mount)
                    // is taken over without noticing. Both are stated in docs/guide/checkpoints.md.
                    match std::fs::remove_file(path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(Error::io(path, e)),
                    }
                    took_over = Some(if silent < STALE_AFTER {
                        format!("{}: took over the lock of {owner}, a process gone from this host", path.display())
                    } else {
                        format!(
                            "{}: took over the lock of {owner}, whose heartbeat stopped {} s ago (a job that died)",
                            path.display(),
                            silent.as_secs()
                        )
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(still_written(path, worker, "another process that took it at the same time"));
                }
                Err(e) => return Err(Error::io(path, e)),
            }
        }
    }

    fn start(path: PathBuf, file: File) -> Self {
        let (stop, stopped) = channel::<()>();
        let heartbeat = std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(HEARTBEAT) {
                let _ = file.set_modified(SystemTime::now());
            }
        });
        OwnerFile { path, stop: Some(stop), heartbeat: Some(heartbeat) }
    }
}

impl Drop for OwnerFile {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_file_excludes_a_second_writer_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let first = JournalLock::acquire(dir.path(), 3, LockMode::OwnerFile).unwrap();
        assert!(first.is_owner_file() && first.warning().is_none());
        let owner = dir.path().join(owner_name(3));
        assert!(std::fs::read_to_string(&owner).unwrap().contains(&format!("pid {}", std::process::id())));
        let e = JournalLock::acquire(dir.path(), 3, LockMode::OwnerFile).err().unwrap().to_string();
        assert!(e.contains("worker 3's journal is still being written by host") && e.contains("heartbeat"), "{e}");
        // Another worker's lock is independent.
        let other = JournalLock::acquire(dir.path(), 4, LockMode::OwnerFile).unwrap();
        drop(first);
        assert!(!owner.exists(), "released locks leave no owner file");
        JournalLock::acquire(dir.path(), 3, LockMode::OwnerFile).unwrap();
        drop(other);
    }

    #[test]
    fn a_stale_owner_file_is_taken_over_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let owner = dir.path().join(owner_name(0));
        std::fs::write(&owner, "host gone pid 1\n").unwrap();
        let old = SystemTime::now() - STALE_AFTER - Duration::from_secs(5);
        File::options().write(true).open(&owner).unwrap().set_modified(old).unwrap();
        let lock = JournalLock::acquire(dir.path(), 0, LockMode::OwnerFile).unwrap();
        let w = lock.warning().unwrap();
        assert!(w.contains("took over the lock of host gone pid 1"), "{w}");
        assert!(std::fs::read_to_string(&owner).unwrap().contains(&format!("pid {}", std::process::id())));
    }

    /// A job killed a moment ago on this host: its owner file's heartbeat is fresh, its process
    /// gone; the resume takes the lock at once.
    #[test]
    fn a_fresh_owner_file_of_a_process_gone_from_this_host_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        let pid = ended.id();
        ended.wait().unwrap();
        let owner = dir.path().join(owner_name(0));
        std::fs::write(&owner, format!("host {} pid {pid}\n", crate::launcher::hostname())).unwrap();
        let lock = JournalLock::acquire(dir.path(), 0, LockMode::OwnerFile).unwrap();
        let w = lock.warning().unwrap();
        assert!(
            w.contains(&format!(
                "took over the lock of host {} pid {pid}, a process gone",
                crate::launcher::hostname()
            )),
            "{w}"
        );
        // One of another host is judged by its heartbeat alone.
        drop(lock);
        std::fs::write(&owner, format!("host elsewhere pid {pid}\n")).unwrap();
        assert!(JournalLock::acquire(dir.path(), 0, LockMode::OwnerFile).is_err());
    }

    #[test]
    fn flock_excludes_a_second_writer() {
        let dir = tempfile::tempdir().unwrap();
        let _held = JournalLock::acquire(dir.path(), 1, LockMode::Auto).unwrap();
        let e = JournalLock::acquire(dir.path(), 1, LockMode::Auto).err().unwrap().to_string();
        assert!(e.contains("worker 1's journal is still being written by another process"), "{e}");
    }

    #[test]
    fn only_lock_errors_that_mean_no_locks_fall_back() {
        assert!(locks_unsupported(&std::io::Error::from_raw_os_error(37)));
        assert!(locks_unsupported(&std::io::Error::from_raw_os_error(95)));
        assert!(!locks_unsupported(&std::io::Error::from_raw_os_error(13)), "permission denied is an error");
    }
}
