//! `--preload MODULES`: a Python trial's processes forked from a Python that imported the heavy
//! modules once, instead of each starting Python and importing them anew (torch: 1-2.5 s of every
//! evaluation on a loaded node). Each rank keeps one such server (`fork_server.py`) for as long as
//! its thread runs trials; the server forks a trial's process into a process group of its own with
//! the trial's environment, stderr to its file and stdout into a FIFO this rank reads, runs the
//! program as `__main__` and reports its wait status. The program is the user's, unchanged: what
//! it sees differs from a fresh `python SCRIPT` only in modules already being imported.
//!
//! The chain of parent-death signals (rank -> server -> trial process) keeps the guarantee of
//! direct processes: a `kill -9` of the job leaves nothing behind.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::child::{die_with_parent, log_tail};
use crate::heard::Heard;

/// The server's program, given to `python -c`.
const SERVER_PROGRAM: &str = include_str!("fork_server.py");

/// A trial command a preloaded Python can run: `PYTHON [-u] SCRIPT ARGS..` or
/// `PYTHON [-u] -m MODULE ARGS..`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PythonCommand {
    /// The interpreter: the server runs on it, so that the trial's virtual environment is used.
    pub python: String,
    /// `-u`: the program's stdout and stderr unbuffered.
    pub unbuffered: bool,
    /// `-m`: the first word of `argv` is a module to run, not a script.
    pub module: bool,
    /// `sys.argv` as the program sees it: the script (or module) and its arguments.
    pub argv: Vec<String>,
}

impl PythonCommand {
    /// `words` (the trial's command) in one of the forms a preloaded Python can run.
    pub fn parse(words: &[String]) -> Result<Self, String> {
        let form = || {
            format!(
                "--preload runs the trial command inside a Python that has imported the modules, so the \
                 command must be `PYTHON [-u] SCRIPT ARGS...` or `PYTHON [-u] -m MODULE ARGS...`; `{}` is not",
                words.join(" ")
            )
        };
        let (python, mut rest) = words.split_first().ok_or_else(form)?;
        let (mut unbuffered, mut module) = (false, false);
        while let Some((word, after)) = rest.split_first() {
            match word.as_str() {
                "-u" => unbuffered = true,
                "-m" => module = true,
                w if w.starts_with('-') => return Err(format!("{} (the option {w})", form())),
                _ => break,
            }
            rest = after;
            if module {
                break;
            }
        }
        if rest.is_empty() {
            return Err(form());
        }
        Ok(PythonCommand { python: python.clone(), unbuffered, module, argv: rest.to_vec() })
    }
}

/// The modules of `--preload`: comma-separated Python module names, checked when the flag is
/// read and carried as this one value to the server, which gets them joined as they came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreloadModules(Vec<String>);

impl std::str::FromStr for PreloadModules {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let modules: Vec<String> = text.split(',').map(|m| m.trim().to_string()).collect();
        for m in &modules {
            let valid = !m.is_empty()
                && m.split('.').all(|part| {
                    part.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                        && part.chars().all(|c| c.is_alphanumeric() || c == '_')
                });
            if !valid {
                return Err(format!("`{m}` is not a Python module name (e.g. --preload torch,numpy)"));
            }
        }
        Ok(PreloadModules(modules))
    }
}

impl PreloadModules {
    /// The module names, in the order given.
    pub fn names(&self) -> &[String] {
        &self.0
    }

    /// As the server's command line takes them: comma-separated.
    fn joined(&self) -> String {
        self.0.join(",")
    }
}

/// Whether `python` runs and finds the top-level package of each of `modules` (without importing
/// them, which may take seconds): a clear error before the run instead of a failure per trial.
pub(crate) fn check_modules(python: &str, modules: &PreloadModules) -> Result<(), String> {
    const FIND: &str = "import importlib.util, sys\n\
                        missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m.split('.')[0]) is None]\n\
                        print(', '.join(missing))";
    let out = Command::new(python)
        .arg("-c")
        .arg(FIND)
        .args(modules.names())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("--preload: cannot run the trial's Python `{python}`: {e}"))?;
    let missing = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("--preload: `{python}` does not run as a Python ({}): {}", out.status, stderr.trim()));
    }
    if !missing.is_empty() {
        return Err(format!("--preload: the trial's Python `{python}` finds no module {missing}"));
    }
    Ok(())
}

