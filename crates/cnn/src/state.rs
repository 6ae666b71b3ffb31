//! The CNN's training state for population-based training, saved and loaded with Burn's records
//! (burnpack files): the network's parameters (`model.bpk`, their identities included, which the
//! optimizer's state is keyed by) and Adadelta's running averages (`optimizer.bpk`). The learning
//! rate's schedule needs no file: it is the evaluation's `lr` and `gamma`, advanced by the epochs
//! the state has trained (the step the run gives with it), so that an explored learning rate
//! applies from the next epoch on.

use std::path::Path;

use burn::module::Module;
use burn::optim::ModuleOptimizer;

use propulate_engine::files::states::{MODEL_FILE, OPTIMIZER_FILE};

use crate::error::{Error, Result};
use crate::model::Net;

/// `model` and `optim` as the state in `dir` left them. A state of another network (another
/// number of convolutions) or a damaged file is an error naming the file.
pub fn load(dir: &Path, model: Net, optim: ModuleOptimizer) -> Result<(Net, ModuleOptimizer)> {
    let bad = |file: &str, e: &dyn std::fmt::Display| {
        Error::InvalidConfig(format!("cannot load the training state {}: {e}", dir.join(file).display()))
    };
    let record = burn::store::ModuleRecord::load(dir.join(MODEL_FILE)).map_err(|e| bad(MODEL_FILE, &e))?;
    let model = model.try_load_record(record).map_err(|e| bad(MODEL_FILE, &e))?;
    let optim = optim.load(dir.join(OPTIMIZER_FILE)).map_err(|e| bad(OPTIMIZER_FILE, &e))?;
    Ok((model, optim))
}

/// Save `model` and `optim` into `dir` (which exists).
pub fn save(dir: &Path, model: &Net, optim: &ModuleOptimizer) -> Result<()> {
    let bad = |file: &str, e: &dyn std::fmt::Display| {
        Error::InvalidConfig(format!("cannot save the training state into {}: {e}", dir.join(file).display()))
    };
    model.clone().save_file(dir.join(MODEL_FILE)).map_err(|e| bad(MODEL_FILE, &e))?;
    optim.save(dir.join(OPTIMIZER_FILE)).map_err(|e| bad(OPTIMIZER_FILE, &e))
}
