//! What every process a rank starts for a trial gets, the trial's own and a preloaded Python
//! alike: it dies with its rank, and its log's tail is quoted when it fails.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Have the kernel kill `cmd`'s process when the thread that starts it ends: the loss runs on the
/// rank's own thread for the whole evaluation (and a preloaded Python is started on it), so that
/// is the rank's death.
pub(crate) fn die_with_parent(cmd: &mut Command) {
    on_parent_death(cmd, libc::SIGKILL, None);
}

/// Have the kernel send `signal` to `cmd`'s process when the thread that starts it ends; if that
/// thread's process is gone already (it died between the fork and the prctl, so no signal would
/// ever come), kill the process group `then_kill` (if any) and exit at once.
fn on_parent_death(cmd: &mut Command, signal: libc::c_int, then_kill: Option<libc::pid_t>) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec only async-signal-safe calls (prctl, getppid, kill, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                if let Some(group) = then_kill {
                    libc::kill(-group, libc::SIGKILL);
                }
                libc::_exit(0);
            }
            Ok(())
        });
    }
}

/// A small shell beside a trial's process group that kills the whole group when the rank dies. The
/// parent-death signal reaches only the rank's own child: what that child started (`bash train.sh`
/// running python, a launcher's workers) would outlive a `kill -9` of the job, holding its GPU.
/// The guard gets SIGHUP at the rank's death (its own parent-death signal) and SIGKILLs the group;
/// dropped when the trial has ended, it goes quietly.
pub(crate) struct GroupGuard {
    shell: std::process::Child,
}

impl GroupGuard {
    /// A guard of the process group `pgid`; `None` where no shell can be started (the trial runs
    /// unguarded, as before guards).
    pub(crate) fn start(pgid: i32) -> Option<GroupGuard> {
        let mut cmd = Command::new("/bin/sh");
        // `$!` is the sleep, which would outlive the shell.
        cmd.args(["-c", "trap 'kill -9 -\"$1\" \"$!\" 2>/dev/null; exit 0' HUP; sleep 2147483647 & wait"])
            .args(["propulate-rs-trial-guard", &pgid.to_string()])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0);
        // SIGHUP at the rank's death; a rank already dead has the group killed at once.
        on_parent_death(&mut cmd, libc::SIGHUP, Some(pgid));
        cmd.spawn().ok().map(|shell| GroupGuard { shell })
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // Its own group: the shell and its sleep.
        // SAFETY: killpg has no memory effects.
        unsafe {
            libc::killpg(self.shell.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.shell.wait();
    }
}

/// The last lines of a log, on one line (`a | b | c`), for a failure's reason: the traceback's
/// end usually says what went wrong. Empty when the log is empty or unreadable.
pub(crate) fn log_tail(path: &Path) -> String {
    const LINES: usize = 6;
    const CHARS: usize = 600;
    let text = last_bytes(path, 4096);
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(LINES)..].join(" | ");
    match tail.char_indices().rev().nth(CHARS - 1) {
        Some((start, _)) if tail.chars().count() > CHARS => format!("...{}", &tail[start..]),
        _ => tail,
    }
}

/// The last `bytes` of a file as text (empty when it is unreadable).
pub(crate) fn last_bytes(path: &Path, bytes: u64) -> String {
    let Ok(mut f) = File::open(path) else { return String::new() };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(bytes)));
    let mut read = Vec::new();
    let _ = f.read_to_end(&mut read);
    String::from_utf8_lossy(&read).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_the_last_lines_on_one_line_and_short() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("err");
        assert_eq!(log_tail(&path), "");
        let text: String = (0..100).map(|i| format!("line {i}\n\n")).collect();
        std::fs::write(&path, text).unwrap();
        assert_eq!(log_tail(&path), "line 94 | line 95 | line 96 | line 97 | line 98 | line 99");
        std::fs::write(&path, "x".repeat(5000)).unwrap();
        let tail = log_tail(&path);
        assert!(tail.starts_with("...") && tail.chars().count() == 603, "{}", tail.len());
    }
}
