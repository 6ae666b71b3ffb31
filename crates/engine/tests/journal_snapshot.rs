//! Journal snapshots (`journal/snapshot.rs`): a resume that parsed a long journal leaves a binary
//! snapshot of it, the next resume reads the snapshot and parses only the segments after it, and
//! gets exactly what parsing everything gives; a snapshot that does not check out is ignored with
//! a warning, never trusted.

use std::path::Path;

use propulate_core::SearchSpace;
use propulate_engine::files::checkpoint::snapshot_name;
use propulate_engine::journal::{Manifest, read_checkpoint, read_worker_journal, write_snapshot};
use propulate_engine::{Optimizer, RunResult};

fn space() -> SearchSpace {
    SearchSpace::builder().float("x", -5.0, 5.0).float("y", -5.0, 5.0).build().unwrap()
}

/// `generations` of `workers` in-process workers on `islands` islands into `dir`.
fn run(dir: &Path, workers: usize, islands: usize, generations: u64) -> RunResult {
    Optimizer::new(space())
        .generations(generations)
        .islands(islands)
        .seed(5)
        .checkpoint(dir)
        .run_local(workers, |p, _| Ok(p.float("x").powi(2) + (p.float("y") - 1.0).powi(2)))
        .unwrap()
}

/// Each worker's journal, encoded: equal encodings, equal journals.
fn journals(dir: &Path) -> Vec<String> {
    let replay = read_checkpoint(dir).unwrap().unwrap();
    replay.workers.iter().map(|j| serde_json::to_string(j).unwrap()).collect()
}

/// Write every worker's snapshot as a resume would.
fn snapshot_all(dir: &Path, workers: usize) {
    let manifest = Manifest::read(dir).unwrap();
    for w in 0..workers {
        let read = read_worker_journal(dir, w, &manifest).unwrap();
        write_snapshot(dir, w, &read.segments, &read.journal, &read.tail_warnings).unwrap();
    }
}

fn evaluations(r: &RunResult) -> Vec<(String, f64)> {
    let mut e: Vec<_> = r.trials.iter().map(|t| (t.id.to_string(), t.loss)).collect();
    e.sort_by(|a, b| a.0.cmp(&b.0));
    e
}

#[test]
fn a_snapshot_reads_back_as_its_segments_and_a_resume_from_it_continues_exactly() {
    let (parts, whole) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // Two islands with migration: emigrations and deactivations are in the journals too.
    run(parts.path(), 4, 2, 40);
    let parsed = journals(parts.path());
    snapshot_all(parts.path(), 4);
    assert!(parts.path().join(snapshot_name(3)).is_file());
    assert_eq!(journals(parts.path()), parsed, "the snapshot holds what parsing the segments gave");
    let manifest = Manifest::read(parts.path()).unwrap();
    let read = read_worker_journal(parts.path(), 1, &manifest).unwrap();
    assert_eq!(read.parsed_bytes, 0, "nothing parsed where a snapshot covers every segment");
    assert_eq!(read.warnings().count(), 0, "{:?}", read.warnings().collect::<Vec<_>>());

    // One worker breeds deterministically: resumed from its snapshot (plus the segment written
    // after it), the run is the uninterrupted one.
    let (one, at_once) = (tempfile::tempdir().unwrap(), whole.path());
    run(one.path(), 1, 1, 30);
    snapshot_all(one.path(), 1);
    run(one.path(), 1, 1, 45);
    snapshot_all(one.path(), 1); // covers the first two segments now
    let resumed = run(one.path(), 1, 1, 60);
    let uninterrupted = run(at_once, 1, 1, 60);
    assert_eq!(resumed.resumed, 45);
    assert_eq!(evaluations(&resumed), evaluations(&uninterrupted));
    let read = read_worker_journal(one.path(), 0, &Manifest::read(one.path()).unwrap()).unwrap();
    assert_eq!(read.segments.len(), 3);
    let last = std::fs::metadata(one.path().join("worker-00000.0002.jsonl")).unwrap().len();
    assert_eq!(read.parsed_bytes, last, "only the segment after the snapshot is parsed");
}

