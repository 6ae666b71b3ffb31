//! propulate-trial: a user's own program as the loss of a propulate-rs search. For every
//! evaluation, each rank of the worker starts one process of the program, and the worker's ranks
//! form one distributed job: the processes get the environment torchrun would give them (`RANK`,
//! `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`), so that
//! `torch.distributed.init_process_group("env://")` just works, plus the candidate
//! (`PROPULATE_PARAMS`, and as arguments) and where to put the result (`PROPULATE_RESULT`).
//!
//! - `command_line`: the command with the candidate's values filled in.
//! - `placement`: where each process sits in the trial's job (ranks, hosts, port, GPUs).
//! - `process`: one process of the trial: its own process group, killed with its rank, logs.
//! - `child`: what every process a rank starts gets (death with its rank, its log's tail).
//! - `heard`: what a rank's evaluation loop hears (its process's output and end, the worker's
//!   events), so that the modules sending it do not depend on the loop.
//! - `report_lines`: what the program tells us (`propulate: step=.. loss=..`, the result file).
//! - `bus`: the events the worker's ranks share while their processes run.
//! - `fork_server`: `--preload`, a Python trial's processes forked from one that imported its modules.
//! - `evaluation`: one evaluation on one rank, from set-up to the agreed outcome.
//! - `program_check`: whether the program can be started at all, checked at set-up.
//!
//! ```no_run
//! use std::path::PathBuf;
//! use propulate_core::SearchSpace;
//! use propulate_trial::{CommandTrial, TrialSettings};
//!
//! let space = SearchSpace::from_toml_file("space.toml".as_ref()).unwrap();
//! let argv: Vec<String> = ["python", "train.py", "--epochs", "5"].map(String::from).into();
//! let trial = CommandTrial::new(argv, space, TrialSettings::new(PathBuf::from("trials"))).unwrap();
//! // The loss closure of `Optimizer::run`: `|p, ctx| trial.evaluate(p, ctx)`.
//! ```
#![warn(missing_docs)]

mod bus;
mod child;
mod command_line;
mod evaluation;
mod fork_server;
mod heard;
mod launcher_env;
pub mod placement;
mod process;
mod program_check;
pub mod report_lines;

use std::path::PathBuf;
use std::time::Duration;

use propulate_core::individual::IndividualId;
use propulate_core::{Params, SearchSpace};
use propulate_engine::files::trials::{preload_log_name, trial_dir_name};
use propulate_engine::{LossResult, WorkerContext};

pub use command_line::CommandTemplate;
pub use fork_server::PreloadModules;

/// A set-up error of a command trial (the evaluation's own failures are recorded, not returned).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The command or its settings cannot work.
    #[error("{0}")]
    InvalidConfig(String),
}

/// How trials run.
#[derive(Debug, Clone)]
pub struct TrialSettings {
    /// Each trial gets a directory of its own in here (`island<i>-worker<w>-gen<g>`, emptied when
    /// an interrupted trial runs again): the per-rank logs and the result file.
    pub trials_dir: PathBuf,
    /// A trial still running after this long is stopped and recorded as failed.
    pub timeout: Option<Duration>,
    /// GPUs each process uses (`CUDA_VISIBLE_DEVICES`), assigned as the CNN task assigns them.
    pub gpus_per_rank: usize,
    /// Longest wait for the worker's ranks to meet before a trial starts.
    pub rendezvous_timeout: Duration,
    /// Once rank 0's process has ended well, how long the other ranks' processes have to end too
    /// before they are stopped (a process hanging in a collective its peer left).
    pub finish_grace: Duration,
    /// Between the polite stop (SIGTERM to the trial's process group) and SIGKILL.
    pub kill_grace: Duration,
    /// The names of the run's objectives, when it has several: the result file must hold each.
    pub objectives: Vec<String>,
    /// Python modules to import once per rank (`--preload`): the trial's processes are then forked
    /// from that Python instead of started afresh; the command must be `PYTHON [-u] SCRIPT ...` or
    /// `PYTHON [-u] -m MODULE ...`. `None`: every process is started as the command says.
    pub preload: Option<PreloadModules>,
}

