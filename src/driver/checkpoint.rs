//! Deciding, before anything is written, whether a run starts fresh or resumes its checkpoint. Rank
//! 0 reads first (and writes the manifest of a fresh run); then every worker root replays the
//! journals. Errors are agreed on over the whole world, so every rank returns the same error and
//! none waits for a rank that gave up.

use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::journal::{Manifest, Replay, read_checkpoint};
use crate::layout::Layout;
use crate::space::SearchSpace;
use crate::transport::Communicator;

fn agree(world: &mut dyn Communicator, mine: Result<()>) -> Result<()> {
    let mut failed = [f64::from(u8::from(mine.is_err()))];
    world.all_reduce_sum(&mut failed)?;
    match mine {
        Err(e) => Err(e),
        Ok(()) if failed[0] > 0.0 => {
            Err(Error::Checkpoint("another rank could not use the checkpoint (see its message)".into()))
        }
        Ok(()) => Ok(()),
    }
}

fn check(replay: Option<Replay>, cfg: &RunConfig, space: &SearchSpace, layout: &Layout) -> Result<Option<Replay>> {
    let Some(replay) = replay else { return Ok(None) };
    let ck = cfg.checkpoint.as_ref().expect("checkpointing is on");
    let diffs = replay.manifest.differences(cfg, space, layout, &ck.extra);
    if diffs.is_empty() {
        return Ok(Some(replay));
    }
    Err(Error::Checkpoint(format!(
        "{} holds a different run; resume it with the same settings or choose another checkpoint directory:\n  - {}",
        ck.dir.display(),
        diffs.join("\n  - ")
    )))
}

/// Returns the replay to resume from (on worker roots), or `None` for a fresh run.
pub(crate) fn prepare(
    world: &mut dyn Communicator,
    cfg: &RunConfig,
    space: &SearchSpace,
    layout: &Layout,
    is_root: bool,
) -> Result<Option<Replay>> {
    let Some(ck) = &cfg.checkpoint else { return Ok(None) };
    let first = if world.rank() == 0 {
        read_checkpoint(&ck.dir).and_then(|r| check(r, cfg, space, layout)).and_then(|r| {
            match &r {
                None => Manifest::new(cfg, space, layout, ck.extra.clone()).write(&ck.dir)?,
                Some(replay) => {
                    for w in &replay.warnings {
                        eprintln!("propulate-rs: warning: {w}");
                    }
                    let done: usize = replay.workers.iter().map(|j| j.evaluated.len()).sum();
                    let in_flight: usize = replay.workers.iter().map(|j| j.in_flight.len()).sum();
                    eprintln!(
                        "propulate-rs: resuming {}: {done} evaluations recorded, {in_flight} in flight (bred again)",
                        ck.dir.display()
                    );
                }
            }
            Ok(r)
        })
    } else {
        Ok(None)
    };
    let (first, status) = match first {
        Ok(r) => (r, Ok(())),
        Err(e) => (None, Err(e)),
    };
    agree(world, status)?;
    // The others read only now, after rank 0 has written the manifest of a fresh run.
    let mine = if world.rank() == 0 {
        Ok(first)
    } else if is_root {
        read_checkpoint(&ck.dir).and_then(|r| check(r, cfg, space, layout))
    } else {
        Ok(None)
    };
    let (replay, status) = match mine {
        Ok(r) => (r, Ok(())),
        Err(e) => (None, Err(e)),
    };
    agree(world, status)?;
    Ok(replay)
}
