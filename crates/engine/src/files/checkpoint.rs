//! The files of a checkpoint directory proper: its manifest, each worker's journal segments, the
//! journals' snapshots and locks.

use super::{TEMPORARY_SUFFIX, digits_at_least, without_suffix};

/// The checkpoint's manifest (journal/manifest.rs): layout, space and settings.
pub const MANIFEST: &str = "manifest.json";

/// The manifest's temporary file, renamed over it once written.
pub const MANIFEST_TEMPORARY: &str = "manifest.json.tmp";

/// Digits of a worker's number in file names (more for 100,000 workers or more).
const WORKER_DIGITS: usize = 5;
/// Digits of a segment's number in journal file names.
const SEGMENT_DIGITS: usize = 4;

/// The journal file of `worker`, segment `segment`.
pub fn segment_name(worker: usize, segment: u32) -> String {
    format!("worker-{worker:05}.{segment:04}.jsonl")
}

/// Parse a journal file name back into (worker, segment).
pub fn parse_segment_name(name: &str) -> Option<(usize, u32)> {
    let rest = name.strip_prefix("worker-")?.strip_suffix(".jsonl")?;
    let (w, s) = rest.split_once('.')?;
    (digits_at_least(w, WORKER_DIGITS) && digits_at_least(s, SEGMENT_DIGITS)).then_some(())?;
    Some((w.parse().ok()?, s.parse().ok()?))
}

/// The snapshot file of `worker`'s journal (journal/snapshot.rs).
pub fn snapshot_name(worker: usize) -> String {
    format!("worker-{worker:05}.snapshot")
}

/// A snapshot's temporary file, renamed over it once written.
pub fn snapshot_temporary_name(worker: usize) -> String {
    format!("{}{TEMPORARY_SUFFIX}", snapshot_name(worker))
}

/// The worker whose snapshot `name` is: `(worker, true)` for its temporary file.
pub fn parse_snapshot_name(name: &str) -> Option<(usize, bool)> {
    let (base, temporary) = without_suffix(name, TEMPORARY_SUFFIX);
    Some((worker_of(base, ".snapshot")?, temporary))
}

/// The `flock` file of `worker`'s journal (journal/lock.rs).
pub fn lock_name(worker: usize) -> String {
    format!("worker-{worker:05}.lock")
}

/// The owner file of `worker`'s journal, where `flock` is not available.
pub fn owner_name(worker: usize) -> String {
    format!("worker-{worker:05}.owner")
}

/// The worker whose lock or owner file `name` is.
pub fn parse_lock_name(name: &str) -> Option<usize> {
    worker_of(name, ".lock").or_else(|| worker_of(name, ".owner"))
}

/// The worker of `worker-NNNNN<suffix>`.
fn worker_of(name: &str, suffix: &str) -> Option<usize> {
    let w = name.strip_prefix("worker-")?.strip_suffix(suffix)?;
    digits_at_least(w, WORKER_DIGITS).then(|| w.parse().ok())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_nothing_else_does() {
        assert_eq!(parse_segment_name(&segment_name(3, 12)), Some((3, 12)));
        assert_eq!(parse_segment_name(&segment_name(123_456, 1)), Some((123_456, 1)), "six digits");
        assert_eq!(parse_snapshot_name(&snapshot_name(42)), Some((42, false)));
        assert_eq!(parse_snapshot_name(&snapshot_temporary_name(7)), Some((7, true)));
        assert_eq!(parse_lock_name(&lock_name(9)), Some(9));
        assert_eq!(parse_lock_name(&owner_name(100_000)), Some(100_000));
        for other in ["worker-00001.jsonl", "worker-1.0000.jsonl", "worker-00001.000.jsonl", "worker-0000x.0000.jsonl"]
        {
            assert_eq!(parse_segment_name(other), None, "{other}");
        }
        for other in ["worker-00001.0000.jsonl", "worker-1.snapshot", "worker-0000x.snapshot", "worker-00001.snap"] {
            assert_eq!(parse_snapshot_name(other), None, "{other}");
        }
        for other in ["worker-1.lock", "worker-00001.lock.tmp", "worker-00001.ownr"] {
            assert_eq!(parse_lock_name(other), None, "{other}");
        }
    }
}
