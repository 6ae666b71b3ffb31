//! Damaged and edited checkpoints: whatever the manifest or a journal holds, reading it back (for a
//! resume, a report or a reshape) ends in `Ok` or in an error that names the file, never in a panic
//! or a hang. A real checkpoint is written once, then mutated byte by byte and field by field.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value as Json, json};

use propulate_core::SearchSpace;
use propulate_core::layout::{IslandSpec, Layout};
use propulate_engine::config::CheckpointSettings;
use propulate_engine::journal::{
    Manifest, inspect_checkpoint, island_population, read_checkpoint, read_worker_journal, reshape,
};
use propulate_engine::{Optimizer, output, report, report_html};

const RANKS: usize = 4;

fn space() -> SearchSpace {
    SearchSpace::builder()
        .float("x", -2.0, 2.0)
        .log_float("lr", 1e-4, 1e-1)
        .int("n", 0, 9)
        .categorical("act", &["relu", "tanh", "gelu"])
        .build()
        .unwrap()
}

fn optimizer(generations: u64, pollination: bool) -> Optimizer {
    Optimizer::new(space()).generations(generations).islands(2).migration_probability(1.0).pollination(pollination)
}

/// A loss with failures (an error for large `x`) and a metric, so every kind of record appears.
fn run(opt: Optimizer) {
    opt.run_local(RANKS, |p, ctx| {
        let x = p.float("x");
        ctx.record("half", x / 2.0);
        if x > 1.5 {
            return Err("x too large".into());
        }
        Ok(x * x + p.int("n") as f64 + p.float("lr"))
    })
    .unwrap();
}

/// Checkpoints written by real runs: `migration` (resumed once, so two segments per worker),
/// `pollination`, and `reshaped` (seeded from `migration` onto 3 workers and 3 islands, then run).
fn checkpoints() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let migration = tmp.path().join("migration");
        run(optimizer(6, false).checkpoint(&migration));
        run(optimizer(10, false).checkpoint(&migration));
        run(optimizer(8, true).checkpoint(tmp.path().join("pollination")));
        let mut cfg = optimizer(5, false).islands(3).run_config().clone();
        cfg.checkpoint = Some(CheckpointSettings {
            dir: tmp.path().join("reshaped"),
            reshape_from: Some(migration),
            ..Default::default()
        });
        Optimizer::new(space()).config(cfg).run_local(3, |p, _| Ok(p.float("x").abs())).unwrap();
        tmp
    })
    .path()
}

#[test]
fn checkpoints_of_real_runs_pass_every_check() {
    for name in ["migration", "pollination", "reshaped"] {
        let dir = checkpoints().join(name);
        let replay = read_checkpoint(&dir).unwrap_or_else(|e| panic!("{name}: {e}")).unwrap();
        assert!(replay.warnings.is_empty(), "{name}: {:?}", replay.warnings);
        assert!(replay.workers.iter().all(|j| !j.evaluated.is_empty() && j.done), "{name}");
        if name != "reshaped" {
            assert!(replay.workers.iter().any(|j| !j.emigrations.is_empty()), "{name} has no migrations");
        } else {
            assert!(replay.manifest.generation_offset > 0);
            assert!(replay.workers.iter().any(|j| !j.seeds.is_empty()));
        }
    }
}

/// One test's copy of the `migration` checkpoint, made once and shared by its cases (each case
/// damages one file and puts it back).
struct Fixture {
    tmp: tempfile::TempDir,
    dir: PathBuf,
    journals: Vec<PathBuf>,
}

impl Fixture {
    fn get(slot: &'static OnceLock<Fixture>) -> &'static Fixture {
        slot.get_or_init(|| {
            let tmp = tempfile::tempdir().unwrap();
            let (dir, journals) = copy_of_template(tmp.path());
            Fixture { tmp, dir, journals }
        })
    }
}

/// Writes `bytes` over `path` and puts the original back when dropped, however the case ends.
struct Damaged<'a> {
    path: &'a Path,
    original: Vec<u8>,
}

impl<'a> Damaged<'a> {
    fn new(path: &'a Path, original: Vec<u8>, bytes: &[u8]) -> Self {
        std::fs::write(path, bytes).unwrap();
        Damaged { path, original }
    }
}

