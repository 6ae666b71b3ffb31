//! The training states of population-based training (training_state.rs): one directory per
//! evaluation under the checkpoint's `states/`, written as `.partial` and renamed once complete.

use propulate_core::individual::IndividualId;

/// The directory of training states inside a checkpoint.
pub const STATES_DIR: &str = "states";

/// The suffix of a state still being written.
pub const PARTIAL_SUFFIX: &str = ".partial";

/// The CNN task's model weights in a state directory (Burn's file recorder).
pub const MODEL_FILE: &str = "model.bpk";

/// The CNN task's optimizer state in a state directory.
pub const OPTIMIZER_FILE: &str = "optimizer.bpk";

/// The directory of evaluation `id`'s finished state.
pub fn state_dir_name(id: IndividualId) -> String {
    format!("{}-{}-{}", id.island, id.worker, id.generation)
}

/// The directory evaluation `id` writes its state into until it finished.
pub fn partial_state_dir_name(id: IndividualId) -> String {
    format!("{}{PARTIAL_SUFFIX}", state_dir_name(id))
}

/// The evaluation whose state directory `name` is: `(id, true)` for one still being written.
pub fn parse_state_dir_name(name: &str) -> Option<(IndividualId, bool)> {
    let (base, partial) = super::without_suffix(name, PARTIAL_SUFFIX);
    let mut parts = base.splitn(3, '-');
    let island = parts.next()?.parse().ok()?;
    let worker = parts.next()?.parse().ok()?;
    let generation = parts.next()?.parse().ok()?;
    Some((IndividualId { island, worker, generation }, partial))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_nothing_else_does() {
        let id = IndividualId { island: 1, worker: 3, generation: 40 };
        assert_eq!(state_dir_name(id), "1-3-40");
        assert_eq!(parse_state_dir_name(&state_dir_name(id)), Some((id, false)));
        assert_eq!(parse_state_dir_name(&partial_state_dir_name(id)), Some((id, true)));
        for other in ["1-3", "1-3-x", "a-3-4", "1-3-4.tmp", "1-3-4-5"] {
            assert_eq!(parse_state_dir_name(other), None, "{other}");
        }
    }
}
