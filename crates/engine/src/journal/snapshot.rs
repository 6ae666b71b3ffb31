//! A binary snapshot of what one worker's journal says up to some segment, so that the next resume
//! decodes it instead of parsing the same JSON again (parsing was the largest part of resuming a
//! long run). A worker root that parsed more than [`worth_writing`] bytes of JSON on resume writes
//! `worker-NNNNN.snapshot`, covering every segment it read; one whose run ends cleanly with that
//! much journal no snapshot covers writes one covering every segment, the one it just wrote
//! included (`journal/mirror.rs`). A later resume or `report` takes the snapshot when every segment
//! it covers is still there with the size it had, and parses only the segments after them. Segments are append-only and every start opens a new one, so a covered
//! segment of unchanged size holds what it held.
//!
//! The journal stays the record and the snapshot a cache of it: a snapshot that does not check out
//! (a checksum over its contents, the segments it covers, the records' rules) is ignored with a
//! warning and the segments are parsed; one lost in a crash is simply written again. So it is
//! written without fsync, through a temporary file renamed over the old one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::WorkerJournal;
use super::validate::RecordRules;
use crate::error::{Error, Result};
use crate::files::checkpoint::{snapshot_name, snapshot_temporary_name};
use propulate_core::individual::{Individual, IndividualId};

/// JSON bytes a resume must have parsed for a snapshot to be worth writing: about 60,000
/// evaluations of a small space; below that parsing takes a few tens of milliseconds.
pub const WORTH_WRITING: u64 = 16 << 20;

/// The environment variable that sets [`worth_writing`] in bytes (0: a snapshot at every resume and
/// clean end).
pub const WORTH_WRITING_VAR: &str = "PROPULATE_SNAPSHOT_BYTES";

/// JSON bytes that a snapshot must save the next resume from parsing to be written:
/// `PROPULATE_SNAPSHOT_BYTES` where it is a number of bytes, else [`WORTH_WRITING`].
pub fn worth_writing() -> u64 {
    std::env::var(WORTH_WRITING_VAR).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(WORTH_WRITING)
}

/// The first bytes of a snapshot file: its format and version. Version 2 added the individuals'
/// constraints (a snapshot of version 1 is not read: the journal is parsed and a new one written).
const MAGIC: &[u8; 24] = b"propulate-rs snapshot 2\n";

/// What a snapshot holds (the encoding writes [`SnapshotRef`], the same fields by reference).
#[derive(Debug, Deserialize)]
struct Snapshot {
    covers: Vec<(u32, u64)>,
    warnings: Vec<String>,
    journal: WorkerJournal,
}

#[derive(Serialize)]
struct SnapshotRef<'a> {
    covers: &'a [(u32, u64)],
    warnings: &'a [String],
    journal: JournalRef<'a>,
}

/// A [`WorkerJournal`] by reference, encoded as one: a worker at its clean end writes its snapshot
/// from the evaluations it holds, without copying them.
#[derive(Serialize)]
pub struct JournalRef<'a> {
    /// As [`WorkerJournal::evaluated`].
    pub evaluated: &'a [Individual],
    /// As [`WorkerJournal::in_flight`].
    pub in_flight: &'a [IndividualId],
    /// As [`WorkerJournal::emigrations`].
    pub emigrations: &'a [(u32, Vec<Individual>)],
    /// As [`WorkerJournal::seeds`].
    pub seeds: &'a [(u32, Vec<Individual>)],
    /// As [`WorkerJournal::deactivations`].
    pub deactivations: &'a [(IndividualId, u32)],
    /// As [`WorkerJournal::done`].
    pub done: bool,
}

impl<'a> From<&'a WorkerJournal> for JournalRef<'a> {
    fn from(j: &'a WorkerJournal) -> Self {
        JournalRef {
            evaluated: &j.evaluated,
            in_flight: &j.in_flight,
            emigrations: &j.emigrations,
            seeds: &j.seeds,
            deactivations: &j.deactivations,
            done: j.done,
        }
    }
}

/// The first segments of a journal as a snapshot took them.
pub(super) struct Taken {
    /// The journal as the covered segments say it.
    pub journal: WorkerJournal,
    /// The warnings reading those segments gave (torn tails).
    pub warnings: Vec<String>,
    /// The segments covered, with their sizes.
    pub covers: Vec<(u32, u64)>,
}

