//! One evaluation on one rank of a worker: meet the worker's other ranks, start this rank's
//! process of the trial, follow it and the events the ranks share until every process has ended,
//! and return the outcome every rank agrees on.
//!
//! Every decision comes from the shared events, heard by every rank in the same order: a report
//! goes to `WorkerContext::report` on every rank at once (its early-stopping decision is
//! collective), and the first failure, stop or prune settles the outcome everywhere. A rank then
//! stops its own process group; the evaluation ends when every rank has published its process's
//! end, and a last barrier keeps the store up until every rank has heard everything.

use std::path::Path;
use std::process::ExitStatus;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use propulate_core::Params;
use propulate_core::early_stop::Decision;
use propulate_engine::files::trials::RESULT_FILE;
use propulate_engine::{LossResult, WorkerContext};

use crate::CommandTrial;
use crate::bus::Bus;
use crate::child::{last_bytes, log_tail};
use crate::command_line::params_json;
use crate::fork_server::{PreloadModules, PythonCommand, ServerSpec, with_server};
use crate::heard::{Event, Heard};
use crate::placement::{Placement, free_port};
use crate::process::{TrialProcess, failure_of, log_paths};
use crate::report_lines::{Line, parse_line, parse_result_file};

/// How a trial ended other than by finishing.
enum Outcome {
    /// The early stopper stopped it: its last reported value is its loss.
    Pruned,
    /// It failed, for this reason.
    Failed(String),
}

/// After its process has exited, how long a rank waits for the end of the process's stdout (held
/// open by something the program started) before it calls the process ended.
const STDOUT_GRACE: Duration = Duration::from_secs(2);

pub(crate) fn evaluate(trial: &CommandTrial, p: Params<'_>, ctx: &mut WorkerContext<'_>) -> LossResult {
    let dir = trial.trial_dir(ctx.trial);
    let rank_env = trial.rank_environment();
    // A preloaded Python is started (or found alive) before the ranks meet, so that its imports,
    // seconds on a busy node, do not count against the trial's time limit, which starts after
    // the meeting. Should it fail, the start below tries again and fails the trial with the reason.
    if let Some(modules) = &trial.settings.preload
        && let Ok(command) = PythonCommand::parse(trial.command())
    {
        let _ = with_server(&server_spec(trial, &command, modules, &rank_env), |_| Ok(()));
    }
    let (heard_tx, heard) = channel();
    let (bus, placement) = set_up(trial, &dir, ctx, &heard_tx)?;
    let values = p.values();
    let argv = trial.template.argv(&trial.space, values);
    let mut env: Vec<(String, String)> = placement.environment().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    env.extend([
        ("PROPULATE_PARAMS".into(), params_json(&trial.space, values)),
        ("PROPULATE_TRIAL".into(), ctx.trial.to_string()),
        ("PROPULATE_TRIAL_DIR".into(), dir.display().to_string()),
        ("PROPULATE_RESULT".into(), dir.join(RESULT_FILE).display().to_string()),
    ]);
    env.extend(training_environment(ctx));
    env.extend(rank_env.iter().cloned());
    let mut rank = RankLoop::new(trial, ctx.worker_rank, ctx.worker_size, bus);
    let started = match &trial.settings.preload {
        None => {
            TrialProcess::spawn(&argv, &env, &dir, ctx.worker_rank, heard_tx).map_err(|e| format!("{}: {e}", argv[0]))
        }
        Some(modules) => PythonCommand::parse(&argv).and_then(|command| {
            with_server(&server_spec(trial, &command, modules, &rank_env), |s| {
                TrialProcess::spawn_forked(s, &command, &env, &dir, ctx.worker_rank, heard_tx)
            })
        }),
    };
    match started {
        Ok(process) => rank.process = Some(process),
        Err(e) => {
            let failure = format!("could not be started ({e})");
            rank.publish(Event::Exited { rank: ctx.worker_rank, failure: Some(failure) });
            rank.exit_published = true;
        }
    }
    rank.follow(&heard, ctx);
    if let Some(process) = &rank.process {
        // Whatever the program left behind in its group goes with the trial.
        process.signal_group(libc::SIGKILL);
    }
    if let Some(comm) = ctx.worker_comm() {
        comm.barrier()?;
    }
    match rank.outcome {
        Some(Outcome::Failed(reason)) => Err(reason.into()),
        Some(Outcome::Pruned) => Ok(rank.last_value.unwrap_or(f64::INFINITY)),
        None if ctx.worker_rank == 0 => rank.result(&dir, ctx),
        // The root's value is recorded; the others agree on success or failure only.
        None => Ok(rank.last_value.unwrap_or(0.0)),
    }
}

