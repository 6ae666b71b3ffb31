//! One process of a trial, started by one rank: in a process group of its own (so that stopping
//! the trial stops whatever it started too), killed by the kernel when its rank dies (a
//! parent-death signal), with what it started (a guard kills the group: a `kill -9` of the job
//! leaves no training behind), stdin closed, stderr to a file, stdout to a file through a reader
//! that passes each line on.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::Sender;

use propulate_engine::files::trials::{output_names, stdout_pipe_name};

use crate::child::{GroupGuard, die_with_parent};
use crate::fork_server::{ForkServer, PythonCommand};
use crate::heard::Heard;

/// A running (or finished) process of a trial.
pub(crate) struct TrialProcess {
    /// Its pid, which is also its process group's id.
    pid: i32,
    /// Where its stderr goes, for the tail quoted in a failure.
    pub stderr_path: PathBuf,
    /// Kills the group if the rank dies while it runs (what the process started too).
    _guard: Option<GroupGuard>,
}

/// The files a rank's process writes into its trial directory.
pub(crate) fn log_paths(dir: &Path, rank: usize) -> (PathBuf, PathBuf) {
    let (stdout, stderr) = output_names(rank);
    (dir.join(stdout), dir.join(stderr))
}

impl TrialProcess {
    /// Start `argv` with `env` added, logging into `dir` as worker rank `rank`. Its stdout lines
    /// come to `heard` as [`Heard::Line`] (then [`Heard::StdoutClosed`]) and its end as
    /// [`Heard::Exited`].
    pub fn spawn(
        argv: &[String],
        env: &[(String, String)],
        dir: &Path,
        rank: usize,
        heard: Sender<Heard>,
    ) -> std::io::Result<Self> {
        let (stdout_path, stderr_path) = log_paths(dir, rank);
        let stdout_log = File::create(&stdout_path)?;
        let stderr_log = File::create(&stderr_path)?;
        let mut cmd = Command::new(&argv[0]);
        for name in crate::launcher_env::job_variables() {
            cmd.env_remove(name);
        }
        cmd.args(&argv[1..])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr_log)
            .process_group(0);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn()?;
        let pid = child.id() as i32;
        let guard = GroupGuard::start(pid);
        follow_stdout(child.stdout.take().expect("stdout is piped"), stdout_log, heard.clone());
        std::thread::spawn(move || {
            let status = child.wait();
            let _ = heard.send(Heard::Exited(status.map_err(|e| e.to_string())));
        });
        Ok(TrialProcess { pid, stderr_path, _guard: guard })
    }

    /// Like [`TrialProcess::spawn`], but forked by this rank's preloaded Python `server`.
    pub fn spawn_forked(
        server: &mut ForkServer,
        command: &PythonCommand,
        env: &[(String, String)],
        dir: &Path,
        rank: usize,
        heard: Sender<Heard>,
    ) -> Result<Self, String> {
        let (stdout_path, stderr_path) = log_paths(dir, rank);
        let stdout_log =
            File::create(&stdout_path).map_err(|e| format!("cannot create {}: {e}", stdout_path.display()))?;
        let fifo = dir.join(stdout_pipe_name(rank));
        let (pid, stdout) = server.fork(command, env, &fifo, &stderr_path)?;
        follow_stdout(stdout, stdout_log, heard.clone());
        server.report_end(heard);
        Ok(TrialProcess { pid, stderr_path, _guard: GroupGuard::start(pid) })
    }

    /// Send `signal` to the trial's whole process group (what the program started too); a group
    /// that is gone already is no error.
    pub fn signal_group(&self, signal: libc::c_int) {
        // SAFETY: killpg has no memory effects; the group id is the child's pid, its own group.
        unsafe {
            libc::killpg(self.pid, signal);
        }
    }
}

/// Copy a process's stdout into its log, passing each line to `heard` as [`Heard::Line`], then
/// [`Heard::StdoutClosed`] at its end.
fn follow_stdout(stdout: impl Read + Send + 'static, mut log: File, heard: Sender<Heard>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let _ = log.write_all(&line);
            let _ = heard.send(Heard::Line(String::from_utf8_lossy(&line).into_owned()));
            line.clear();
        }
        let _ = log.flush();
        let _ = heard.send(Heard::StdoutClosed);
    });
}

/// How a process ended, for a failure's reason (`None`: it succeeded).
pub(crate) fn failure_of(status: &Result<ExitStatus, String>) -> Option<String> {
    match status {
        Ok(s) if s.success() => None,
        Ok(s) => Some(match (s.code(), s.signal()) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig} ({})", signal_name(sig)),
            _ => format!("ended with {s}"),
        }),
        Err(e) => Some(format!("could not be waited for: {e}")),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_described_by_status_or_signal() {
        assert_eq!(failure_of(&Ok(ExitStatus::from_raw(0))), None);
        assert_eq!(failure_of(&Ok(ExitStatus::from_raw(3 << 8))).unwrap(), "exited with status 3");
        assert_eq!(failure_of(&Ok(ExitStatus::from_raw(9))).unwrap(), "was killed by signal 9 (SIGKILL)");
    }
}
