//! Deciding, before anything is written, whether a run starts fresh or resumes its checkpoint, and
//! with which propagator. Rank 0 reads the checkpoint's manifest once ([`open`]), resolves the
//! propagator against it and hands both to every rank; then rank 0 writes the manifest of a fresh
//! run and every worker root replays its journal ([`prepare`]). Errors are agreed on over the
//! whole world, so every rank returns the same error and none waits for a rank that gave up.

use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::journal::{
    MAX_WORKERS, Manifest, SegmentsRead, ensure_unlocked, inspect_checkpoint, read_worker_journal, reshape,
    write_snapshot,
};
use crate::observe::{Event, RankObservers};

use super::agree::{WireError, agree};
use super::resume::{Resumed, rebuild};
use crate::transport::Communicator;
use propulate_core::layout::Layout;
use propulate_core::propagator::{Continued, Problem, PropagatorSpec};
use propulate_core::space::SearchSpace;

/// What rank 0 found where the run checkpoints.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    /// On rank 0, the manifest of the checkpoint the run resumes; `None`: a new run (a reshaped
    /// one too), and on every other rank.
    pub manifest: Option<Manifest>,
    /// The built-in propagator the run breeds with, resolved (the same on every rank); `None`: the
    /// program's own.
    pub propagator: Option<PropagatorSpec>,
    /// On rank 0, what `auto` picked and why, when the run asked for it.
    pub picked: Option<String>,
    /// The generations the run goes to (the same on every rank): its own, or, where it gave them
    /// by default and resumes, its checkpoint's.
    pub generations: u64,
}

/// Rank 0 checks the checkpoint's directory, reads its manifest and resolves the propagator
/// against it; every rank gets the same propagator or the same error (collective).
pub(crate) fn open(
    world: &mut dyn Communicator,
    cfg: &RunConfig,
    space: &SearchSpace,
    layout: &Layout,
) -> Result<Opened> {
    // Every rank computes the same layout, so every rank returns this error before any collective.
    if cfg.checkpoint.is_some() && layout.workers() > MAX_WORKERS {
        return Err(Error::InvalidConfig(format!(
            "a checkpoint holds at most {MAX_WORKERS} workers (worker-NNNNN journal names), this run has {}; \
             use more ranks per worker or run without --checkpoint",
            layout.workers()
        )));
    }
    let (mut opened, mut bytes) = (Opened::default(), Vec::new());
    if world.rank() == 0 {
        let found = open_on_rank_0(cfg, space, layout);
        // JSON, not the wire's postcard: a spec is a tagged object (`"name"` inside).
        bytes = serde_json::to_vec(&found.as_ref().map(|o| (&o.propagator, o.generations)).map_err(WireError::from))
            .expect("a propagator spec serializes");
        opened = found.unwrap_or_default();
    }
    world.broadcast(0, &mut bytes)?;
    let decided: std::result::Result<(Option<PropagatorSpec>, u64), WireError> = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Decode(format!("the propagator from rank 0 does not decode: {e}")))?;
    (opened.propagator, opened.generations) = decided?;
    Ok(opened)
}