#[test]
fn a_snapshot_that_does_not_check_out_is_ignored_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), 2, 1, 30);
    let parsed = journals(dir.path());
    let manifest = Manifest::read(dir.path()).unwrap();
    let snapshot = dir.path().join(snapshot_name(0));
    let ignored = |why: &str| {
        let read = read_worker_journal(dir.path(), 0, &manifest).unwrap();
        assert!(read.parsed_bytes > 0, "{why}: the segments are parsed");
        let warning = read.warnings().find(|w| w.contains("ignored")).unwrap_or_else(|| panic!("{why}: no warning"));
        assert!(warning.contains(&snapshot.display().to_string()) && warning.contains(why), "{warning}");
        assert_eq!(journals(dir.path()), parsed, "{why}: the journal read as if there were no snapshot");
    };

    // A damaged byte, a truncated file.
    snapshot_all(dir.path(), 2);
    let good = std::fs::read(&snapshot).unwrap();
    let mut bad = good.clone();
    let k = bad.len() / 2;
    bad[k] ^= 1;
    std::fs::write(&snapshot, &bad).unwrap();
    ignored("damaged");
    std::fs::write(&snapshot, &good[..good.len() - 3]).unwrap();
    ignored("damaged");

    // Worker 1's snapshot in worker 0's place: it covers other segments. With worker 0's
    // segments, worker 1's journal still fails the rules its records were read by.
    std::fs::copy(dir.path().join(snapshot_name(1)), &snapshot).unwrap();
    ignored("it covers segment 0");
    let (own, other) = (
        read_worker_journal(dir.path(), 0, &manifest).unwrap(),
        read_worker_journal(dir.path(), 1, &manifest).unwrap(),
    );
    write_snapshot(dir.path(), 0, &own.segments, &other.journal, &[]).unwrap();
    ignored("where worker 0's generation 0 was expected");

    // A covered segment that changed size since (appended to by hand).
    std::fs::write(&snapshot, &good).unwrap();
    let segment = dir.path().join("worker-00000.0000.jsonl");
    let original = std::fs::read(&segment).unwrap();
    let mut longer = original.clone();
    longer.extend_from_slice(b"{\"e\":\"done\",\"generations\":30}\n");
    std::fs::write(&segment, &longer).unwrap();
    ignored("it covers segment 0");
    std::fs::write(&segment, &original).unwrap();
    assert_eq!(read_worker_journal(dir.path(), 0, &manifest).unwrap().warnings().count(), 0, "taken again");

    // A resume goes on from the journal whatever the snapshot: here a damaged one.
    std::fs::write(&snapshot, &bad).unwrap();
    let resumed = run(dir.path(), 2, 1, 40);
    assert_eq!((resumed.resumed, resumed.evaluations), (60, 80));
}

/// A run that writes more than the threshold (16 MiB) of journal leaves a snapshot at its clean end,
/// and a resume that parses that much leaves one too; the next resume parses only what was written
/// after them.
#[test]
fn long_journals_leave_a_snapshot_at_a_clean_end_and_at_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    // About 435 bytes of journal per generation: 40,000 generations are over 16 MiB.
    let first = run(dir.path(), 1, 1, 40_000);
    let snapshot = dir.path().join(snapshot_name(0));
    assert!(snapshot.is_file(), "the run wrote over 16 MiB of journal and left no snapshot");
    let read = read_worker_journal(dir.path(), 0, &Manifest::read(dir.path()).unwrap()).unwrap();
    assert_eq!(read.parsed_bytes, 0, "the clean end's snapshot covers the segment just written");
    let from_snapshot = journals(dir.path());
    std::fs::remove_file(&snapshot).unwrap();
    assert_eq!(journals(dir.path()), from_snapshot, "the snapshot holds what parsing the segment gives");

    // Without it, the resume parses the segment and leaves a snapshot of what it read (its own
    // segment, with nothing to evaluate, is too short to be worth another).
    let again = run(dir.path(), 1, 1, 40_000);
    assert!(snapshot.is_file(), "the resume parsed {} bytes and wrote no snapshot", {
        let m = Manifest::read(dir.path()).unwrap();
        read_worker_journal(dir.path(), 0, &m).unwrap().parsed_bytes
    });
    assert_eq!((again.resumed, again.evaluations), (40_000, 40_000));
    assert_eq!(again.best[0].id, first.best[0].id);
    let read = read_worker_journal(dir.path(), 0, &Manifest::read(dir.path()).unwrap()).unwrap();
    assert!(read.parsed_bytes < 1000, "parsed {} bytes after the snapshot", read.parsed_bytes);
}
