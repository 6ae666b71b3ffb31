//! A run resolved once: the flags and the files they name become one [`Plan`] (the task, the run
//! configuration with the propagator the flags ask for, which the run resolves against its
//! checkpoint), which set-up and the end of the run both read. Nothing is derived from disk again: the files are read once, by
//! one rank ([`SetupFiles`]), and handed to the others, so that every rank plans from the same
//! bytes, and a file only one rank can read (a fifo, a path that differs between nodes) cannot
//! split the job.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use propulate::config::{CheckpointSettings, RunConfig};
use propulate::topology::Topology;
use propulate::{Error, Result, TopologySpec};

use super::args::RunArgs;
use super::task::Task;

/// How long set-up waits for a file that is not a regular one (a fifo nobody writes to).
const SPECIAL_FILE_WAIT: Duration = Duration::from_secs(10);

/// What the flags name on disk.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct SetupFiles {
    /// The `--topology` and `--space` flags of the rank that read the files, which every rank
    /// must share (an MPMD job can give ranks different flags).
    pub read_for: (String, Option<PathBuf>),
    /// The text of `--space FILE`.
    pub space: Option<String>,
    /// The text of `--topology FILE` (not for `ring` or `fully-connected`).
    pub topology: Option<String>,
    /// The text of `--enqueue FILE`.
    #[serde(default)]
    pub enqueue: Option<String>,
}

impl SetupFiles {
    /// Read what `args` names.
    pub fn read(args: &RunArgs) -> Result<SetupFiles> {
        SetupFiles::read_or_say_why(args).map_err(Error::InvalidConfig)
    }

    /// [`SetupFiles::read`], its error the bare message (the same on every rank it is sent to).
    fn read_or_say_why(args: &RunArgs) -> std::result::Result<SetupFiles, String> {
        let space = match &args.trial.space {
            Some(path) => {
                Some(read_setup_file(path).map_err(|e| format!("cannot read the space file {}: {e}", path.display()))?)
            }
            None => None,
        };
        let topology = match args.topology.as_str() {
            "fully-connected" | "full" | "ring" => None,
            path => Some(read_setup_file(Path::new(path)).map_err(|e| {
                format!("--topology '{path}' is neither fully-connected, ring nor a readable matrix file: {e}")
            })?),
        };
        let enqueue = match &args.enqueue {
            Some(path) => {
                Some(read_setup_file(path).map_err(|e| format!("--enqueue {}: cannot read it: {e}", path.display()))?)
            }
            None => None,
        };
        Ok(SetupFiles { read_for: (args.topology.clone(), args.trial.space.clone()), space, topology, enqueue })
    }

    /// Whether these files are the ones `args` name: a rank given another `--topology` or
    /// `--space` than the rank that read them is an error naming both.
    pub fn check_read_for(&self, args: &RunArgs) -> Result<()> {
        let (topology, space) = &self.read_for;
        if *topology != args.topology {
            return Err(Error::InvalidConfig(format!(
                "--topology {} differs from rank 0's --topology {topology}: give every rank the same flags",
                args.topology
            )));
        }
        if *space != args.trial.space {
            let show = |p: &Option<PathBuf>| p.as_ref().map_or("(none)".into(), |p| p.display().to_string());
            return Err(Error::InvalidConfig(format!(
                "--space {} differs from rank 0's --space {}: give every rank the same flags",
                show(&args.trial.space),
                show(space)
            )));
        }
        Ok(())
    }

    /// [`SetupFiles::read`] on rank 0, handed to every rank of `world`: every rank returns the
    /// same files, or the same error.
    pub fn read_once(args: &RunArgs, world: &mut dyn propulate::transport::Communicator) -> Result<SetupFiles> {
        let mut bytes = Vec::new();
        if world.rank() == 0 {
            let read = SetupFiles::read_or_say_why(args);
            bytes = serde_json::to_vec(&read).expect("set-up files serialize");
        }
        world.broadcast(0, &mut bytes)?;
        let read: std::result::Result<SetupFiles, String> = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Transport(format!("the set-up files from rank 0 do not decode: {e}")))?;
        read.map_err(Error::InvalidConfig)
    }
}