impl Drop for Damaged<'_> {
    fn drop(&mut self) {
        std::fs::write(self.path, &self.original).unwrap();
    }
}

/// A private copy of the `migration` checkpoint for one test, and the journal files in it.
fn copy_of_template(tmp: &Path) -> (PathBuf, Vec<PathBuf>) {
    let dir = tmp.join("ck");
    std::fs::create_dir_all(&dir).unwrap();
    let mut journals = Vec::new();
    for entry in std::fs::read_dir(checkpoints().join("migration")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().to_string();
        if name.ends_with(".lock") {
            continue;
        }
        std::fs::copy(entry.path(), dir.join(&name)).unwrap();
        if name.ends_with(".jsonl") {
            journals.push(dir.join(&name));
        }
    }
    journals.sort();
    (dir, journals)
}

/// Everything that reads a checkpoint, down to the report's outputs and (with `reshape_too`, as it
/// writes and syncs a new checkpoint) a reshape; an error must name the checkpoint's directory (and
/// so the file). Returns what went wrong, if anything did.
fn read_everything(dir: &Path, scratch: &Path, reshape_too: bool) -> Result<(), String> {
    let names_the_file = |e: &propulate_engine::Error| {
        let e = e.to_string();
        if e.contains(&dir.display().to_string()) { Ok(()) } else { Err(format!("error without its file: {e}")) }
    };
    if let Err(e) = Manifest::read(dir) {
        names_the_file(&e)?;
    }
    if let Err(e) = inspect_checkpoint(dir) {
        names_the_file(&e)?;
    }
    if let Ok(Some(manifest)) = inspect_checkpoint(dir) {
        for worker in 0..RANKS + 1 {
            if let Err(e) = read_worker_journal(dir, worker, &manifest) {
                names_the_file(&e)?;
            }
        }
    }
    let replay = match read_checkpoint(dir) {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(()),
        Err(e) => return names_the_file(&e),
    };
    let space = &replay.manifest.space;
    for island in 0..replay.layout.islands() {
        island_population(&replay, island).best(3);
    }
    let result = report::result_of(&replay, 3);
    report::progress_table(&replay);
    output::summary_table(space, &result);
    output::trials_csv(space, &result.objectives, &result.trials);
    report_html::report_html(space, &result, &Default::default());
    for ind in result.trials.iter().chain(&result.best) {
        output::individual_json(space, &result.objectives, ind);
    }
    if !reshape_too {
        return Ok(());
    }
    let new_dir = scratch.join("reshaped");
    let _ = std::fs::remove_dir_all(&new_dir);
    let layout = Layout::new(3, 1, &IslandSpec::Count(2)).unwrap();
    let cfg = replay.manifest.config.clone();
    if let Err(e) = reshape(dir, &new_dir, &cfg, space, &layout, &replay.manifest.extra) {
        return Err(format!("a checkpoint that reads back cannot be reshaped: {e}"));
    }
    Ok(())
}

/// `read_everything`, with a panic turned into a failure that shows the input.
fn never_panics(
    dir: &Path,
    scratch: &Path,
    reshape_too: bool,
    input: &dyn Fn() -> String,
) -> Result<(), TestCaseError> {
    match catch_unwind(AssertUnwindSafe(|| read_everything(dir, scratch, reshape_too))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(TestCaseError::fail(format!("{e}\ninput:\n{}", input()))),
        Err(_) => Err(TestCaseError::fail(format!("reading panicked on this input:\n{}", input()))),
    }
}

/// Values an edited or damaged field may hold instead of its own.
fn hostile_values() -> Vec<Json> {
    let mut deep = json!(0);
    for _ in 0..300 {
        deep = json!([deep]);
    }
    vec![
        json!(0),
        json!(-1),
        json!(99),
        json!(1_000_000_000),
        json!(u32::MAX),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e308),
        json!(-1e308),
        json!(0.5),
        json!("NaN"),
        json!("inf"),
        json!(""),
        Json::Null,
        json!(true),
        json!([]),
        json!({}),
        json!({"Float": 1e300}),
        json!({"Int": -5}),
        json!({"Cat": 4_000_000_000u32}),
        json!([{"Float": 0.5}]),
        json!({"island": 99, "worker": 1_000_000_000, "generation": u64::MAX}),
        deep,
    ]
}