/// A running server: a Python with the modules imported, waiting for requests.
pub(crate) struct ForkServer {
    python: String,
    modules: String,
    process: Child,
    requests: ChildStdin,
    /// Its replies; a trial's end is read by a thread that holds them until it comes.
    replies: Arc<Mutex<BufReader<ChildStdout>>>,
    log: PathBuf,
}

thread_local! {
    /// This thread's server: the parent-death signal of the server follows the thread that
    /// started it, which is the rank's own thread, the one that runs its evaluations.
    static SERVER: RefCell<Option<ForkServer>> = const { RefCell::new(None) };
}

/// What the server needs to start: which Python, which modules, the rank's environment for its
/// trials that does not change between them (read by the modules at import), where it logs.
pub(crate) struct ServerSpec<'a> {
    pub python: &'a str,
    pub modules: &'a PreloadModules,
    pub env: &'a [(String, String)],
    /// The trial command, after the modules in the server's command line: `ps` shows what it serves.
    pub command: &'a [String],
    pub log: PathBuf,
}

/// Run `f` with this thread's server for `spec`, started (again) when there is none, it serves
/// another Python or other modules, or it has died.
pub(crate) fn with_server<R>(
    spec: &ServerSpec<'_>,
    f: impl FnOnce(&mut ForkServer) -> Result<R, String>,
) -> Result<R, String> {
    SERVER.with_borrow_mut(|slot| {
        let modules = spec.modules.joined();
        if slot.as_mut().is_some_and(|s| s.python != spec.python || s.modules != modules || !s.alive()) {
            *slot = None;
        }
        if slot.is_none() {
            *slot = Some(ForkServer::start(spec, modules)?);
        }
        f(slot.as_mut().expect("started above"))
    })
}

/// One reply of the server; its end as an error that quotes its log.
fn read_reply(replies: &mut BufReader<ChildStdout>, log: &Path) -> Result<Value, String> {
    let mut line = String::new();
    let ended = || {
        let tail = log_tail(log);
        let tail = if tail.is_empty() { String::new() } else { format!("; its log ends: {tail}") };
        format!("the preloaded Python (--preload) has ended ({}){tail}", log.display())
    };
    match replies.read_line(&mut line) {
        Ok(0) | Err(_) => Err(ended()),
        Ok(_) => serde_json::from_str(&line).map_err(|e| format!("the preloaded Python said {line:?}: {e}")),
    }
}

impl ForkServer {
    fn start(spec: &ServerSpec<'_>, modules: String) -> Result<Self, String> {
        let cannot = |e: std::io::Error| format!("cannot start the preloaded Python `{}`: {e}", spec.python);
        if let Some(dir) = spec.log.parent() {
            std::fs::create_dir_all(dir).map_err(cannot)?;
        }
        let log = File::create(&spec.log).map_err(cannot)?;
        let mut cmd = Command::new(spec.python);
        cmd.arg("-c").arg(SERVER_PROGRAM).arg(&modules).args(spec.command);
        // The forked trials inherit the server's environment.
        for name in crate::launcher_env::job_variables() {
            cmd.env_remove(name);
        }
        cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(log).process_group(0);
        die_with_parent(&mut cmd);
        let mut process = cmd.spawn().map_err(cannot)?;
        let requests = process.stdin.take().expect("stdin is piped");
        let mut replies = BufReader::new(process.stdout.take().expect("stdout is piped"));
        match read_reply(&mut replies, &spec.log) {
            Ok(v) if v["ready"] == json!(true) => Ok(ForkServer {
                python: spec.python.to_string(),
                modules,
                process,
                requests,
                replies: Arc::new(Mutex::new(replies)),
                log: spec.log.clone(),
            }),
            Ok(v) => Err(format!("the preloaded Python said {v} when it should be ready")),
            Err(e) => {
                let _ = process.kill();
                let _ = process.wait();
                Err(format!("importing {modules}: {e}"))
            }
        }
    }

    fn alive(&mut self) -> bool {
        matches!(self.process.try_wait(), Ok(None))
    }