/// The text of a file a flag names. A regular file is read at once; anything else (a fifo, a
/// device) gets [`SPECIAL_FILE_WAIT`] to deliver, so that set-up cannot block for ever.
fn read_setup_file(path: &Path) -> std::io::Result<String> {
    if std::fs::metadata(path)?.is_file() {
        return std::fs::read_to_string(path);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = path.to_path_buf();
    // Opening a fifo blocks until someone writes; the thread is left behind if nobody does.
    std::thread::spawn(move || {
        let read = std::fs::File::open(&owned).and_then(|mut f| {
            let mut text = String::new();
            f.read_to_string(&mut text).map(|_| text)
        });
        let _ = tx.send(read);
    });
    rx.recv_timeout(SPECIAL_FILE_WAIT).unwrap_or_else(|_| {
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("not a regular file, and nothing came in {} s", SPECIAL_FILE_WAIT.as_secs()),
        ))
    })
}

/// Everything a run is, resolved.
pub(crate) struct Plan {
    pub task: Box<dyn Task>,
    /// The run configuration; the propagator as the flags ask for it (`config.propagator_choice`),
    /// which the run resolves (`RunResult::propagator`).
    pub config: RunConfig,
}

impl Plan {
    /// The plan for a job of `world_size` ranks running `task`, from `args` and `files`.
    pub fn new(args: &RunArgs, task: Box<dyn Task>, files: &SetupFiles, world_size: usize) -> Result<Plan> {
        let islands = args.layout.island_spec();
        let topology = match (args.topology.as_str(), &files.topology) {
            ("ring", _) => TopologySpec::Ring,
            (_, Some(text)) => TopologySpec::Matrix(
                Topology::parse_matrix(text)
                    .map_err(|e| Error::InvalidConfig(format!("--topology {}: {e}", args.topology)))?,
            ),
            _ => TopologySpec::FullyConnected,
        };
        let ranks_per_worker =
            args.layout.ranks_per_worker.unwrap_or_else(|| task.default_ranks_per_worker(world_size));
        let checkpoint = args.checkpoint_dir(&task.name());
        if let Some(ck) = &checkpoint {
            let trials = ck.join(propulate::files::trials::TRIALS_DIR);
            let mut places = Vec::new();
            if let Some(out) = &args.results.out {
                places.push(("--out", out.as_path(), Some(ck.as_path())));
            }
            if let Some(dir) = &args.trial.trials_dir {
                places.push(("--trials-dir", dir.as_path(), Some(trials.as_path())));
            }
            super::inside_checkpoint::refuse_inside(ck, &places).map_err(Error::InvalidConfig)?;
        }
        let enqueued = match (&args.enqueue, &files.enqueue) {
            (Some(path), Some(text)) => propulate::enqueued::parse(text, &path.display().to_string())?,
            _ => Vec::new(),
        };
        let objectives = super::objectives::declared(args, task.as_ref())?;
        // The task's default may model one loss (command trials: the GP); several objectives
        // breed genetically unless --propagator says otherwise.
        let default = if objectives.len() >= 2 { "ga" } else { task.default_propagator() };
        // Population-based training with a budget per member: the members end the run, not a
        // count of generations, unless one is given.
        let members_end_it = args.breeding.name.as_deref() == Some("pbt") && args.breeding.gives("pbt-steps");
        let default_generations =
            if members_end_it { propulate::config::MAX_GENERATIONS } else { task.default_generations() };
        let config = RunConfig {
            generations: args.generations.unwrap_or(default_generations),
            generations_by_default: args.generations.is_none(),
            islands,
            ranks_per_worker,
            migration_probability: args.migration_probability,
            pollination: args.pollination,
            shared_budget: args.shared_budget,
            topology,
            // Resolved by the run against the checkpoint it resumes (rank 0 reads the manifest).
            propagator_choice: Some(args.breeding.choice(default).keeping_fixed(task.pbt_fixed())),
            objectives,
            seed: args.seed,
            top_n: args.results.top_n,
            checkpoint: checkpoint.map(|dir: PathBuf| CheckpointSettings {
                dir,
                fsync: args.fsync,
                extra: task.checkpoint_facts(),
                reshape_from: args.reshape_from.clone(),
                warm_start: args.warm_start.clone(),
            }),
            // Only the result files (--out) list every evaluation; the end table has its totals.
            gather_trials: args.results.out.is_some(),
            enqueued,
            ..RunConfig::default()
        };
        Ok(Plan { task, config })
    }
}
