//! Helpers of the snapshot tests: a checkpoint's journals as read, and as parsing every segment
//! gives them.

use std::path::Path;

use propulate_engine::journal::{Manifest, WorkerRead, read_checkpoint, read_worker_journal};

/// Worker `worker`'s journal in the checkpoint `dir`, read as a resume reads it.
pub fn read(dir: &Path, worker: usize) -> WorkerRead {
    read_worker_journal(dir, worker, &Manifest::read(dir).unwrap()).unwrap()
}

/// Each worker's journal (encoded) and the warnings reading it gives.
pub fn journals(dir: &Path, workers: usize) -> Vec<(String, Vec<String>)> {
    assert!(read_checkpoint(dir).unwrap().is_some());
    (0..workers)
        .map(|w| {
            let r = read(dir, w);
            (serde_json::to_string(&r.journal).unwrap(), r.tail_warnings)
        })
        .collect()
}

/// What parsing every segment gives: the journals of a copy of `dir` without its snapshots.
pub fn parsed(dir: &Path, workers: usize) -> Vec<(String, Vec<String>)> {
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().to_string();
        if entry.path().is_file() && !name.ends_with(".snapshot") {
            std::fs::copy(entry.path(), copy.path().join(&name)).unwrap();
        }
    }
    let got = journals(copy.path(), workers);
    // Warnings name their file: the copy's, spelled as the original's.
    let rename = |w: String| w.replace(&copy.path().display().to_string(), &dir.display().to_string());
    got.into_iter().map(|(j, ws)| (j, ws.into_iter().map(rename).collect())).collect()
}
