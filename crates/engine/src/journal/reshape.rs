//! Continuing a run on a different number of workers or islands. The old checkpoint is only read:
//! its islands' active populations are merged, ranked by loss and dealt round-robin to the new
//! islands, which start a new checkpoint seeded with them. The new workers number their
//! generations after the old run's last one, so identities never collide.

use std::path::Path;

use super::{Event, JournalWriter, Manifest, Migrants, island_populations, read_checkpoint};
use crate::config::RunConfig;
use crate::error::{Error, Result};
use propulate_core::individual::Individual;
use propulate_core::layout::Layout;
use propulate_core::space::SearchSpace;

/// Seed the new checkpoint `new_dir` (which must not hold a run) from the run in `old_dir`:
/// write each new island's share as a `seed` record in the journal of the island's first worker,
/// then the manifest. Returns the number of individuals carried over and the manifest written.
pub fn reshape(
    old_dir: &Path,
    new_dir: &Path,
    cfg: &RunConfig,
    space: &SearchSpace,
    layout: &Layout,
    extra: &serde_json::Map<String, serde_json::Value>,
) -> Result<(usize, Manifest)> {
    let old = read_checkpoint(old_dir)?
        .ok_or_else(|| Error::Checkpoint(format!("--reshape-from {}: no checkpoint there", old_dir.display())))?;
    let mut problems = Vec::new();
    if old.manifest.space != *space {
        problems.push("the search space differs".to_string());
    }
    if old.manifest.config.objectives != cfg.objectives {
        problems.push("the objectives differ".to_string());
    }
    for (key, value) in &old.manifest.extra {
        if let Some(new) = extra.get(key)
            && new != value
        {
            problems.push(format!("{key}: {value} there, {new} here"));
        }
    }
    if !problems.is_empty() {
        return Err(Error::Checkpoint(format!(
            "--reshape-from {} holds a run of another problem: {}",
            old_dir.display(),
            problems.join("; ")
        )));
    }
    let mut merged: Vec<Individual> =
        island_populations(&old).iter().flat_map(|pop| pop.iter_best().cloned().collect::<Vec<_>>()).collect();
    merged.sort_by(|a, b| a.rank_key().cmp(&b.rank_key()).then(a.id.cmp(&b.id)));
    merged.dedup_by_key(|i| i.id); // pollination copies
    let offset = old
        .workers
        .iter()
        .flat_map(|j| j.evaluated.last())
        .map(|i| i.id.generation + 1)
        .max()
        .unwrap_or(0)
        .max(old.manifest.generation_offset);
    let mut extra = extra.clone();
    extra.insert("reshaped_from".into(), old_dir.display().to_string().into());
    seed_checkpoint(new_dir, cfg, space, layout, extra, merged, offset)
}

/// Write a new checkpoint into `new_dir` (which must not hold a run) seeded with `seeds`, best
/// first, dealt round-robin to the islands of `layout`: each island's share as a `seed` record in
/// the journal of its first worker, then the manifest with `extra` and the generation offset
/// `offset` (above every seed's generation: this run's identities never collide with theirs).
/// Returns the number of individuals seeded and the manifest written.
pub(crate) fn seed_checkpoint(
    new_dir: &Path,
    cfg: &RunConfig,
    space: &SearchSpace,
    layout: &Layout,
    extra: serde_json::Map<String, serde_json::Value>,
    mut seeds: Vec<Individual>,
    offset: u64,
) -> Result<(usize, Manifest)> {
    seeds.sort_by(|a, b| a.rank_key().cmp(&b.rank_key()).then(a.id.cmp(&b.id)));
    let merged = seeds;
    let islands = layout.islands();
    let mut shares: Vec<Vec<Individual>> = vec![Vec::new(); islands];
    for (k, mut ind) in merged.into_iter().enumerate() {
        let island = k % islands;
        // As migration assigns it, so that later copies of a seed name the same worker.
        ind.responsible_worker = layout.responsible_worker(&ind.id, island, offset);
        ind.migration_steps += 1;
        ind.record_move(island as u32);
        shares[island].push(ind);
    }
    // Build the new checkpoint beside its final place and move it there in one rename, so that a
    // failure half-way leaves no half-made checkpoint behind.
    let name = new_dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "checkpoint".into());
    let staging = new_dir.with_file_name(format!("{name}.reshaping"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?; // a failed earlier attempt
    }
    std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    let carried = shares.iter().map(Vec::len).sum();
    for (island, share) in shares.into_iter().enumerate() {
        let first = layout.island_workers(island).start;
        let mut journal = JournalWriter::create(&staging, first, Default::default())?;
        journal.append(Event::Seed(Migrants { to: island as u32, inds: share }))?;
        journal.sync()?;
    }
    let mut manifest = Manifest::new(cfg, space, layout, extra);
    manifest.generation_offset = offset;
    manifest.write(&staging)?;
    if new_dir.exists() {
        // Only an empty directory can be here (a checkpoint would have been resumed instead).
        std::fs::remove_dir(new_dir).map_err(|e| Error::io(new_dir, e))?;
    }
    std::fs::rename(&staging, new_dir).map_err(|e| Error::io(new_dir, e))?;
    Ok((carried, manifest))
}