impl TrialSettings {
    /// The defaults, with trial directories in `trials_dir`.
    pub fn new(trials_dir: PathBuf) -> Self {
        TrialSettings {
            trials_dir,
            timeout: None,
            gpus_per_rank: 1,
            rendezvous_timeout: Duration::from_secs(120),
            finish_grace: Duration::from_secs(60),
            kill_grace: Duration::from_secs(5),
            objectives: Vec::new(),
            preload: None,
        }
    }
}

/// A user's program as a trial: every rank of a worker runs one process of `argv` per evaluation.
pub struct CommandTrial {
    template: CommandTemplate,
    space: SearchSpace,
    settings: TrialSettings,
    /// This rank's `CUDA_VISIBLE_DEVICES` for its processes (`None`: leave the environment's).
    cuda_devices: Option<String>,
    /// `OMP_NUM_THREADS` for the processes when the environment sets none: this node's cores
    /// shared by its ranks, as torchrun and the CNN task do.
    omp_threads: usize,
    /// Where this rank's preloaded Python logs (`--preload`): fixed for the process, so named once.
    preload_log: PathBuf,
}

impl CommandTrial {
    /// Check the command against `space` and the GPU request against this node.
    pub fn new(argv: Vec<String>, space: SearchSpace, mut settings: TrialSettings) -> Result<Self, Error> {
        // Absolute, so that a program that changes its directory still finds its files.
        settings.trials_dir = std::path::absolute(&settings.trials_dir).map_err(|e| {
            Error::InvalidConfig(format!("the trials directory {}: {e}", settings.trials_dir.display()))
        })?;
        // Else every trial would fail on it, the whole budget spent (the directory itself is made
        // by the first trial: a checkpoint's is made with the checkpoint).
        if settings.trials_dir.exists() && !settings.trials_dir.is_dir() {
            return Err(Error::InvalidConfig(format!(
                "the trials directory {} is not a directory (--trials-dir, or trials/ in the checkpoint or --out)",
                settings.trials_dir.display()
            )));
        }
        let template = CommandTemplate::new(argv, &space)?;
        if let Some(modules) = &settings.preload {
            let python = fork_server::PythonCommand::parse(template.words()).map_err(Error::InvalidConfig)?.python;
            fork_server::check_modules(&python, modules).map_err(Error::InvalidConfig)?;
        }
        program_check::check_program(&template.words()[0], std::env::var_os("PATH").as_deref())
            .map_err(Error::InvalidConfig)?;
        if let Some(t) = settings.timeout
            && t.is_zero()
        {
            return Err(Error::InvalidConfig("--trial-timeout must be more than 0 seconds".into()));
        }
        let launch = propulate_engine::launcher::LaunchInfo::detect();
        let cuda_devices = launch.cuda_visible_devices(settings.gpus_per_rank).map_err(Error::InvalidConfig)?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let omp_threads = (cores / launch.local_size.unwrap_or(1).max(1)).max(1);
        let preload_log =
            settings.trials_dir.join(preload_log_name(&propulate_engine::launcher::hostname(), std::process::id()));
        Ok(CommandTrial { template, space, settings, cuda_devices, omp_threads, preload_log })
    }

    /// What a researcher should know before the run starts: the parameters the command's
    /// placeholders leave out, and placeholders that name no parameter (a misspelling).
    pub fn notices(&self) -> Vec<String> {
        let mut notices = Vec::new();
        let unnamed = self.template.unnamed(&self.space);
        if !unnamed.is_empty() {
            notices.push(format!(
                "the trial command has placeholders but none for {}: searched, they reach the program only in \
                 PROPULATE_PARAMS (without placeholders every parameter is appended as --name=value)",
                unnamed.join(", ")
            ));
        }
        let strays = self.template.strays(&self.space);
        if !strays.is_empty() {
            let braced: Vec<String> = strays.iter().map(|s| format!("{{{s}}}")).collect();
            let names: Vec<&str> = self.space.params().iter().map(|p| p.name.as_str()).collect();
            notices.push(format!(
                "the trial command holds {}, which names no parameter of the search space (it has {}): the program \
                 gets it as written",
                braced.join(", "),
                names.join(", ")
            ));
        }
        notices
    }