/// Every JSON pointer in `v`, containers included.
fn pointers(v: &Json, at: String, out: &mut Vec<String>) {
    match v {
        Json::Object(m) => m.iter().for_each(|(k, c)| pointers(c, format!("{at}/{k}"), out)),
        Json::Array(a) => a.iter().enumerate().for_each(|(i, c)| pointers(c, format!("{at}/{i}"), out)),
        _ => {}
    }
    out.push(at);
}

/// One way of damaging a text: raw bytes, or a JSON field replaced or removed.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(Index, u8),
    Truncate(Index),
    Insert(Index, Vec<u8>),
    Replace(Index, Index),
    Remove(Index),
    /// The last element of an array dropped (a value, a history entry, a migrant).
    Shorten(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(p, v)| Mutation::Replace(p, v)),
        (any::<Index>(), any::<Index>()).prop_map(|(p, v)| Mutation::Replace(p, v)),
        any::<Index>().prop_map(Mutation::Remove),
        any::<Index>().prop_map(Mutation::Shorten),
    ]
}

/// `text` (one JSON document) damaged by `m`.
fn apply(text: &[u8], m: &Mutation) -> Vec<u8> {
    let mut bytes = text.to_vec();
    match m {
        Mutation::Flip(i, b) => {
            let i = i.index(bytes.len());
            bytes[i] ^= (*b).max(1); // a zero would change nothing
        }
        Mutation::Truncate(i) => bytes.truncate(i.index(bytes.len())),
        Mutation::Insert(i, b) => {
            let i = i.index(bytes.len() + 1);
            bytes.splice(i..i, b.iter().copied());
        }
        Mutation::Replace(p, _) | Mutation::Remove(p) | Mutation::Shorten(p) => {
            let mut doc: Json = serde_json::from_slice(text).unwrap();
            let mut all = Vec::new();
            pointers(&doc, String::new(), &mut all);
            let at = &all[p.index(all.len())];
            match m {
                Mutation::Shorten(_) => {
                    let arrays: Vec<&String> =
                        all.iter().filter(|a| doc.pointer(a).is_some_and(|v| v.is_array())).collect();
                    if let Some(at) = arrays.get(p.index(arrays.len().max(1))) {
                        doc.pointer_mut(at).and_then(|v| v.as_array_mut()).map(|a| a.pop());
                    }
                }
                _ if at.is_empty() => doc = json!({"e": "eval"}), // the whole document
                Mutation::Remove(_) => {
                    let (parent, key) = at.rsplit_once('/').unwrap();
                    match doc.pointer_mut(parent).unwrap() {
                        Json::Object(o) => drop(o.remove(key)),
                        Json::Array(a) => drop(a.remove(key.parse::<usize>().unwrap())),
                        _ => unreachable!("a parent is a container"),
                    }
                }
                Mutation::Replace(_, v) => {
                    let values = hostile_values();
                    *doc.pointer_mut(at).unwrap() = values[v.index(values.len())].clone();
                }
                _ => unreachable!("matched above"),
            }
            bytes = serde_json::to_vec(&doc).unwrap();
        }
    }
    bytes
}

