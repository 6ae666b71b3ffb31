//! Journaling: what a worker root appends to its checkpoint journal, and when it forces it to disk.

use propulate_core::individual::Individual;

use super::RootWorker;
use crate::error::Result;
use crate::journal::{Bred, Done, Eval, Event, Rolled};
use crate::observe::Event as ObsEvent;

impl RootWorker<'_, '_> {
    /// Append an event, if checkpointing (the event is built only then).
    pub(super) fn journal(&mut self, event: impl FnOnce() -> Event) -> Result<()> {
        match self.journal.as_mut() {
            Some(j) => j.append(event()),
            None => Ok(()),
        }
    }

    /// Buffer an event with the next write, if checkpointing.
    pub(super) fn journal_deferred(&mut self, event: impl FnOnce() -> Event) {
        if let Some(j) = self.journal.as_mut() {
            j.defer(event());
        }
    }

    /// A `bred` record says what a worker was evaluating when it died; worth its own write for
    /// slow losses, batched with the `eval` record for fast ones (one write fewer).
    pub(super) fn journal_bred(&mut self, ind: &Individual) -> Result<()> {
        let fast = self.evaluated.last().is_some_and(|prev| prev.duration_s < 1e-3);
        let Some(j) = self.journal.as_mut() else { return Ok(()) };
        let bred = Event::Bred(Bred { id: ind.id, values: ind.values.clone() });
        if fast {
            j.defer(bred);
            Ok(())
        } else {
            j.append(bred)
        }
    }

    pub(super) fn journal_evaluated(&mut self, ind: &Individual) -> Result<()> {
        self.journal(|| Event::Eval(Eval { ind: ind.clone() }))
    }

    /// Close a journal segment that has grown long, with a snapshot of the journal so far
    /// (journal/writer.rs), so that a run killed later resumes as fast as one that ended.
    pub(super) fn roll_journal(&mut self) -> Result<()> {
        let Some(j) = self.journal.as_mut() else { return Ok(()) };
        if let Rolled::WithoutSnapshot(e) = j.roll_if_due(&self.evaluated)? {
            self.observers
                .emit(&ObsEvent::Warning(&format!("no snapshot of the journal for a resume after a kill: {e}")));
        }
        Ok(())
    }

    /// The worker ended cleanly: say so, force everything to disk and leave a snapshot of the
    /// journal for the next resume where one saves it enough parsing.
    pub(super) fn journal_done(&mut self) -> Result<()> {
        let generations = self.evaluated.len() as u64;
        self.journal(|| Event::Done(Done { generations }))?;
        let Some(j) = self.journal.as_mut() else { return Ok(()) };
        j.sync()?;
        // A snapshot is a cache: one that cannot be written costs the next resume time, nothing else.
        if let Err(e) = j.leave_snapshot(&self.evaluated) {
            self.observers.emit(&ObsEvent::Warning(&format!("no snapshot of the journal for the next resume: {e}")));
        }
        Ok(())
    }
}
