//! Snapshots while a run goes on (`journal/writer.rs`, `JournalWriter::roll_if_due`): a worker
//! whose segment has grown to `PROPULATE_SEGMENT_BYTES` closes it, leaves a snapshot covering
//! every segment so far and goes on in a new one. A checkpoint as a kill would leave it mid-run
//! (copied from inside the loss) then reads from the snapshot and parses only the segment since,
//! reads as parsing every segment would, and resumes into exactly the uninterrupted run.

mod common;

use std::path::Path;
use std::sync::Once;

use common::{journals, parsed, read};
use propulate_core::SearchSpace;
use propulate_core::propagator::PropagatorSpec;
use propulate_engine::journal::SEGMENT_BYTES_VAR;
use propulate_engine::{Optimizer, RunResult};

/// Segments close every few kilobytes in this test binary (set once, before any test reads it).
const SEGMENT_BYTES: u64 = 12_000;

fn small_segments() {
    static SET: Once = Once::new();
    // SAFETY: every test calls this first, and the Once keeps them waiting until it is set, so no
    // other thread reads the environment meanwhile.
    SET.call_once(|| unsafe { std::env::set_var(SEGMENT_BYTES_VAR, SEGMENT_BYTES.to_string()) });
}

/// One worker (so that two runs breed the same children), 200 generations; with `copy_at`, the
/// checkpoint is copied into `copy` when that generation is evaluated, as a kill -9 would leave it.
fn run(dir: &Path, copy_at: Option<(u64, &Path)>) -> RunResult {
    let (from, copy_at) = (dir.to_path_buf(), copy_at.map(|(g, copy)| (g, copy.to_path_buf())));
    let space = SearchSpace::builder().float("x", -5.0, 5.0).float("y", -5.0, 5.0).build().unwrap();
    Optimizer::new(space)
        .propagator_spec(PropagatorSpec::with_defaults("ga", 1).unwrap())
        .generations(200)
        .seed(5)
        .checkpoint(dir)
        .run_local(1, move |p, ctx| {
            if let Some((generation, copy)) = &copy_at
                && ctx.trial.generation == *generation
            {
                copy_files(&from, copy);
            }
            Ok(p.float("x").powi(2) + (p.float("y") - 1.0).powi(2))
        })
        .unwrap()
}

fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.path().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

fn segments(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".jsonl"))
        .count()
}

#[test]
fn a_run_killed_mid_run_resumes_from_its_latest_snapshot_into_the_uninterrupted_run() {
    small_segments();
    let (tmp, whole) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (dir, killed) = (tmp.path().join("ck"), tmp.path().join("killed"));
    // Each generation writes about 430 bytes: 28 a segment, and 153 leaves the last one open.
    let uninterrupted = run(&dir, Some((153, &killed)));
    assert!(segments(&dir) >= 5, "{} segments: the journal was not rolled", segments(&dir));

    // What a kill at generation 153 leaves: the snapshot of the last closed segment, the open one.
    let r = read(&killed, 0);
    assert!(r.ignored_snapshot.is_none(), "{:?}", r.ignored_snapshot);
    assert!(r.parsed_bytes > 0 && r.parsed_bytes < 2 * SEGMENT_BYTES, "parsed {} bytes", r.parsed_bytes);
    assert_eq!(r.journal.evaluated.len(), 153);
    assert_eq!(journals(&killed, 1), parsed(&killed, 1), "the snapshot holds what its segments say");

    let resumed = run(&killed, None);
    assert_eq!((resumed.resumed, resumed.evaluations), (153, 200));
    let again = run(whole.path(), None);
    let ids = |r: &RunResult| r.trials.iter().map(|t| (t.id.to_string(), t.loss.to_bits())).collect::<Vec<_>>();
    assert_eq!(ids(&resumed), ids(&uninterrupted), "the resumed run is the uninterrupted one");
    assert_eq!(ids(&again), ids(&uninterrupted));
}