fn open_on_rank_0(cfg: &RunConfig, space: &SearchSpace, layout: &Layout) -> Result<Opened> {
    if let Some(ck) = &cfg.checkpoint
        && ck.dir.as_os_str().is_empty()
    {
        return Err(Error::InvalidConfig(
            "a warm start seeds the run's checkpoint, and the run has none: give it one (Optimizer::checkpoint)".into(),
        ));
    }
    let manifest = match &cfg.checkpoint {
        Some(ck) => inspect_checkpoint(&ck.dir)?,
        None => None,
    };
    // A reshape's source that does not read is reported by the reshape itself.
    let reshaped = match (&manifest, cfg.checkpoint.as_ref().and_then(|ck| ck.reshape_from.as_deref())) {
        (None, Some(old)) => Manifest::read(old).ok(),
        _ => None,
    };
    let dir = cfg.checkpoint.as_ref().map(|ck| ck.dir.display().to_string()).unwrap_or_default();
    let continued = match (&manifest, &reshaped) {
        (Some(m), _) => m.config.propagator.as_ref().map(|spec| Continued::Resumed { checkpoint: &dir, spec }),
        (None, Some(m)) => m.config.propagator.as_ref().map(Continued::Reshaped),
        (None, None) => None,
    };
    let generations = match (&manifest, cfg.generations_by_default) {
        (Some(m), true) => m.config.generations,
        _ => cfg.generations,
    };
    // What `auto` picks by: the space, the evaluations planned, the objectives.
    let evaluations = generations.saturating_mul(layout.workers() as u64);
    let problem = Problem::new(space, evaluations, layout.islands(), cfg.objectives.len());
    let (propagator, picked) =
        propagator_in_effect(cfg, continued.unwrap_or(Continued::Nothing), layout.workers(), &problem)?;
    // The spec travels to the other ranks, and into the manifest, as JSON, which has no NaN or
    // infinity: such a setting is refused here, by name, not as an undecodable message.
    if let Some(spec) = &propagator {
        let back = serde_json::to_value(spec).ok().and_then(|v| serde_json::from_value::<PropagatorSpec>(v).ok());
        if back.as_ref() != Some(spec) {
            return Err(Error::InvalidConfig(format!(
                "propagator {}: every setting must be a finite number ({:?})",
                spec.name(),
                spec.settings()
            )));
        }
    }
    Ok(Opened { manifest, propagator, picked, generations })
}

/// The built-in propagator a run breeds with: the command line's choice resolved against the run
/// it continues, else the program's spec, else the continued run's (a library resume without a
/// spec breeds as its checkpoint did), else what `auto` picks for the problem; `None` with the
/// program's own propagator.
fn propagator_in_effect(
    cfg: &RunConfig,
    continued: Continued<'_>,
    workers: usize,
    problem: &Problem,
) -> Result<(Option<PropagatorSpec>, Option<String>)> {
    if cfg.custom_propagator.is_some() {
        return Ok((None, None));
    }
    let spec = match (&cfg.propagator_choice, &cfg.propagator, continued) {
        (Some(choice), _, _) => {
            let (spec, picked) = choice.resolve_for(continued, workers, Some(problem))?;
            return Ok((Some(spec), picked));
        }
        (None, Some(spec), _) => spec.clone(),
        (None, None, Continued::Resumed { spec, .. } | Continued::Reshaped(spec)) => spec.clone(),
        // A new run that names nothing gets what `auto` picks, as the command line's tasks do.
        (None, None, Continued::Nothing) => {
            let (spec, picked) = problem.spec(workers)?;
            return Ok((Some(spec), Some(picked)));
        }
    };
    Ok((Some(spec), None))
}

fn check(manifest: &Manifest, cfg: &RunConfig, space: &SearchSpace, layout: &Layout) -> Result<()> {
    let ck = cfg.checkpoint.as_ref().expect("checkpointing is on");
    let diffs = manifest.differences(cfg, space, layout, &ck.extra);
    if diffs.is_empty() {
        return Ok(());
    }
    // Only the layout differs: a job of another size continues the run into a new directory.
    let layout_only = diffs.iter().all(|d| d.starts_with("number of workers") || d.starts_with("islands"));
    let reshape = match &ck.reshape_from {
        Some(old) if crate::files::place::same_place(old, &ck.dir) => {
            "\n--reshape-from and --checkpoint name the same directory: the reshaped run needs a new one"
        }
        _ if layout_only => {
            "\na job of another size continues it into a new directory: --reshape-from DIR --checkpoint NEW"
        }
        _ => "",
    };
    Err(Error::Checkpoint(format!(
        "{} holds a different run; resume it with the same settings or choose another checkpoint directory:\n  - {}{reshape}",
        ck.dir.display(),
        diffs.join("\n  - ")
    )))
}

