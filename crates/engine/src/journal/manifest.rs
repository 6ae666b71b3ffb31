//! The manifest: what a checkpoint belongs to. Written once, atomically (temporary file, fsync,
//! rename, fsync of the directory), before any journal line.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::files::checkpoint::MANIFEST;
use propulate_core::layout::Layout;
use propulate_core::space::SearchSpace;

/// Identifies our manifests among other JSON files.
pub const FORMAT: &str = "propulate-rs-checkpoint";
/// The journal format version this build writes and reads.
pub const VERSION: u32 = 1;
/// The largest manifest read. Real ones are a few kilobytes (the search space is the biggest part);
/// the bound keeps a wrong or hostile file from being read whole into memory.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;
/// The most workers a checkpoint can have: journal file names hold the worker index in five
/// digits (`worker-NNNNN.SSSS.jsonl`).
pub const MAX_WORKERS: usize = 100_000;
/// The largest `generation_offset` accepted: far beyond any run, exact as a double for JSON readers
/// of the results (Python, JavaScript), and leaving room to count a run's generations on top of it
/// without overflow.
pub const MAX_GENERATION_OFFSET: u64 = 1 << 53;

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

    /// Read `dir/manifest.json` and check everything later steps rely on (see
    /// [`Manifest::validate`]); an error names the file and what is wrong with it.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(MANIFEST);
        let text = read_bounded(&path)?;
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
        // Parsed again from the text (a few kilobytes) rather than from `value`, so that an error
        // points at its line and column.
        let mut manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| Error::Checkpoint(format!("{}: malformed manifest: {e}", path.display())))?;
        // An edited or damaged manifest is refused here, before anything divides by its layout,
        // allocates by its worker count or samples from its space.
        manifest.validate().map_err(|e| Error::Checkpoint(format!("{}: {e}", path.display())))?;
        super::legacy_propagator::adopt(&mut manifest)
            .map_err(|e| Error::Checkpoint(format!("{}: {e}", path.display())))?;
        Ok(manifest)
    }

    /// Check what serde cannot: the format and version, a layout that adds up (and fits the journal
    /// file names), a valid search space and run configuration, and a generation offset that leaves
    /// room to count on. Returns the checked layout; the error says which field is wrong and how.
    pub fn validate(&self) -> std::result::Result<Layout, String> {
        if self.format != FORMAT {
            return Err(format!("format is \"{}\", not \"{FORMAT}\"", self.format));
        }
        if self.version != VERSION {
            return Err(format!("checkpoint format version {}, this build reads version {VERSION}", self.version));
        }
        let layout = self.checked_layout().map_err(|e| format!("invalid layout: {e}"))?;
        self.space.validate().map_err(|e| format!("space: {e}"))?;
        self.config.validate().map_err(|e| format!("config: {e}"))?;
        if self.generation_offset > MAX_GENERATION_OFFSET {
            return Err(format!(
                "generation_offset is {}, more than the largest accepted ({MAX_GENERATION_OFFSET}); \
                 was the manifest edited?",
                self.generation_offset
            ));
        }
        Ok(layout)
    }

    /// The layout, each number checked by its field name before [`Layout::new`] checks the whole.
    fn checked_layout(&self) -> std::result::Result<Layout, String> {
        let l = &self.layout;
        if l.ranks_per_worker == 0 {
            return Err("layout.ranks_per_worker is 0, but ranks per worker must be at least 1".into());
        }
        if l.world_size == 0 || !l.world_size.is_multiple_of(l.ranks_per_worker) {
            return Err(format!(
                "layout.world_size {} is not a positive multiple of layout.ranks_per_worker {}",
                l.world_size, l.ranks_per_worker
            ));
        }
        let workers = l.world_size / l.ranks_per_worker;
        if workers > MAX_WORKERS {
            return Err(format!(
                "{workers} workers (layout.world_size / layout.ranks_per_worker), but a checkpoint holds \
                 at most {MAX_WORKERS} (worker-NNNNN journal names)"
            ));
        }
        if l.island_sizes.is_empty() {
            return Err("layout.island_sizes is empty; a run has at least one island".into());
        }
        if let Some(i) = l.island_sizes.iter().position(|&s| s == 0) {
            return Err(format!("layout.island_sizes[{i}] is 0; every island has at least one worker"));
        }
        // Compared one by one so that a huge size cannot overflow the sum.
        let mut sum = 0usize;
        for &s in &l.island_sizes {
            sum = sum.saturating_add(s);
            if sum > workers {
                break;
            }
        }
        if sum != workers {
            return Err(format!(
                "layout.island_sizes add up to {}{sum} workers, but the layout has {workers} \
                 (layout.world_size {} / layout.ranks_per_worker {})",
                if sum > workers { "more than " } else { "" },
                l.world_size,
                l.ranks_per_worker
            ));
        }
        self.layout().map_err(|e| e.to_string())
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
        let tmp = dir.join(crate::files::checkpoint::MANIFEST_TEMPORARY);
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

    /// Every difference that forbids resuming this checkpoint with `config`, `space` and `layout`
    /// (the propagator and each of its settings included). More generations are allowed; so is a
    /// change of the settings that do not shape the state (progress, top-n, migration
    /// probability).
    pub fn differences(
        &self,
        config: &RunConfig,
        space: &SearchSpace,
        layout: &Layout,
        extra: &serde_json::Map<String, serde_json::Value>,
    ) -> Vec<String> {
        let mut d = Vec::new();
        if self.space != *space {
            d.push(format!("search space: {}", space_differences(&self.space, space)));
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
        d.extend(propagator_differences(&self.config, config));
        if self.config.objectives != config.objectives {
            d.push(format!(
                "objectives: checkpoint has {}, this run has {}",
                describe_objectives(&self.config.objectives),
                describe_objectives(&config.objectives)
            ));
        }
        if self.config.enqueued != config.enqueued {
            let (theirs, ours) = (&self.config.enqueued, &config.enqueued);
            let first = theirs.iter().zip(ours).position(|(a, b)| a != b);
            let how = match first {
                Some(k) => format!("configuration {} differs", k + 1),
                None => format!("checkpoint has {}, this run has {}", theirs.len(), ours.len()),
            };
            d.push(format!("enqueued configurations: {how} (give the same --enqueue)"));
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

impl Manifest {
    /// The settings a resume may change (how islands exchange individuals) that `config` does
    /// change, each as `what: checkpoint has A, this run has B`: said at the resume, as the
    /// evaluations before it ran with the checkpoint's, and a sweep over one of them that reuses
    /// one checkpoint directory would otherwise resume the first point's run unawares.
    pub fn changed_settings(&self, config: &RunConfig) -> Vec<String> {
        let (old, new) = (&self.config, config);
        let mut changed = Vec::new();
        if old.migration_probability != new.migration_probability {
            let (a, b) = (old.migration_probability, new.migration_probability);
            changed.push(format!("migration probability: checkpoint has {a}, this run has {b}"));
        }
        let mut compare = |what: &str, a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug, same: bool| {
            if !same {
                changed.push(format!("{what}: checkpoint has {a:?}, this run has {b:?}"));
            }
        };
        compare("topology", &old.topology, &new.topology, old.topology == new.topology);
        compare("emigration", &old.emigration, &new.emigration, old.emigration == new.emigration);
        compare("immigration", &old.immigration, &new.immigration, old.immigration == new.immigration);
        changed
    }
}

/// How the propagator `config` breeds with differs from the one `recorded` bred with: a built-in
/// one by each setting, a program's own one by its name. A manifest from before propagators were
/// recorded with every setting, holding neither, is compared with nothing.
fn propagator_differences(recorded: &RunConfig, config: &RunConfig) -> Vec<String> {
    let describe = |c: &RunConfig| match (&c.propagator, &c.custom_propagator) {
        (_, Some(custom)) => format!("the program's own propagator '{custom}'"),
        (Some(spec), None) => spec.name().to_string(),
        (None, None) => String::new(),
    };
    let (old, new) = (describe(recorded), describe(config));
    if old.is_empty() {
        return Vec::new();
    }
    if let (Some(a), Some(b), None, None) =
        (&recorded.propagator, &config.propagator, &recorded.custom_propagator, &config.custom_propagator)
    {
        return a
            .differences(b)
            .into_iter()
            .map(|(what, a, b)| format!("{what}: checkpoint has {a}, this run has {b}"))
            .collect();
    }
    if old == new { Vec::new() } else { vec![format!("propagator: checkpoint has {old}, this run has {new}")] }
}

/// The manifest's text, refused beyond [`MAX_MANIFEST_BYTES`] (the limit applies while reading, so
/// a file that grows or a device that never ends cannot exhaust memory either).
fn read_bounded(path: &Path) -> Result<String> {
    let file = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(Error::Checkpoint(format!(
            "{}: larger than {} MiB; a propulate-rs manifest is a few kilobytes, so this is not one \
             (or it is damaged)",
            path.display(),
            MAX_MANIFEST_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::Checkpoint(format!(
            "{}: not valid JSON (not UTF-8 at byte {}); is this a propulate-rs checkpoint?",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

fn describe_objectives(list: &[propulate_core::Objective]) -> String {
    if list.is_empty() {
        return "one loss".into();
    }
    list.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// How the checkpoint's space differs from this run's, parameter by parameter (a whole space of
/// 20 parameters printed twice hides the one that changed).
fn space_differences(theirs: &SearchSpace, ours: &SearchSpace) -> String {
    let describe = |p: &propulate_core::space::Param| serde_json::to_string(p).unwrap_or_default();
    let find = |s: &SearchSpace, name: &str| s.params().iter().find(|p| p.name == name).cloned();
    let mut d = Vec::new();
    for p in theirs.params() {
        match find(ours, &p.name) {
            None => d.push(format!("parameter '{}' only in the checkpoint", p.name)),
            Some(q) if q != *p => {
                d.push(format!("parameter '{}': checkpoint has {}, this run has {}", p.name, describe(p), describe(&q)))
            }
            Some(_) => {}
        }
    }
    for q in ours.params().iter().filter(|q| find(theirs, &q.name).is_none()) {
        d.push(format!("parameter '{}' only in this run", q.name));
    }
    if d.is_empty() {
        let names = |s: &SearchSpace| s.params().iter().map(|p| p.name.clone()).collect::<Vec<_>>().join(", ");
        d.push(format!(
            "the same parameters in another order (checkpoint: {}; this run: {}); the journals hold values in the \
             checkpoint's order",
            names(theirs),
            names(ours)
        ));
    }
    d.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use propulate_core::IslandSpec;
    use serde_json::{Value as Json, json};

    #[test]
    fn a_changed_space_is_told_parameter_by_parameter() {
        let space = |names: &[&str], hi: f64| {
            names.iter().fold(SearchSpace::builder(), |b, n| b.float(n, 0.0, hi)).build().unwrap()
        };
        let d = space_differences(&space(&["a", "b"], 1.0), &space(&["a", "c"], 1.0));
        assert_eq!(d, "parameter 'b' only in the checkpoint; parameter 'c' only in this run");
        let d = space_differences(&space(&["a"], 1.0), &space(&["a"], 2.0));
        assert!(d.starts_with("parameter 'a': checkpoint has {") && d.contains(r#""hi":2.0"#), "{d}");
        let d = space_differences(&space(&["a", "b"], 1.0), &space(&["b", "a"], 1.0));
        assert!(d.starts_with("the same parameters in another order (checkpoint: a, b; this run: b, a)"), "{d}");
    }

    /// How islands exchange individuals may change at a resume, and is said, not refused.
    #[test]
    fn settings_a_resume_may_change_are_named() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        let layout = Layout::new(4, 1, &IslandSpec::Count(2)).unwrap();
        let m = Manifest::new(&RunConfig::default(), &space, &layout, Default::default());
        assert!(m.changed_settings(&RunConfig::default()).is_empty());
        let other =
            RunConfig { migration_probability: 0.5, emigration: crate::Selection::Uniform, ..RunConfig::default() };
        assert!(m.differences(&other, &space, &layout, &Default::default()).is_empty());
        let changed = m.changed_settings(&other);
        assert_eq!(changed.len(), 2, "{changed:?}");
        assert!(
            changed[0].starts_with("migration probability: checkpoint has 0.9")
                && changed[0].ends_with("this run has 0.5")
        );
        assert!(changed[1].starts_with("emigration: checkpoint has"), "{changed:?}");
    }

    /// A valid manifest as JSON, edited by `edit`, written and read back; the error message.
    fn read_edited(edit: impl FnOnce(&mut Json)) -> String {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).categorical("act", &["relu"]).build().unwrap();
        let layout = Layout::new(4, 1, &IslandSpec::Count(2)).unwrap();
        let m = Manifest::new(&RunConfig::default(), &space, &layout, Default::default());
        let mut json = serde_json::to_value(&m).unwrap();
        let dir = tempfile::tempdir().unwrap();
        m.write(dir.path()).unwrap();
        Manifest::read(dir.path()).expect("the unedited manifest reads");
        edit(&mut json);
        fs::write(dir.path().join(MANIFEST), serde_json::to_vec(&json).unwrap()).unwrap();
        let e = Manifest::read(dir.path()).expect_err("the edited manifest should be refused").to_string();
        assert!(e.contains(&dir.path().join(MANIFEST).display().to_string()), "no file name in: {e}");
        e
    }

    fn refused(edit: impl FnOnce(&mut Json), expected: &[&str]) {
        let e = read_edited(edit);
        for part in expected {
            assert!(e.contains(part), "'{part}' missing in: {e}");
        }
    }

    #[test]
    fn a_bad_layout_is_refused_by_field() {
        refused(|j| j["layout"]["ranks_per_worker"] = json!(0), &["invalid layout", "ranks_per_worker is 0"]);
        refused(|j| j["layout"]["world_size"] = json!(0), &["layout.world_size 0"]);
        refused(
            |j| j["layout"]["ranks_per_worker"] = json!(3),
            &["not a positive multiple of layout.ranks_per_worker 3"],
        );
        refused(|j| j["layout"]["island_sizes"] = json!([]), &["layout.island_sizes is empty"]);
        refused(|j| j["layout"]["island_sizes"] = json!([4, 0]), &["layout.island_sizes[1] is 0"]);
        refused(|j| j["layout"]["island_sizes"] = json!([1, 2]), &["add up to 3 workers", "has 4"]);
        refused(
            |j| j["layout"]["island_sizes"] = json!([u64::MAX, u64::MAX]),
            &["add up to more than", "layout.world_size 4"],
        );
        refused(
            |j| {
                j["layout"]["world_size"] = json!(1u64 << 40);
                j["layout"]["island_sizes"] = json!([1u64 << 40]);
            },
            &["1099511627776 workers", "at most 100000"],
        );
    }

    #[test]
    fn a_bad_space_config_or_offset_is_refused_by_field() {
        refused(|j| j["space"]["params"] = json!([]), &["space:", "no parameters"]);
        refused(|j| j["space"]["params"][0]["lo"] = json!(2.0), &["space:", "'x'", "below"]);
        refused(|j| j["space"]["params"][1]["choices"] = json!([]), &["space:", "'act'", "choice"]);
        refused(|j| j["space"]["params"][1]["name"] = json!("x"), &["space:", "'x' is defined twice"]);
        refused(|j| j["config"]["generations"] = json!(0), &["config:", "generations"]);
        refused(|j| j["config"]["migration_probability"] = json!(7.0), &["config:", "migration probability"]);
        refused(|j| j["generation_offset"] = json!(u64::MAX), &["generation_offset is 18446744073709551615"]);
        refused(|j| j["generation_offset"] = json!(-1), &["malformed manifest", "expected u64", "line 1"]);
        refused(|j| j["version"] = json!(2), &["version 2"]);
        refused(|j| j["format"] = json!("other"), &["not a propulate-rs checkpoint manifest"]);
    }

    #[test]
    fn an_oversized_or_binary_manifest_is_refused_without_reading_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST);
        let f = fs::File::create(&path).unwrap();
        f.set_len(MAX_MANIFEST_BYTES + 1).unwrap(); // sparse: costs no disk
        let e = Manifest::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("manifest.json") && e.contains("larger than 16 MiB"), "{e}");
        fs::write(&path, b"{\"format\": \"\xff\xfe\"}").unwrap();
        let e = Manifest::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("manifest.json") && e.contains("not UTF-8 at byte 12"), "{e}");
    }
}
