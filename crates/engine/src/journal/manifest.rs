//! The manifest: what a checkpoint belongs to. Written once, atomically (temporary file, fsync,
//! rename, fsync of the directory), before any journal line.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::RunConfig;
use crate::error::{Error, Result};
use propulate_core::layout::Layout;
use propulate_core::space::SearchSpace;

/// Identifies our manifests among other JSON files.
pub const FORMAT: &str = "propulate-rs-checkpoint";
/// The journal format version this build writes and reads.
pub const VERSION: u32 = 1;
/// The manifest's file name inside the checkpoint directory.
pub const MANIFEST: &str = "manifest.json";

/// The layout as recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointLayout {
    /// Ranks in the job.
    pub world_size: usize,
    /// Ranks per worker.
    pub ranks_per_worker: usize,
    /// Workers per island.
    pub island_sizes: Vec<usize>,
}

impl From<&Layout> for CheckpointLayout {
    fn from(l: &Layout) -> Self {
        CheckpointLayout {
            world_size: l.world_size(),
            ranks_per_worker: l.ranks_per_worker(),
            island_sizes: l.island_sizes().to_vec(),
        }
    }
}

/// Everything a resume must agree with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// Journal format version.
    pub version: u32,
    /// When the run was first started (RFC 3339).
    pub created: String,
    /// The run configuration of the first start (generations may grow on resume).
    pub config: RunConfig,
    /// The search space.
    pub space: SearchSpace,
    /// The division into workers and islands.
    pub layout: CheckpointLayout,
    /// Free-form facts about the run (the CLI records the benchmark function).
    #[serde(default)]
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// First generation of every worker: 0, or past the last generation of the checkpoint a
    /// reshaped run was seeded from, so that identities never collide with imported ones.
    #[serde(default)]
    pub generation_offset: u64,
}

impl Manifest {
    /// A manifest for a new run.
    pub fn new(
        config: &RunConfig,
        space: &SearchSpace,
        layout: &Layout,
        extra: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        Manifest {
            format: FORMAT.into(),
            version: VERSION,
            created: chrono::Utc::now().to_rfc3339(),
            config: config.clone(),
            space: space.clone(),
            layout: layout.into(),
            extra,
            generation_offset: 0,
        }
    }

    /// Read `dir/manifest.json`; an error names the file and what is wrong with it.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(MANIFEST);
        let text = fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            Error::Checkpoint(format!("{}: not valid JSON ({e}); is this a propulate-rs checkpoint?", path.display()))
        })?;
        if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(Error::Checkpoint(format!(
                "{}: not a propulate-rs checkpoint manifest (no \"format\": \"{FORMAT}\")",
                path.display()
            )));
        }
        let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
        if version != VERSION as u64 {
            return Err(Error::Checkpoint(format!(
                "{}: checkpoint format version {version}, this build reads version {VERSION}",
                path.display()
            )));
        }
        let manifest: Manifest = serde_json::from_value(value)
            .map_err(|e| Error::Checkpoint(format!("{}: malformed manifest: {e}", path.display())))?;
        // An edited or damaged layout is refused here, before anything divides by it.
        manifest.layout().map_err(|e| Error::Checkpoint(format!("{}: invalid layout: {e}", path.display())))?;
        Ok(manifest)
    }

    /// The checked layout the manifest records.
    pub fn layout(&self) -> std::result::Result<Layout, propulate_core::Error> {
        let l = &self.layout;
        Layout::new(l.world_size, l.ranks_per_worker, &propulate_core::IslandSpec::Sizes(l.island_sizes.clone()))
    }

    /// Write `dir/manifest.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(MANIFEST);
        let tmp = dir.join(format!("{MANIFEST}.tmp"));
        let text = serde_json::to_string_pretty(self).expect("manifest serializes") + "\n";
        let mut f = fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(text.as_bytes()).map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Every difference that forbids resuming this checkpoint with `config`, `space` and `layout`.
    /// More generations are allowed; so is a change of the settings that do not shape the state
    /// (progress, top-n, migration probability, propagator knobs).
    pub fn differences(
        &self,
        config: &RunConfig,
        space: &SearchSpace,
        layout: &Layout,
        extra: &serde_json::Map<String, serde_json::Value>,
    ) -> Vec<String> {
        let mut d = Vec::new();
        if self.space != *space {
            d.push(format!(
                "search space: checkpoint has {}, this run has {}",
                describe_space(&self.space),
                describe_space(space)
            ));
        }
        let now = CheckpointLayout::from(layout);
        let workers = |l: &CheckpointLayout| l.world_size / l.ranks_per_worker;
        if workers(&self.layout) != workers(&now) {
            d.push(format!(
                "number of workers: checkpoint has {}, this run has {}",
                workers(&self.layout),
                workers(&now)
            ));
        }
        if self.layout.ranks_per_worker != now.ranks_per_worker {
            d.push(format!(
                "ranks per worker: checkpoint has {}, this run has {}",
                self.layout.ranks_per_worker, now.ranks_per_worker
            ));
        }
        if self.layout.island_sizes != now.island_sizes {
            d.push(format!(
                "islands: checkpoint has sizes {:?}, this run has {:?}",
                self.layout.island_sizes, now.island_sizes
            ));
        }
        if self.config.seed != config.seed {
            d.push(format!("seed: checkpoint has {}, this run has {}", self.config.seed, config.seed));
        }
        if self.config.pollination != config.pollination {
            d.push(format!(
                "pollination: checkpoint has {}, this run has {}",
                self.config.pollination, config.pollination
            ));
        }
        for (key, old) in &self.extra {
            if let Some(new) = extra.get(key)
                && new != old
            {
                d.push(format!("{key}: checkpoint has {old}, this run has {new}"));
            }
        }
        d
    }
}

fn describe_space(s: &SearchSpace) -> String {
    let names: Vec<String> = s
        .params()
        .iter()
        .map(|p| format!("{} {}", p.name, serde_json::to_string(&p.domain).unwrap_or_default()))
        .collect();
    format!("[{}]", names.join(", "))
}