fn shown(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    if s.len() > 4000 { format!("{}... ({} bytes)", &s[..s.floor_char_boundary(4000)], s.len()) } else { s.into() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 320, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_damaged_manifest_is_read_or_refused_never_a_panic(
        m in mutation(),
        twice in any::<bool>(),
        m2 in mutation(),
        reshape_too in prop::bool::weighted(0.125),
    ) {
        static FIXTURE: OnceLock<Fixture> = OnceLock::new();
        let f = Fixture::get(&FIXTURE);
        let path = f.dir.join("manifest.json");
        let original = std::fs::read(&path).unwrap();
        let mut text = apply(&original, &m);
        if twice && serde_json::from_slice::<Json>(&text).is_ok() {
            text = apply(&text, &m2);
        }
        let _damaged = Damaged::new(&path, original, &text);
        never_panics(&f.dir, f.tmp.path(), reshape_too, &|| shown(&text))?;
    }

    #[test]
    fn a_damaged_journal_line_is_read_or_refused_never_a_panic(
        file in any::<Index>(),
        line in any::<Index>(),
        m in mutation(),
        twice in any::<bool>(),
        m2 in mutation(),
        reshape_too in prop::bool::weighted(0.125),
    ) {
        static FIXTURE: OnceLock<Fixture> = OnceLock::new();
        let f = Fixture::get(&FIXTURE);
        let path = &f.journals[file.index(f.journals.len())];
        let original = std::fs::read(path).unwrap();
        let lines: Vec<&[u8]> = original.split_inclusive(|&b| b == b'\n').collect();
        let k = line.index(lines.len());
        let record = lines[k].strip_suffix(b"\n").unwrap();
        let mut damaged = apply(record, &m);
        if twice && serde_json::from_slice::<Json>(&damaged).is_ok() {
            damaged = apply(&damaged, &m2);
        }
        let mut text: Vec<u8> = lines[..k].concat();
        text.extend_from_slice(&damaged);
        text.push(b'\n');
        text.extend(lines[k + 1..].concat());
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let _damaged = Damaged::new(path, original.clone(), &text);
        never_panics(&f.dir, f.tmp.path(), reshape_too, &|| format!("{name}, line {k}:\n{}", shown(&damaged)))?;
    }
}

#[test]
fn targeted_journal_edits_are_refused_with_file_offset_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, journals) = copy_of_template(tmp.path());
    let path = &journals[0];
    let original = std::fs::read_to_string(path).unwrap();
    let eval_line = original.lines().find(|l| l.starts_with(r#"{"e":"eval""#)).unwrap();
    let offset = original.find(eval_line).unwrap();
    let edit = |pointer: &str, value: Json, expected: &[&str]| {
        let mut doc: Json = serde_json::from_str(eval_line).unwrap();
        *doc.pointer_mut(pointer).unwrap() = value;
        std::fs::write(path, original.replacen(eval_line, &doc.to_string(), 1)).unwrap();
        let e = read_checkpoint(&dir).expect_err(pointer).to_string();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(e.contains(&name) && e.contains(&format!("corrupted record at byte offset {offset}")), "{e}");
        for part in expected {
            assert!(e.contains(part), "'{part}' missing in: {e}");
        }
    };
    edit("/ind/values/3", json!({"Cat": 3}), &["'act'", "index 3"]);
    edit("/ind/values/0", json!({"Int": 1}), &["'x'", "an int value"]);
    edit("/ind/values/2", json!({"Int": 10}), &["'n'", "10"]);
    edit("/ind/id/island", json!(99), &["belongs to island 0, not 99"]);
    edit("/ind/id/worker", json!(1_000_000_000), &["worker 1000000000"]);
    edit("/ind/id/generation", json!(u64::MAX), &["generation"]);
    edit("/ind/current", json!(7), &["responsible worker"]);
    edit("/ind/duration_s", json!(-3.0), &["duration_s -3"]);
    edit("/ind/loss", json!("NaN"), &["invalid type"]);
    std::fs::write(path, &original).unwrap();
    assert!(read_checkpoint(&dir).is_ok());
}

#[test]
fn the_largest_layout_a_manifest_may_hold_is_reported_in_bounded_time() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, journals) = copy_of_template(tmp.path());
    let mut manifest: Json = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let workers = propulate_engine::journal::MAX_WORKERS;
    manifest["layout"] = json!({"world_size": workers, "ranks_per_worker": 1, "island_sizes": vec![1; workers]});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    // The template's journals name the islands of its 2-island layout; one island per worker differs.
    assert!(read_checkpoint(&dir).is_err());
    journals.iter().for_each(|j| std::fs::remove_file(j).unwrap());
    let replay = read_checkpoint(&dir).unwrap().unwrap();
    // One island per worker: a report that scanned every worker once per island would not end.
    let result = report::result_of(&replay, 3);
    assert_eq!(result.active_per_island.len(), workers);
    manifest["layout"]["world_size"] = json!(workers + 1);
    manifest["layout"]["island_sizes"][0] = json!(2);
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    let e = read_checkpoint(&dir).unwrap_err().to_string();
    assert!(e.contains("100001 workers") && e.contains("at most 100000"), "{e}");
}