/// Returns what each worker root resumes with, or `None` for a fresh run (and on followers).
/// `opened` is what [`open`] returned.
pub(crate) fn prepare(
    world: &mut dyn Communicator,
    roots: Option<&mut dyn Communicator>,
    cfg: &RunConfig,
    space: &SearchSpace,
    layout: &Layout,
    observers: &mut RankObservers<'_>,
    opened: Opened,
) -> Result<Option<Resumed>> {
    let Some(ck) = &cfg.checkpoint else { return Ok(None) };
    // Rank 0 checks the manifest (and writes the manifest of a fresh run, or the reshaped run's);
    // every root then reads the journals under the manifest rank 0 read or wrote.
    let mut fresh = false;
    let status = if world.rank() == 0 {
        match (opened.manifest, &ck.reshape_from) {
            (None, Some(old)) => reshape(old, &ck.dir, cfg, space, layout, &ck.extra).map(|(n, manifest)| {
                observers.emit(&Event::Notice(&format!(
                    "seeded {} with the {n} active individuals of {}, redistributed over {} island{}",
                    ck.dir.display(),
                    old.display(),
                    layout.islands(),
                    if layout.islands() == 1 { "" } else { "s" }
                )));
                Some(manifest)
            }),
            (None, None) if !ck.warm_start.is_empty() => {
                crate::warm_start::seed(ck, cfg, space, layout).map(|(notice, manifest)| {
                    observers.emit(&Event::Notice(&notice));
                    Some(manifest)
                })
            }
            (None, None) => {
                fresh = true;
                Manifest::new(cfg, space, layout, ck.extra.clone()).write(&ck.dir).map(|()| None)
            }
            (Some(m), _) => check(&m, cfg, space, layout).map(|()| {
                // A warm start was applied when the run began: its evaluations are in the journal.
                let warm = if ck.warm_start.is_empty() { "" } else { " (its warm start was applied when it began)" };
                let changed = m.changed_settings(cfg);
                let changed = if changed.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; from now on with other settings than its evaluations so far ({}; another --checkpoint \
                         starts a new run)",
                        changed.join("; ")
                    )
                };
                observers.emit(&Event::Notice(&format!("resuming the run in {}{warm}{changed}", ck.dir.display())));
                Some(m)
            }),
        }
    } else {
        Ok(None)
    };
    let (manifest, status) = match status {
        Ok(m) => (m, Ok(())),
        Err(e) => (None, Err(e)),
    };
    agree(world, status)?;
    if world.any(fresh)? {
        return Ok(None);
    }
    let manifest = share_manifest(world, manifest)?;
    // Every worker root reads its own journal (in parallel, each file parsed once), then the roots
    // exchange what each island needs (driver::resume).
    // Followers of multi-rank workers take part in both agreements below.
    let Some(roots) = roots else {
        agree(world, Ok(()))?;
        agree(world, Ok(()))?;
        return Ok(None);
    };
    let worker = roots.rank();
    let mine =
        ensure_unlocked(&ck.dir, worker).and_then(|()| read_worker_journal(&ck.dir, worker, &manifest)).map(|read| {
            for w in read.warnings() {
                observers.emit(&Event::Warning(w));
            }
            // The next resume decodes what this one parsed (journal/snapshot.rs); a snapshot that
            // cannot be written costs that resume time, nothing else.
            let mut uncovered = read.parsed_bytes;
            if read.worth_a_snapshot() {
                match write_snapshot(&ck.dir, worker, &read.segments, &read.journal, &read.tail_warnings) {
                    Ok(()) => uncovered = 0,
                    Err(e) => {
                        observers.emit(&Event::Warning(&format!("no snapshot of the journal for the next resume: {e}")))
                    }
                }
            }
            (read.journal, SegmentsRead { covers: read.segments, warnings: read.tail_warnings, uncovered })
        });
    let (mine, status) = match mine {
        Ok(m) => (Some(m), Ok(())),
        Err(e) => (None, Err(e)),
    };
    agree(world, status)?;
    let (journal, segments) = mine.expect("agreed above");
    let (resumed, status) = match rebuild(roots, layout, manifest.generation_offset, journal, segments) {
        Ok(r) => (Some(r), Ok(())),
        Err(e) => (None, Err(e)),
    };
    agree(world, status)?;
    Ok(resumed)
}

/// Rank 0's manifest for every rank (collective): the roots read their journals under it.
fn share_manifest(world: &mut dyn Communicator, manifest: Option<Manifest>) -> Result<Manifest> {
    let mut bytes =
        if world.rank() == 0 { serde_json::to_vec(&manifest).expect("a manifest serializes") } else { Vec::new() };
    world.broadcast(0, &mut bytes)?;
    let shared: Option<Manifest> = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Decode(format!("the checkpoint's manifest from rank 0 does not decode: {e}")))?;
    shared.ok_or_else(|| Error::Checkpoint("rank 0 resumed without a manifest".into()))
}
