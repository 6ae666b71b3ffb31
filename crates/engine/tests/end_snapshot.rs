//! Snapshots at a clean end (`journal/mirror.rs`): a run that ends cleanly leaves each worker a
//! snapshot covering every segment of its journal, the one it just wrote included, so that the next
//! resume parses nothing; what the snapshot holds is exactly what parsing the segments gives, torn
//! tails' warnings and children in flight included. Here every journal is worth a snapshot
//! (`PROPULATE_SNAPSHOT_BYTES=0`); `journal_snapshot.rs` runs one past the default threshold.

mod common;

use std::path::Path;
use std::sync::Once;

use common::{journals, parsed, read};

use propulate_core::SearchSpace;
use propulate_engine::files::checkpoint::snapshot_name;
use propulate_engine::journal::WORTH_WRITING_VAR;
use propulate_engine::{Optimizer, RunResult};

/// Every journal is worth a snapshot in this test binary (set once, before any test reads it).
fn snapshot_every_journal() {
    static SET: Once = Once::new();
    // SAFETY: every test calls this first, and the Once keeps them waiting until it is set, so no
    // other thread reads the environment meanwhile.
    SET.call_once(|| unsafe { std::env::set_var(WORTH_WRITING_VAR, "0") });
}

fn space() -> SearchSpace {
    SearchSpace::builder().float("x", -5.0, 5.0).float("y", -5.0, 5.0).build().unwrap()
}

fn run(dir: &Path, workers: usize, islands: usize, generations: u64) -> RunResult {
    Optimizer::new(space())
        .generations(generations)
        .islands(islands)
        .seed(9)
        .checkpoint(dir)
        .run_local(workers, |p, _| Ok(p.float("x").powi(2) + (p.float("y") - 1.0).powi(2)))
        .unwrap()
}

/// Every worker's journal is read from its snapshot alone, and reads as parsing it would.
fn assert_snapshots_cover_everything(dir: &Path, workers: usize, when: &str) {
    for w in 0..workers {
        assert!(dir.join(snapshot_name(w)).is_file(), "{when}: worker {w} left no snapshot");
        let r = read(dir, w);
        assert_eq!(r.parsed_bytes, 0, "{when}: worker {w}'s snapshot does not cover its every segment");
        assert!(r.ignored_snapshot.is_none(), "{when}: {:?}", r.ignored_snapshot);
    }
    assert_eq!(journals(dir, workers), parsed(dir, workers), "{when}: the snapshots hold what the segments say");
}

#[test]
fn a_clean_end_leaves_snapshots_that_read_as_every_segment() {
    snapshot_every_journal();
    let dir = tempfile::tempdir().unwrap();
    // Two islands with migration: emigrations and deactivations are in the snapshots too.
    run(dir.path(), 4, 2, 40);
    assert_snapshots_cover_everything(dir.path(), 4, "a fresh run");
    let resumed = run(dir.path(), 4, 2, 70);
    assert_eq!((resumed.resumed, resumed.evaluations), (160, 280));
    assert_snapshots_cover_everything(dir.path(), 4, "a resumed run");
    assert!(dir.path().join("worker-00003.0001.jsonl").is_file());
    let emigrated = read(dir.path(), 0).journal.emigrations.len() + read(dir.path(), 2).journal.emigrations.len();
    assert!(emigrated > 0, "no migration: the test covers less than it says");
}

/// A kill's traces in an earlier segment (a child bred but not evaluated, a torn last line) are in
/// the snapshot as parsing gives them, and the run resumed from it is the uninterrupted one.
#[test]
fn torn_tails_and_children_in_flight_are_kept_as_parsing_gives_them() {
    snapshot_every_journal();
    let (dir, whole) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dir = dir.path();
    run(dir, 1, 1, 30);
    // As if killed while evaluating generation 30, half-way through writing a line.
    let segment = dir.join("worker-00000.0000.jsonl");
    let mut bytes = std::fs::read(&segment).unwrap();
    let done = bytes.windows(7).rposition(|w| w == br#"{"e":"d"#).expect("a done record");
    bytes.truncate(done);
    bytes.extend_from_slice(
        b"{\"e\":\"bred\",\"id\":{\"island\":0,\"worker\":0,\"generation\":30},\"values\":[0.5,0.5]}\n",
    );
    bytes.extend_from_slice(b"{\"e\":\"ev");
    std::fs::write(&segment, bytes).unwrap();
    std::fs::remove_file(dir.join(snapshot_name(0))).unwrap();

    // A start that evaluates nothing: its snapshot keeps the child in flight and the torn tail.
    let idle = run(dir, 1, 1, 30);
    assert_eq!(idle.evaluations, 30);
    assert_snapshots_cover_everything(dir, 1, "a start with nothing to do");
    let r = read(dir, 0);
    assert_eq!(r.journal.in_flight.iter().map(|id| id.generation).collect::<Vec<_>>(), [30]);
    assert!(r.tail_warnings.iter().any(|w| w.contains("torn")), "{:?}", r.tail_warnings);

    let resumed = run(dir, 1, 1, 45);
    assert_snapshots_cover_everything(dir, 1, "a start that evaluated the child in flight");
    assert!(read(dir, 0).journal.in_flight.is_empty());
    let uninterrupted = run(whole.path(), 1, 1, 45);
    let ids = |r: &RunResult| r.trials.iter().map(|t| (t.id.to_string(), t.loss.to_bits())).collect::<Vec<_>>();
    assert_eq!(ids(&resumed), ids(&uninterrupted));
}
