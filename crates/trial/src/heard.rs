//! What a rank's evaluation loop hears while its process of a trial runs: its process's output
//! and end (from the readers in `process` and `fork_server`) and the worker's events (from `bus`).
//! The messages only, so that every module that sends them depends on this one and none on the
//! loop (`evaluation`) that receives them.

use std::process::ExitStatus;

use serde::{Deserialize, Serialize};

/// What a rank's evaluation loop hears.
pub(crate) enum Heard {
    /// A line of this rank's process's stdout.
    Line(String),
    /// That stdout has ended.
    StdoutClosed,
    /// This rank's process has ended.
    Exited(Result<ExitStatus, String>),
    /// An event of the worker's ranks.
    Bus(Event),
    /// The worker's events can no longer be heard.
    BusLost(String),
}

/// Something that happened to the trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Event {
    /// Rank 0's process reported an intermediate value.
    Report { step: u64, value: f64 },
    /// The process of worker rank `rank` has ended (`failure`: how, with its log's tail).
    Exited { rank: usize, failure: Option<String> },
    /// Rank 0 stops the trial (time limit, a rank hanging after the others ended).
    Stop { reason: String },
}
