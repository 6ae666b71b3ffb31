//! What a worker's journal says, kept up as the worker appends to it, so that a run that ends
//! cleanly leaves a snapshot (`journal/snapshot.rs`) covering every segment, the one just written
//! included: without it the first resume after a long run parsed that run's whole segment (5.5-6.2 s
//! of a fresh million on a 2-core machine, against 2.4-2.8 s from snapshots).
//!
//! The evaluations, most of a journal, are not copied: the worker holds them already and hands them
//! over at the end. The rest (emigrants, seeds, deactivations, children in flight) is kept here, as
//! reading the segments would give it.

use std::path::Path;

use propulate_core::individual::{Individual, IndividualId};

use super::snapshot::{self, JournalRef};
use super::{Event, WorkerJournal};
use crate::error::{Error, Result};

/// The segments a start found, as its resume read them: what a snapshot at its clean end covers
/// besides the segment it writes.
#[derive(Debug, Default)]
pub struct SegmentsRead {
    /// The segments, by number, with their sizes.
    pub covers: Vec<(u32, u64)>,
    /// What reading them warned of (torn tails), repeated by any read of a snapshot covering them.
    pub warnings: Vec<String>,
    /// Their bytes that no snapshot on disk covers.
    pub uncovered: u64,
}

/// A worker's journal as written so far, its evaluations left to the worker.
#[derive(Debug)]
pub struct JournalMirror {
    read: SegmentsRead,
    /// Everything but `evaluated`, which stays empty.
    journal: WorkerJournal,
    /// Evaluations recorded, in the segments read and since.
    evaluations: usize,
    generation_offset: u64,
    /// Whether this run closed a segment mid-run ([`JournalMirror::close_segment`]).
    closed_segments: bool,
}

impl JournalMirror {
    /// The mirror of a journal whose earlier segments said `journal` (read as `read`; empty for a
    /// fresh run), under a manifest's `generation_offset`, and the journal's evaluations: the worker
    /// takes them and hands them back to [`JournalMirror::write_snapshot`].
    pub fn split(read: SegmentsRead, mut journal: WorkerJournal, generation_offset: u64) -> (Self, Vec<Individual>) {
        let evaluated = std::mem::take(&mut journal.evaluated);
        (
            JournalMirror { read, journal, evaluations: evaluated.len(), generation_offset, closed_segments: false },
            evaluated,
        )
    }

    /// Record an event just appended, as reading it back does; an evaluation only counted.
    pub fn record(&mut self, event: Event) {
        match event {
            Event::Eval(_) => {
                self.evaluations += 1;
                self.journal.done = false;
            }
            other => self.journal.apply(other),
        }
    }

    /// Whether a snapshot after the segment `segment_bytes` long would save the next resume enough
    /// parsing to be worth writing; after a run that closed segments mid-run (a long one) always,
    /// so that its restart parses nothing, as after a run too short to close any.
    pub fn worth_a_snapshot(&self, segment_bytes: u64) -> bool {
        self.read.uncovered + segment_bytes >= snapshot::worth_writing() || (self.closed_segments && segment_bytes > 0)
    }

    /// The segment `segment` (number and size) was closed mid-run, `covered` by a snapshot just
    /// written or not: later snapshots cover it as one of the segments read.
    pub fn close_segment(&mut self, segment: (u32, u64), covered: bool) {
        self.read.covers.push(segment);
        self.closed_segments = true;
        self.read.uncovered = if covered { 0 } else { self.read.uncovered + segment.1 };
    }

    /// Write `worker`'s snapshot in `dir`, covering the segments read and `segment` (number and
    /// size), with `evaluated`: every evaluation the journal records, in order.
    pub fn write_snapshot(
        &mut self,
        dir: &Path,
        worker: usize,
        segment: (u32, u64),
        evaluated: &[Individual],
    ) -> Result<()> {
        if evaluated.len() != self.evaluations {
            return Err(Error::Checkpoint(format!(
                "worker {worker} holds {} evaluations where its journal has {}; no snapshot written",
                evaluated.len(),
                self.evaluations
            )));
        }
        // As reading drops them: children whose evaluation is in the journal.
        let next = self.generation_offset + evaluated.len() as u64;
        self.journal.in_flight.retain(|id: &IndividualId| id.generation >= next);
        let mut covers = self.read.covers.clone();
        covers.push(segment);
        let j = &self.journal;
        let journal = JournalRef {
            evaluated,
            in_flight: &j.in_flight,
            emigrations: &j.emigrations,
            seeds: &j.seeds,
            deactivations: &j.deactivations,
            done: j.done,
        };
        snapshot::write(dir, worker, &covers, journal, &self.read.warnings)
    }
}
