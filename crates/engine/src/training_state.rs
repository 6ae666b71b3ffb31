//! Training states of population-based training, as directories under the checkpoint: every
//! evaluation saves its member's state into a directory of its own, and the evaluation that
//! continues it (the member's next one, or another member's exploit) loads it from there.
//!
//! An evaluation writes into `states/<island>-<worker>-<generation>.partial`; only once it finished
//! without failure does its worker root rename that to `states/<island>-<worker>-<generation>`
//! (one rename: atomic on a POSIX file system), before the evaluation is journaled. So a state
//! anyone loads is complete, and a killed or failed evaluation leaves at most a `.partial`
//! directory, which nobody loads and the evaluation's next attempt empties. On a cluster the
//! checkpoint, and so the states, must be on a file system every node of the job reaches.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use propulate_core::individual::IndividualId;
use propulate_core::lineage::Lineage;

use crate::files::states::{PARTIAL_SUFFIX, STATES_DIR, partial_state_dir_name, state_dir_name};
use crate::result::StatesOnDisk;

/// What an evaluation of population-based training is given: where to load from, where to save
/// to, and where in the member's training it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrainingState {
    /// The state to continue (`None`: a fresh member, trained from scratch).
    pub restore_from: Option<PathBuf>,
    /// An empty directory to save this evaluation's state into.
    pub save_to: PathBuf,
    /// Training steps already done in the restored state (0 for a fresh member).
    pub step: u64,
    /// Training steps to do in this evaluation (the interval).
    pub steps: u64,
}

/// The training states of one checkpoint.
#[derive(Debug, Clone)]
pub(crate) struct TrainingStates {
    dir: PathBuf,
}

impl TrainingStates {
    /// The states of the checkpoint in `checkpoint`, by absolute paths (a program given a
    /// relative one may run in another directory).
    pub fn new(checkpoint: &Path) -> Self {
        let dir = checkpoint.join(STATES_DIR);
        TrainingStates { dir: std::path::absolute(&dir).unwrap_or(dir) }
    }

    /// Where the finished state of evaluation `id` lives.
    pub fn saved(&self, id: IndividualId) -> PathBuf {
        self.dir.join(state_dir_name(id))
    }

    /// Where evaluation `id` writes its state until it finished.
    fn partial(&self, id: IndividualId) -> PathBuf {
        self.dir.join(partial_state_dir_name(id))
    }

    /// What evaluation `id` with `lineage` is given (the same on every rank of its worker).
    pub fn for_evaluation(&self, id: IndividualId, lineage: &Lineage) -> TrainingState {
        TrainingState {
            restore_from: lineage.parent.map(|p| self.saved(p)),
            save_to: self.partial(id),
            step: lineage.step,
            steps: lineage.steps,
        }
    }

    /// Before evaluation `id` starts (on its worker root): an empty directory to save into (a
    /// killed attempt's leftovers removed), and the state it continues present. An error is the
    /// reason the evaluation cannot run.
    pub fn prepare(&self, id: IndividualId, lineage: &Lineage) -> Result<(), String> {
        let partial = self.partial(id);
        remove_dir_if_present(&partial).map_err(|e| format!("could not empty {}: {e}", partial.display()))?;
        fs::create_dir_all(&partial).map_err(|e| format!("could not create {}: {e}", partial.display()))?;
        if let Some(parent) = lineage.parent {
            let from = self.saved(parent);
            if !from.is_dir() {
                return Err(format!(
                    "the training state of {parent} (step {}) to continue is missing: {} is not a directory; \
                     the member goes on from another member's state or afresh",
                    lineage.step,
                    from.display()
                ));
            }
        }
        Ok(())
    }

    /// After evaluation `id` ended: its state kept (renamed into place) when it succeeded,
    /// removed when it failed.
    pub fn finish(&self, id: IndividualId, succeeded: bool) -> io::Result<()> {
        let partial = self.partial(id);
        if !succeeded {
            return remove_dir_if_present(&partial);
        }
        let saved = self.saved(id);
        // A state of the same evaluation from before a kill (renamed, not yet journaled) goes.
        remove_dir_if_present(&saved)?;
        fs::rename(&partial, &saved)
    }

    /// Delete the saved state of evaluation `id` (no longer needed by anyone).
    pub fn remove(&self, id: IndividualId) -> io::Result<()> {
        remove_dir_if_present(&self.saved(id))
    }

    /// How many saved states there are and their size in bytes (partial ones included in the
    /// bytes): what the end of a run reports.
    pub fn disk_use(&self) -> StatesOnDisk {
        let Ok(entries) = fs::read_dir(&self.dir) else { return StatesOnDisk::default() };
        let mut count = 0;
        let mut bytes = 0;
        for entry in entries.flatten() {
            if !entry.file_name().to_string_lossy().ends_with(PARTIAL_SUFFIX) {
                count += 1;
            }
            bytes += size_of_tree(&entry.path());
        }
        StatesOnDisk { count, bytes }
    }
}

fn remove_dir_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn size_of_tree(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else { return 0 };
    if !meta.is_dir() {
        return meta.len();
    }
    fs::read_dir(path).map_or(0, |entries| entries.flatten().map(|e| size_of_tree(&e.path())).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(generation: u64) -> IndividualId {
        IndividualId { island: 1, worker: 3, generation }
    }

    #[test]
    fn a_state_is_loadable_only_once_its_evaluation_succeeded() {
        let tmp = tempfile::tempdir().unwrap();
        let states = TrainingStates::new(tmp.path());
        let fresh = Lineage::fresh(2);
        states.prepare(id(0), &fresh).unwrap();
        let given = states.for_evaluation(id(0), &fresh);
        assert_eq!((given.restore_from.as_deref(), given.step, given.steps), (None, 0, 2));
        fs::write(given.save_to.join("model.bin"), b"weights").unwrap();
        let next = Lineage { parent: Some(id(0)), step: 2, steps: 2, exploited: false };
        let e = states.prepare(id(1), &next).unwrap_err();
        assert!(e.contains("the training state of 1/3/0 (step 2) to continue is missing"), "{e}");
        assert!(e.ends_with("the member goes on from another member's state or afresh"), "{e}");
        states.finish(id(0), true).unwrap();
        states.prepare(id(1), &next).unwrap();
        let given = states.for_evaluation(id(1), &next);
        let from = given.restore_from.unwrap();
        assert_eq!(fs::read(from.join("model.bin")).unwrap(), b"weights");
        assert!(from.ends_with("states/1-3-0"), "{}", from.display());
        // A half-written attempt is emptied by the next one and removed when it fails.
        fs::write(given.save_to.join("half"), b"x").unwrap();
        states.prepare(id(1), &next).unwrap();
        assert_eq!(fs::read_dir(&given.save_to).unwrap().count(), 0);
        states.finish(id(1), false).unwrap();
        assert!(!given.save_to.exists() && !states.saved(id(1)).exists());
        assert_eq!(states.disk_use(), StatesOnDisk { count: 1, bytes: 7 });
        states.remove(id(0)).unwrap();
        states.remove(id(0)).unwrap();
        assert_eq!(states.disk_use(), StatesOnDisk::default());
    }
}
