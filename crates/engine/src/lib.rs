//! propulate-engine: the asynchronous island-model optimizer. The [`Optimizer`] front door, the
//! checked [`RunConfig`], the transports (MPI through rsmpi behind the default feature `mpi`, and
//! in-process threads), the driver (each worker root's loop, migration, a clean end), checkpoints
//! (manifest and journals, resume, reshape), observers (progress, per-rank logs, warnings), and the
//! results (best individuals, trial tables, `report.html`, `report`).
#![warn(missing_docs)]

pub mod config;
pub mod context;
pub mod driver;
pub mod error;
pub mod files;
pub mod interrupt;
pub mod journal;
pub mod launcher;
pub mod observe;
pub mod optimizer;
pub mod optuna_journal;
pub mod output;
mod panic_message;
pub mod report;
pub mod report_html;
pub mod result;
mod selection;
pub mod training_state;
pub mod transport;
pub mod warm_start;

pub use config::{RunConfig, Selection};
pub use context::WorkerContext;
pub use driver::{LossError, LossResult, LossValue, ObjectivesResult};
pub use error::{Error, Result};
pub use interrupt::Interrupted;
pub use observe::{Observer, ObserverMode};
pub use optimizer::{MAX_LOCAL_RANKS, Optimizer};
pub use result::{RunResult, StatesOnDisk};
pub use training_state::TrainingState;