/// Population-based training's variables: the state to load (`PROPULATE_RESTORE_FROM`, unset for
/// a fresh member), the directory to save into (`PROPULATE_SAVE_TO`), the steps done
/// (`PROPULATE_STEP`) and the steps to train (`PROPULATE_STEPS`). None for other propagators.
fn training_environment(ctx: &WorkerContext<'_>) -> Vec<(String, String)> {
    let Some(t) = ctx.training() else { return Vec::new() };
    let mut env = vec![
        ("PROPULATE_SAVE_TO".to_string(), t.save_to.display().to_string()),
        ("PROPULATE_STEP".to_string(), t.step.to_string()),
        ("PROPULATE_STEPS".to_string(), t.steps.to_string()),
    ];
    if let Some(from) = &t.restore_from {
        env.push(("PROPULATE_RESTORE_FROM".to_string(), from.display().to_string()));
    }
    env
}

/// What this rank's preloaded Python is: the trial's Python with `modules`, the rank's
/// environment, logging where the trial says.
fn server_spec<'a>(
    trial: &'a CommandTrial,
    command: &'a PythonCommand,
    modules: &'a PreloadModules,
    rank_env: &'a [(String, String)],
) -> ServerSpec<'a> {
    ServerSpec {
        python: &command.python,
        modules,
        env: rank_env,
        command: trial.command(),
        log: trial.preload_log.clone(),
    }
}

/// Rank 0 empties the trial's directory; the ranks meet, rank 0 picks the port of the trial's
/// rendezvous, and all agree that every rank is ready before any process starts, so that a rank
/// that could not set up fails the trial on every rank instead of leaving the others waiting.
fn set_up(
    trial: &CommandTrial,
    dir: &Path,
    ctx: &mut WorkerContext<'_>,
    heard: &Sender<Heard>,
) -> Result<(Bus, Placement), String> {
    let me = ctx.worker_rank;
    // Before the collectives below, so that no rank writes into the directory before it is emptied.
    let fresh = if me == 0 { fresh_dir(dir) } else { Ok(()) };
    if ctx.worker_size == 1 {
        fresh?;
        let port = free_port(true).map_err(|e| format!("no free port for the trial's rendezvous: {e}"))?;
        let host = propulate_engine::launcher::hostname();
        return Ok((Bus::Alone(heard.clone()), Placement::new(&[host], 0, port)));
    }
    let timeout = trial.settings.rendezvous_timeout;
    let mine = propulate_ddp::worker_store(ctx, 0, timeout).map_err(|e| e.to_string()).and_then(|mut ws| {
        let all_local = ws.hosts.iter().all(|h| *h == ws.hosts[0]);
        const PORT: &str = "trial/master_port";
        let port = if me == 0 {
            let port = fresh.and_then(|()| {
                free_port(all_local).map_err(|e| format!("no free port for the trial's rendezvous: {e}"))
            });
            let announced = port.as_ref().map_or_else(|e| format!("error {e}"), |p| p.to_string());
            ws.store.set(PORT, announced.as_bytes()).map_err(|e| e.to_string())?;
            port?
        } else {
            let announced = ws.store.get(PORT).map_err(|e| e.to_string())?;
            let announced = String::from_utf8_lossy(&announced).into_owned();
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            announced.parse::<u16>().map_err(|_| "rank 0 could not set up the trial".to_string())?
        };
        let placement = Placement::new(&ws.hosts, me, port);
        let bus = Bus::over_store(ws, ctx.worker_size, heard.clone()).map_err(|e| e.to_string())?;
        Ok((bus, placement))
    });
    let comm = ctx.worker_comm().expect("a multi-rank worker has a communicator");
    let problem = mine.as_ref().err().cloned().unwrap_or_default();
    let problems = comm.all_gather(problem.into_bytes()).map_err(|e| e.to_string())?;
    match problems.iter().position(|p| !p.is_empty()) {
        None => mine,
        Some(rank) => Err(format!(
            "the trial could not be set up on rank {rank} of the worker: {}",
            String::from_utf8_lossy(&problems[rank])
        )),
    }
}

