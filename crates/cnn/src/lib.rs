//! propulate-cnn, the CNN task: the reference tutorial's network trained data-parallel on
//! MNIST-format data inside a loss closure, returning its validation loss.
//!
//! - `idx`: MNIST-format files (plain or gzipped), Fashion-MNIST from Debian by default.
//! - `model`: the network (convolutions and activation as hyperparameters).
//! - `train`: the recipe (Adadelta, step schedule, NLL), one data-parallel step, early stopping,
//!   a global validation loss.
//! - `adadelta`: the optimizer, in Burn's optimizer API; `backend`: flex or libtorch, CPU or CUDA;
//!   `allocator`: malloc settings that keep a step's freed memory for the next.
//! - `task`: the reference's search space and one evaluation as every rank of a worker runs it.
//! - `state`: the training state population-based training saves and continues (Burn records).

/// The Burn version this crate trains with, for programs that build tensors for it.
pub use burn;

pub mod adadelta;
pub mod allocator;
pub mod backend;
pub mod error;
pub mod idx;
pub mod model;
pub mod state;
pub mod task;
pub mod train;

pub use adadelta::Adadelta;
pub use backend::{Backend, Compute};
pub use error::{Error, Result};
pub use idx::{DEBIAN_FASHION_MNIST, ImageSet, Split};
pub use model::{Activation, Net};
pub use task::{CnnTask, DeviceChoice, LrScale, Placement, hyperparameters, search_space, search_space_with};
pub use train::{Hyperparameters, TrainOutcome, TrainSettings, Training, step, train};
