//! Deciding, before anything is written, whether a run starts fresh or resumes its checkpoint. Rank
//! 0 reads first (and writes the manifest of a fresh run); then every worker root replays the
//! journals. Errors are agreed on over the whole world, so every rank returns the same error and
//! none waits for a rank that gave up.

use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::journal::{MAX_WORKERS, Manifest, ensure_unlocked, inspect_checkpoint, read_worker_journal, reshape};
use crate::observe::{Event, RankObservers};

use super::agree::agree;
use super::resume::{Resumed, rebuild};
use crate::transport::Communicator;
use propulate_core::layout::Layout;
use propulate_core::space::SearchSpace;

fn check(manifest: &Manifest, cfg: &RunConfig, space: &SearchSpace, layout: &Layout) -> Result<()> {
    let ck = cfg.checkpoint.as_ref().expect("checkpointing is on");
    let diffs = manifest.differences(cfg, space, layout, &ck.extra);
    if diffs.is_empty() {
        return Ok(());
    }
    Err(Error::Checkpoint(format!(
        "{} holds a different run; resume it with the same settings or choose another checkpoint directory:\n  - {}",
        ck.dir.display(),
        diffs.join("\n  - ")
    )))
}

/// Returns what each worker root resumes with, or `None` for a fresh run (and on followers).
pub(crate) fn prepare(
    world: &mut dyn Communicator,
    roots: Option<&mut dyn Communicator>,
    cfg: &RunConfig,
    space: &SearchSpace,
    layout: &Layout,
    observers: &mut RankObservers<'_>,
) -> Result<Option<Resumed>> {
    let Some(ck) = &cfg.checkpoint else { return Ok(None) };
    // Every rank computes the same layout, so every rank returns this error before any collective.
    if layout.workers() > MAX_WORKERS {
        return Err(Error::InvalidConfig(format!(
            "a checkpoint holds at most {MAX_WORKERS} workers (worker-NNNNN journal names), this run has {}; \
             use more ranks per worker or run without --checkpoint",
            layout.workers()
        )));
    }
    // Rank 0 checks the directory and the manifest (and writes the manifest of a fresh run).
    let mut fresh = false;
    let status = if world.rank() == 0 {
        inspect_checkpoint(&ck.dir).and_then(|m| match (m, &ck.reshape_from) {
            (None, Some(old)) => {
                let n = reshape(old, &ck.dir, cfg, space, layout, &ck.extra)?;
                observers.emit(&Event::Notice(&format!(
                    "seeded {} with the {n} active individuals of {}, redistributed over {} islands",
                    ck.dir.display(),
                    old.display(),
                    layout.islands()
                )));
                Ok(())
            }
            (None, None) => {
                fresh = true;
                Manifest::new(cfg, space, layout, ck.extra.clone()).write(&ck.dir)
            }
            (Some(m), _) => {
                check(&m, cfg, space, layout)?;
                observers.emit(&Event::Notice(&format!("resuming the run in {}", ck.dir.display())));
                Ok(())
            }
        })
    } else {
        Ok(())
    };
    agree(world, status)?;
    if world.any(fresh)? {
        return Ok(None);
    }
    // Every worker root reads its own journal (in parallel, each file parsed once), then the roots
    // exchange what each island needs (driver::resume).
    // Followers of multi-rank workers take part in both agreements below.
    let Some(roots) = roots else {
        agree(world, Ok(()))?;
        agree(world, Ok(()))?;
        return Ok(None);
    };
    let worker = roots.rank();
    let mine = ensure_unlocked(&ck.dir, worker).and_then(|()| read_worker_journal(&ck.dir, worker)).map(
        |(manifest, journal, warnings)| {
            for w in &warnings {
                observers.emit(&Event::Warning(w));
            }
            (manifest, journal)
        },
    );
    let (mine, status) = match mine {
        Ok(m) => (Some(m), Ok(())),
        Err(e) => (None, Err(e)),
    };
    agree(world, status)?;
    let (manifest, journal) = mine.expect("agreed above");
    let (resumed, status) = match rebuild(roots, layout, manifest.generation_offset, journal) {
        Ok(r) => (Some(r), Ok(())),
        Err(e) => (None, Err(e)),
    };
    agree(world, status)?;
    Ok(resumed)
}