/// An empty directory at `dir`: an interrupted trial that runs again after a resume starts afresh
/// (its old result file must not count).
fn fresh_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("cannot empty the trial directory {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the trial directory {}: {e}", dir.display()))
}

/// One rank's view of the trial while its processes run.
struct RankLoop<'t> {
    trial: &'t CommandTrial,
    me: usize,
    bus: Bus,
    process: Option<TrialProcess>,
    /// How this rank's process ended, and when that was heard.
    status: Option<(Result<ExitStatus, String>, Instant)>,
    stdout_closed: bool,
    exit_published: bool,
    /// Which ranks' processes have ended (published).
    ended: Vec<bool>,
    outcome: Option<Outcome>,
    /// When this rank asked its process group to stop (SIGTERM), and whether SIGKILL followed.
    stopping_since: Option<Instant>,
    killed: bool,
    /// The last value reported by rank 0's process.
    last_value: Option<f64>,
    /// Rank 0: the loss its process printed, and a `propulate:` line it could not read.
    stdout_loss: Option<f64>,
    /// Rank 0: its process's last constraints line, read or why it could not be.
    stdout_constraints: Option<Result<Vec<f64>, String>>,
    malformed: Option<String>,
    /// Rank 0: when it stops the trial for its time limit, and for ranks still running after its
    /// own process ended well; whether it has.
    deadline: Option<Instant>,
    finish_deadline: Option<Instant>,
    stop_published: bool,
    /// The worker's events can no longer be heard.
    lost: bool,
}

impl<'t> RankLoop<'t> {
    fn new(trial: &'t CommandTrial, me: usize, ranks: usize, bus: Bus) -> Self {
        RankLoop {
            trial,
            me,
            bus,
            process: None,
            status: None,
            stdout_closed: false,
            exit_published: false,
            ended: vec![false; ranks],
            outcome: None,
            stopping_since: None,
            killed: false,
            last_value: None,
            stdout_loss: None,
            stdout_constraints: None,
            malformed: None,
            deadline: trial.settings.timeout.filter(|_| me == 0).map(|t| Instant::now() + t),
            finish_deadline: None,
            stop_published: false,
            lost: false,
        }
    }