    /// The environment every process of this rank's trials gets besides the trial's own: the GPUs,
    /// and the threads when the environment sets none (a preloaded Python is started with it, as
    /// its modules may read it at import).
    fn rank_environment(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if let Some(devices) = &self.cuda_devices {
            env.push(("CUDA_VISIBLE_DEVICES".into(), devices.clone()));
        }
        if std::env::var_os("OMP_NUM_THREADS").is_none() {
            env.push(("OMP_NUM_THREADS".into(), self.omp_threads.to_string()));
        }
        env
    }

    /// The search space the command is tuned over.
    pub fn space(&self) -> &SearchSpace {
        &self.space
    }

    /// The command as given.
    pub fn command(&self) -> &[String] {
        self.template.words()
    }

    /// The directory of the trial `id`.
    pub fn trial_dir(&self, id: IndividualId) -> PathBuf {
        self.settings.trials_dir.join(trial_dir_name(id))
    }

    /// Run one evaluation of `p` on this rank (collective over the worker's ranks, as every loss):
    /// the loss rank 0's process reports; a failed, timed-out or unreadable trial as an error
    /// (recorded as a failed evaluation), a trial the early stopper stopped as its last value.
    pub fn evaluate(&self, p: Params<'_>, ctx: &mut WorkerContext<'_>) -> LossResult {
        evaluation::evaluate(self, p, ctx)
    }
}

#[cfg(test)]
mod layering {
    /// Each module's source, to read which of its siblings it imports.
    const MODULES: [(&str, &str); 11] = [
        ("bus", include_str!("bus.rs")),
        ("child", include_str!("child.rs")),
        ("command_line", include_str!("command_line.rs")),
        ("evaluation", include_str!("evaluation.rs")),
        ("fork_server", include_str!("fork_server.rs")),
        ("heard", include_str!("heard.rs")),
        ("launcher_env", include_str!("launcher_env.rs")),
        ("placement", include_str!("placement.rs")),
        ("process", include_str!("process.rs")),
        ("program_check", include_str!("program_check.rs")),
        ("report_lines", include_str!("report_lines.rs")),
    ];

    /// The modules form layers: no module imports one that (through others) imports it back, so
    /// each can be read, and tested, from the ones below it.
    #[test]
    fn the_modules_import_each_other_without_a_circle() {
        let imports = |source: &str| -> Vec<&str> {
            MODULES.iter().map(|(name, _)| *name).filter(|m| source.contains(&format!("crate::{m}::"))).collect()
        };
        // Depth-first from every module; a module met again on the current path closes a circle.
        fn visit<'a>(m: &'a str, path: &mut Vec<&'a str>, imports: &dyn Fn(&'a str) -> Vec<&'a str>) {
            if let Some(start) = path.iter().position(|p| *p == m) {
                panic!("an import circle: {} -> {m}", path[start..].join(" -> "));
            }
            path.push(m);
            for next in imports(m) {
                visit(next, path, imports);
            }
            path.pop();
        }
        let of = |m: &str| imports(MODULES.iter().find(|(name, _)| *name == m).expect("listed").1);
        let found = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src")).unwrap().count();
        assert_eq!(found, MODULES.len() + 2, "a module is missing from the list (lib.rs and fork_server.py aside)");
        for (name, _) in MODULES {
            visit(name, &mut Vec::new(), &of);
        }
        assert_eq!(of("evaluation").len(), 8, "the loop uses every module but program_check");
    }
}
