//! `--early-stop NAME`: the stopper of the tasks that train (the CNN task, command trials), with
//! its defaults.

use propulate::early_stop::{self, EarlyStopper, HalvingStopper, LogLinearStopper, StaticStopper, StopSettings};
use propulate::{CoreError, Error, Result};

/// The stopper `--early-stop` names (`none`: no stopper).
pub fn early_stopper(name: &str) -> Result<Option<Box<dyn EarlyStopper>>> {
    let default = match name {
        "none" => return Ok(None),
        "static" => StaticStopper::default().settings,
        "log-linear" => LogLinearStopper::default().settings,
        "halving" => HalvingStopper::default().settings,
        _ => StopSettings::default(),
    };
    match early_stop::by_name(name, default) {
        Ok(stopper) => Ok(Some(stopper)),
        Err(CoreError::UnknownName { name, valid, .. }) => {
            Err(Error::InvalidConfig(format!("--early-stop {name} is not a known early stopper; valid: none, {valid}")))
        }
        Err(e) => Err(e.into()),
    }
}