    /// Start `command` with `env` added, its stderr into `stderr` and its stdout into this rank's
    /// reader: the pid of its process (and process group), and the reader of its stdout.
    pub fn fork(
        &mut self,
        command: &PythonCommand,
        env: &[(String, String)],
        stdout_fifo: &Path,
        stderr: &Path,
    ) -> Result<(i32, File), String> {
        let fifo_error =
            |e: std::io::Error| format!("cannot make the FIFO {} for its stdout: {e}", stdout_fifo.display());
        let _ = std::fs::remove_file(stdout_fifo);
        let path = std::ffi::CString::new(stdout_fifo.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: a valid NUL-terminated path; mkfifo has no other memory effects.
        if unsafe { libc::mkfifo(path.as_ptr(), 0o600) } != 0 {
            return Err(fifo_error(std::io::Error::last_os_error()));
        }
        // Opened before the server opens it for writing (which then does not block); reads wait
        // only once the process holds the writing end (see `set_blocking`).
        let reader = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(stdout_fifo);
        let pid = reader.map_err(fifo_error).and_then(|reader| {
            let env: serde_json::Map<String, Value> = env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            let request = json!({
                "stdout": stdout_fifo, "stderr": stderr, "env": env, "argv": command.argv,
                "module": command.module, "unbuffered": command.unbuffered,
            });
            let mut replies = self.replies.lock().unwrap_or_else(|e| e.into_inner());
            writeln!(self.requests, "{request}")
                .and_then(|()| self.requests.flush())
                .map_err(|_| read_reply(&mut replies, &self.log).err().unwrap_or_default())?;
            let reply = read_reply(&mut replies, &self.log)?;
            match (reply["pid"].as_i64(), reply["error"].as_str()) {
                (Some(pid), _) => Ok((pid as i32, reader)),
                (None, Some(e)) => Err(format!("the preloaded Python could not start it: {e}")),
                _ => Err(format!("the preloaded Python said {reply} when it should start a trial")),
            }
        });
        // The process holds its end: the name can go.
        let _ = std::fs::remove_file(stdout_fifo);
        let (pid, reader) = pid?;
        set_blocking(&reader).map_err(fifo_error)?;
        Ok((pid, reader))
    }

    /// The end of the process just forked comes to `heard` as [`Heard::Exited`].
    pub fn report_end(&self, heard: Sender<Heard>) {
        let replies = self.replies.clone();
        let log = self.log.clone();
        std::thread::spawn(move || {
            let mut replies = replies.lock().unwrap_or_else(|e| e.into_inner());
            let status = read_reply(&mut replies, &log).and_then(|reply| match reply["status"].as_i64() {
                Some(raw) => Ok(ExitStatus::from_raw(raw as i32)),
                None => Err(format!("the preloaded Python said {reply} when its trial should end")),
            });
            let _ = heard.send(Heard::Exited(status));
        });
    }
}

/// Reads of a FIFO opened without blocking wait again for data (end of file: every writer gone).
fn set_blocking(file: &File) -> std::io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this file owns; no memory effects.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Drop for ForkServer {
    fn drop(&mut self) {
        // Its trial processes follow it by their parent-death signal.
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_forms_a_preloaded_python_can_run_are_read_and_others_refused() {
        let c = PythonCommand::parse(&words("python train.py --epochs 3")).unwrap();
        assert_eq!((c.python.as_str(), c.unbuffered, c.module), ("python", false, false));
        assert_eq!(c.argv, words("train.py --epochs 3"));
        let c = PythonCommand::parse(&words(".venv/bin/python -u -m pkg.train -u x")).unwrap();
        assert_eq!((c.unbuffered, c.module), (true, true));
        assert_eq!(c.argv, words("pkg.train -u x"));
        for bad in ["python", "python -u", "python -m", "python -X dev train.py", "python -c pass"] {
            let e = PythonCommand::parse(&words(bad)).unwrap_err();
            assert!(e.contains("`PYTHON [-u] SCRIPT ARGS...`") && e.contains(bad), "{e}");
        }
        assert!(PythonCommand::parse(&words("python -X dev train.py")).unwrap_err().contains("the option -X"));
    }

    #[test]
    fn module_lists_are_checked_and_reach_the_server_as_given() {
        let modules: PreloadModules = "torch, numpy,torch.distributed".parse().unwrap();
        assert_eq!(modules.names(), words("torch numpy torch.distributed"));
        assert_eq!(modules.joined(), "torch,numpy,torch.distributed");
        for bad in ["", "torch,", "to rch", "1torch", "torch..nn", "-m"] {
            let e = bad.parse::<PreloadModules>().unwrap_err();
            assert!(e.contains("is not a Python module name"), "{bad}: {e}");
        }
    }
}