    /// Until every rank's process has ended (or the events are lost and this one has ended).
    fn follow(&mut self, heard: &Receiver<Heard>, ctx: &mut WorkerContext<'_>) {
        while !(self.ended.iter().all(|&e| e) || self.lost && self.process_over()) {
            let next = match self.wake_at() {
                Some(at) => heard.recv_timeout(at.saturating_duration_since(Instant::now())),
                None => heard.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match next {
                Ok(Heard::Line(line)) if self.me == 0 => self.read_line(&line),
                Ok(Heard::Line(_)) | Err(RecvTimeoutError::Timeout) => {}
                Ok(Heard::StdoutClosed) => self.stdout_closed = true,
                Ok(Heard::Exited(status)) => self.status = Some((status, Instant::now())),
                Ok(Heard::Bus(event)) => self.take(event, ctx),
                Ok(Heard::BusLost(e)) => {
                    self.lost = true;
                    self.settle(Outcome::Failed(format!("lost touch with the worker's other ranks: {e}")));
                }
                // Every sender is gone: nothing more can come (this rank holds none after a failed start).
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.on_time();
        }
    }

    /// The next moment something is due without an input.
    fn wake_at(&self) -> Option<Instant> {
        let stdout_grace = match &self.status {
            Some((_, at)) if !self.exit_published => Some(*at + STDOUT_GRACE),
            _ => None,
        };
        let kill = self.stopping_since.filter(|_| !self.killed && self.status.is_none());
        let kill = kill.map(|at| at + self.trial.settings.kill_grace);
        let stops = [self.deadline, self.finish_deadline].into_iter().flatten().filter(|_| !self.stop_published);
        [stdout_grace, kill].into_iter().flatten().chain(stops).min()
    }

    /// Rank 0 reads its process's stdout.
    fn read_line(&mut self, line: &str) {
        match parse_line(line) {
            Line::Step { step, value } if self.outcome.is_none() && !self.stop_published => {
                self.publish(Event::Report { step, value });
            }
            Line::Loss(x) => self.stdout_loss = Some(x),
            Line::Constraints(c) => self.stdout_constraints = Some(Ok(c)),
            Line::BadConstraints(m) => self.stdout_constraints = Some(Err(m)),
            Line::Malformed(m) => self.malformed = Some(m),
            Line::Step { .. } | Line::Other => {}
        }
    }

    /// An event of the worker: every rank takes it alike.
    fn take(&mut self, event: Event, ctx: &mut WorkerContext<'_>) {
        match event {
            Event::Report { step, value } if self.outcome.is_none() => {
                self.last_value = Some(value);
                match ctx.report(step, value) {
                    Ok(Decision::Continue) => {}
                    Ok(Decision::Stop) => self.settle(Outcome::Pruned),
                    Err(e) => self.settle(Outcome::Failed(format!("its report at step {step}: {e}"))),
                }
            }
            Event::Report { .. } => {}
            Event::Exited { rank, failure } => {
                if let Some(seen) = self.ended.get_mut(rank) {
                    *seen = true;
                }
                match failure {
                    Some(how) => {
                        let who = if self.ended.len() == 1 {
                            "the process".to_string()
                        } else {
                            format!("rank {rank}'s process")
                        };
                        self.settle(Outcome::Failed(format!("{who} {how}")));
                    }
                    None if rank == 0 && self.me == 0 => {
                        self.finish_deadline = Some(Instant::now() + self.trial.settings.finish_grace);
                    }
                    None => {}
                }
            }
            Event::Stop { reason } => self.settle(Outcome::Failed(reason)),
        }
    }

    /// The first outcome counts; this rank's process is asked to stop.
    fn settle(&mut self, outcome: Outcome) {
        if self.outcome.is_some() {
            return;
        }
        self.outcome = Some(outcome);
        if let (Some(process), None, None) = (&self.process, &self.status, self.stopping_since) {
            process.signal_group(libc::SIGTERM);
            self.stopping_since = Some(Instant::now());
        }
    }

    /// What is due by the clock: publish this process's end, rank 0's stops, SIGKILL.
    fn on_time(&mut self) {
        let now = Instant::now();
        if let (Some((status, at)), false) = (&self.status, self.exit_published)
            && (self.stdout_closed || now >= *at + STDOUT_GRACE)
        {
            let failure = failure_of(status).map(|how| {
                let tail = self.process.as_ref().map(|p| log_tail(&p.stderr_path)).unwrap_or_default();
                if tail.is_empty() { how } else { format!("{how}; its stderr ends: {tail}") }
            });
            self.exit_published = true;
            self.publish(Event::Exited { rank: self.me, failure });
        }
        if !self.stop_published && self.outcome.is_none() {
            let running: Vec<String> =
                self.ended.iter().enumerate().filter(|(_, e)| !**e).map(|(r, _)| r.to_string()).collect();
            let reason = if self.deadline.is_some_and(|d| now >= d) {
                let limit = self.trial.settings.timeout.unwrap_or_default().as_secs_f64();
                // Which ranks hung, and what the first of them that wrote to stderr wrote last (the trial's
                // directory holds every rank's, where the ranks share a file system).
                let who =
                    if self.ended.len() > 1 { format!(" (rank(s) {})", running.join(", ")) } else { String::new() };
                let tail = running.iter().find_map(|r| {
                    let dir = self.process.as_ref()?.stderr_path.parent()?;
                    let tail = log_tail(&log_paths(dir, r.parse().ok()?).1);
                    (!tail.is_empty()).then(|| format!("; rank {r}'s stderr ends: {tail}"))
                });
                Some(format!(
                    "timed out: still running after {limit} s (--trial-timeout){who}{}",
                    tail.unwrap_or_default()
                ))
            } else if self.finish_deadline.is_some_and(|d| now >= d) {
                Some(format!(
                    "the process of rank(s) {} still ran {} s after rank 0's had ended",
                    running.join(", "),
                    self.trial.settings.finish_grace.as_secs_f64()
                ))
            } else {
                None
            };
            if let Some(reason) = reason {
                self.stop_published = true;
                self.publish(Event::Stop { reason });
            }
        }
        if let (Some(since), Some(process), None, false) =
            (self.stopping_since, &self.process, &self.status, self.killed)
            && now >= since + self.trial.settings.kill_grace
        {
            process.signal_group(libc::SIGKILL);
            self.killed = true;
        }
    }

    fn process_over(&self) -> bool {
        self.process.is_none() || self.status.is_some()
    }

    fn publish(&mut self, event: Event) {
        if let Err(e) = self.bus.publish(&event) {
            self.lost = true;
            self.settle(Outcome::Failed(format!("could not tell the worker's other ranks: {e}")));
        }
    }

    /// Rank 0: the constraints of its process's last constraints line, if it printed one; one it
    /// could not read fails the evaluation (taken for unconstrained, an infeasible configuration
    /// could become the run's best).
    fn line_constraints(&self, ctx: &mut WorkerContext<'_>) -> Result<(), String> {
        match &self.stdout_constraints {
            Some(Ok(c)) => ctx.set_constraints(c),
            Some(Err(m)) => return Err(format!("its constraints line cannot be read: {m}")),
            None => {}
        }
        Ok(())
    }

    /// Rank 0, when its process gave no result: a hint when it printed its loss line to stderr
    /// (Python's logging and `print(..., file=sys.stderr)` do), which is not read.
    fn loss_on_stderr(&self) -> Option<String> {
        let stderr = last_bytes(&self.process.as_ref()?.stderr_path, 64 * 1024);
        stderr
            .lines()
            .any(|l| matches!(parse_line(l), Line::Loss(_)))
            .then(|| " (its 'propulate: loss=' line went to stderr, which is not read: print it to stdout)".to_string())
    }

    /// Rank 0, when every process ended well: the result file, else the loss line of its stdout.
    fn result(&self, dir: &Path, ctx: &mut WorkerContext<'_>) -> LossResult {
        let path = dir.join(RESULT_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let read = parse_result_file(&path, &text, &self.trial.settings.objectives)?;
                for (name, value) in read.metrics {
                    ctx.record(&name, value);
                }
                // The file's constraints, else a constraints line's.
                match &read.constraints {
                    Some(c) => ctx.set_constraints(c),
                    None => self.line_constraints(ctx)?,
                }
                Ok(read.loss)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !self.trial.settings.objectives.is_empty() => {
                Err(format!(
                    "no result: with --objectives rank 0's process writes them into $PROPULATE_RESULT \
                     ({}), and it wrote no such file",
                    path.display()
                )
                .into())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match (self.stdout_loss, &self.malformed) {
                (Some(loss), _) => {
                    self.line_constraints(ctx)?;
                    Ok(loss)
                }
                (None, malformed) => Err(format!(
                    "no result: rank 0's process wrote no $PROPULATE_RESULT and printed no 'propulate: loss=<number>' line{}",
                    malformed
                        .as_ref()
                        .map(|m| format!(" (it printed {m})"))
                        .or_else(|| self.loss_on_stderr())
                        .or_else(|| self.last_value.map(|v| format!(
                            " (its 'propulate: step=<n> loss=<number>' lines, the last {v}, are intermediate values \
                             for early stopping; the result is a last line 'propulate: loss=<number>')"
                        )))
                        .unwrap_or_default()
                )
                .into()),
            },
            Err(e) => Err(format!("cannot read the result file {}: {e}", path.display()).into()),
        }
    }
}