/// What became of a worker's snapshot.
pub(super) enum Loaded {
    /// There is none.
    Absent,
    /// It covers the journal's first `covers.len()` segments.
    Taken(Taken),
    /// It does not check out, for the reason given: the segments are parsed instead.
    Ignored(String),
}

/// A checksum of `bytes` (SplitMix64's finaliser over 8-byte words and the length): a damaged or
/// truncated snapshot fails it.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = propulate_core::rng::mix64(h ^ u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    propulate_core::rng::mix64(h ^ u64::from_le_bytes(last))
}

/// Write `journal` (what reading the segments `covers` gave, with its `warnings`) as `worker`'s
/// snapshot in `dir`.
pub fn write<'a>(
    dir: &Path,
    worker: usize,
    covers: &[(u32, u64)],
    journal: impl Into<JournalRef<'a>>,
    warnings: &[String],
) -> Result<()> {
    let journal = journal.into();
    let payload = postcard::to_allocvec(&SnapshotRef { covers, warnings, journal })
        .map_err(|e| Error::Checkpoint(format!("encoding the snapshot of worker {worker}: {e}")))?;
    let (tmp, path) = (dir.join(snapshot_temporary_name(worker)), dir.join(snapshot_name(worker)));
    let written = fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(MAGIC)?;
        f.write_all(&checksum(&payload).to_le_bytes())?;
        f.write_all(&payload)
    });
    if let Err(e) = written {
        // A full disk leaves no half-written file behind (a resume would ignore one anyway).
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(&tmp, e));
    }
    fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))
}

/// `worker`'s snapshot in `dir`, if there is one that covers the first of `segments` (the worker's
/// segments in order: number and path) as they are now and whose records pass `rules`.
pub(super) fn load(dir: &Path, worker: usize, segments: &[(u32, &PathBuf)], rules: &RecordRules<'_>) -> Loaded {
    let path = dir.join(snapshot_name(worker));
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::Absent,
        Err(e) => return Loaded::Ignored(format!("it cannot be read: {e}")),
    };
    match decode(&bytes).and_then(|s| s.check(segments, rules).map(|()| s)) {
        Ok(s) => Loaded::Taken(Taken { journal: s.journal, warnings: s.warnings, covers: s.covers }),
        Err(reason) => Loaded::Ignored(reason),
    }
}

fn decode(bytes: &[u8]) -> std::result::Result<Snapshot, String> {
    let rest = bytes.strip_prefix(MAGIC).ok_or("not a snapshot of this format")?;
    if rest.len() < 8 {
        return Err("truncated".into());
    }
    let (sum, payload) = rest.split_at(8);
    if checksum(payload).to_le_bytes() != sum {
        return Err("damaged (its checksum does not match)".into());
    }
    postcard::from_bytes(payload).map_err(|e| format!("it does not decode: {e}"))
}

impl Snapshot {
    fn check(&self, segments: &[(u32, &PathBuf)], rules: &RecordRules<'_>) -> std::result::Result<(), String> {
        if self.covers.len() > segments.len() {
            return Err(format!("it covers {} segments, the journal has {}", self.covers.len(), segments.len()));
        }
        for (&(number, size), (present, path)) in self.covers.iter().zip(segments) {
            let now = fs::metadata(path).map(|m| m.len()).map_err(|e| format!("{}: {e}", path.display()))?;
            if number != *present || now != size {
                return Err(format!(
                    "it covers segment {number} of {size} bytes, the journal's is {} of {now} bytes",
                    path.display()
                ));
            }
        }
        rules.check_journal(&self.journal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_damage_or_truncation_fails_the_checksum_or_the_frame() {
        let payload: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut file = MAGIC.to_vec();
        file.extend(checksum(&payload).to_le_bytes());
        file.extend(&payload);
        // Decoding this payload fails, but only after the frame and the checksum passed.
        assert!(decode(&file).unwrap_err().contains("does not decode"));
        for k in [0, 30, 40, 500, file.len() - 1] {
            let mut bad = file.clone();
            bad[k] ^= 0x10;
            let e = decode(&bad).unwrap_err();
            assert!(e.contains("damaged") || e.contains("not a snapshot"), "byte {k}: {e}");
        }
        for cut in [0, 10, 30, file.len() - 1] {
            let e = decode(&file[..cut]).unwrap_err();
            assert!(e.contains("damaged") || e.contains("truncated") || e.contains("not a snapshot"), "{cut}: {e}");
        }
    }
}
