//! Checkpoint and resume: exact continuation on one rank, kill -9 of the whole job or of one rank at
//! random moments, torn and corrupted journals, mismatched resumes, and the report.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, mpirun, recorded, report_data, run_with_timeout};
use propulate::files::checkpoint::{segment_name, snapshot_name};
use propulate::journal::{Manifest, SEGMENT_BYTES_VAR, WORTH_WRITING_VAR, read_checkpoint, read_worker_journal};
use propulate::{Optimizer, SearchSpace};

/// (worker, generation) -> (values, loss bits) of every recorded evaluation.
type Trials = BTreeMap<(u32, u64), (String, u64)>;

fn trials(dir: &Path) -> Trials {
    let replay = read_checkpoint(dir).unwrap().expect("a checkpoint");
    replay
        .workers
        .iter()
        .flat_map(|j| &j.evaluated)
        .map(|i| ((i.id.worker, i.id.generation), (format!("{:?}", i.values), i.loss.to_bits())))
        .collect()
}

/// A small xorshift for kill moments; its seed is printed so a failure can be replayed.
struct Moments(u64);
impl Moments {
    fn new() -> Self {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
        eprintln!("kill-moment seed: {seed}");
        Moments(seed)
    }
    fn ms(&mut self, lo: u64, hi: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        lo + self.0 % (hi - lo)
    }
}

/// Wait until the run in `dir` has recorded at least `n` evaluations, so that a kill lands mid-run
/// however slow the machine is; then a random extra moment.
fn wait_for(dir: &Path, n: usize, child: &mut Child, moments: &mut Moments) {
    let start = Instant::now();
    while recorded(dir) < n && child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(120), "the run never recorded {n} evaluations");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(moments.ms(0, 60)));
}

fn spawn(mut cmd: Command) -> Child {
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn")
}

fn children(pid: u32) -> Vec<u32> {
    let out = Command::new("pgrep").arg("-P").arg(pid.to_string()).output().expect("pgrep");
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect()
}

fn kill9(pid: u32) {
    let _ = Command::new("kill").arg("-9").arg(pid.to_string()).stderr(Stdio::null()).status();
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

fn wait_gone(pids: &[u32]) {
    let start = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(start.elapsed() < Duration::from_secs(30), "processes {pids:?} survived kill -9");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Flags of a run journaling into `dir`: a benchmark function (sphere unless `extra` names one).
/// `PROPULATE_SEGMENT_BYTES` of the kill tests: a segment closed, with a snapshot, every few
/// evaluations.
const SMALL_SEGMENTS: &str = "4096";

fn run_args<'a>(dir: &'a Path, extra: &[&'a str]) -> Vec<String> {
    let mut v: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    if !extra.contains(&"--function") {
        v.extend(["--function".into(), "sphere".into()]);
    }
    v.extend(["--checkpoint".into(), dir.display().to_string(), "--quiet".into()]);
    v
}

#[test]
fn a_killed_and_resumed_run_on_one_rank_gives_exactly_the_uninterrupted_trials() {
    killed_and_resumed_on_one_rank(&["--function", "rastrigin", "--generations", "300"], 300, 30);
}

/// The GP's children depend on every evaluation it is fitted to and on its local searches: a
/// resume rebuilds the same pool, so it breeds the same children.
#[test]
fn a_killed_and_resumed_gp_run_on_one_rank_gives_exactly_the_uninterrupted_trials() {
    let base = ["--function", "rastrigin", "--propagator", "gp", "--generations", "40"];
    killed_and_resumed_on_one_rank(&base, 40, 8);
}

/// Run `flags` on one rank to its end, and again with kills after every `step` evaluations and
/// resumes: the same `total` trials, bit for bit.
fn killed_and_resumed_on_one_rank(flags: &[&str], total: usize, step: usize) {
    let base: Vec<&str> = ["--local-ranks", "1", "--seed", "11"].iter().chain(flags).copied().collect();
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let mut cmd = Command::new(bin());
    cmd.args(run_args(&a, &base));
    assert!(run_with_timeout(cmd, Duration::from_secs(120)).status.success());

    let slow: Vec<&str> = base.iter().copied().chain(["--eval-delay-ms", "1"]).collect();
    let mut moments = Moments::new();
    let mut interrupted = 0;
    for _ in 0..4 {
        let before = recorded(&b);
        let mut cmd = Command::new(bin());
        // Segments closed with a snapshot every few kilobytes: the kills land between snapshots,
        // and each resume starts from the latest one.
        cmd.env(SEGMENT_BYTES_VAR, SMALL_SEGMENTS).args(run_args(&b, &slow));
        let mut child = spawn(cmd);
        wait_for(&b, before + step, &mut child, &mut moments);
        if child.try_wait().unwrap().is_none() {
            interrupted += 1;
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
    }
    assert!(interrupted >= 2, "the kills came too late to test anything");
    assert!(b.join(segment_name(0, 8)).is_file(), "4 kills, 5 starts and no segment closed mid-run");
    let mut cmd = Command::new(bin());
    cmd.args(run_args(&b, &slow));
    assert!(run_with_timeout(cmd, Duration::from_secs(120)).status.success());
    let (ta, tb) = (trials(&a), trials(&b));
    assert_eq!(ta.len(), total);
    assert_eq!(tb.len(), total);
    if let Some((key, value)) = ta.iter().find(|(k, v)| tb.get(k) != Some(v)) {
        panic!("resumed run diverged at {key:?}:\nuninterrupted {value:?}\nresumed       {:?}", tb.get(key));
    }
}

#[test]
fn kill_9_of_the_job_or_of_one_rank_loses_and_duplicates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ck");
    let args = run_args(&dir, &["--islands", "2", "--generations", "250", "--eval-delay-ms", "1", "--seed", "4"]);
    let mut moments = Moments::new();
    let mut seen: Vec<Trials> = Vec::new();
    for round in 0..4 {
        let mut cmd = mpirun(4);
        cmd.env(SEGMENT_BYTES_VAR, SMALL_SEGMENTS).arg(bin()).args(&args);
        let before = recorded(&dir);
        let mut job = spawn(cmd);
        wait_for(&dir, before + 60, &mut job, &mut moments);
        let ranks = children(job.id());
        if round % 2 == 0 {
            // The whole job: every rank by pid (OpenMPI ranks survive the death of mpirun), then mpirun.
            for &r in &ranks {
                kill9(r);
            }
            let _ = job.kill();
        } else if let Some(&one) = ranks.get(moments.ms(0, ranks.len().max(1) as u64) as usize) {
            kill9(one); // a single rank dies; mpirun must take the job down
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while job.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = job.kill();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for &r in &ranks {
            kill9(r);
        }
        wait_gone(&ranks);
        if dir.join("manifest.json").exists() {
            seen.push(trials(&dir));
        }
    }
    let mut cmd = mpirun(4);
    cmd.arg(bin()).args(&args);
    let out = run_with_timeout(cmd, Duration::from_secs(300));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("islands consistent: yes"));

    // read_checkpoint checks that each worker's generations run 0, 1, 2, ... without gap or repeat.
    let replay = read_checkpoint(&dir).unwrap().unwrap();
    for (w, j) in replay.workers.iter().enumerate() {
        assert_eq!(j.evaluated.len(), 250, "worker {w} did not do exactly its budget");
        assert!(j.done);
    }
    assert!(dir.join(segment_name(3, 8)).is_file(), "5 starts and no segment closed mid-run");
    let last = trials(&dir);
    for (k, snapshot) in seen.iter().enumerate() {
        for (key, value) in snapshot {
            assert_eq!(last.get(key), Some(value), "evaluation {key:?} recorded before kill {k} was lost or changed");
        }
    }
    let sizes: Vec<usize> = seen.iter().map(|s| s.len()).collect();
    // After a single rank dies, the others may finish their budgets before mpirun takes them down,
    // so not every round interrupts; at least two must have.
    assert!(sizes.iter().filter(|&&n| n > 0 && n < 1000).count() >= 2, "the kills did not land mid-run: {sizes:?}");
}

fn space() -> SearchSpace {
    SearchSpace::builder().float("x", -2.0, 2.0).int("n", 0, 9).build().unwrap()
}

fn small_run(dir: &Path, generations: u64) {
    Optimizer::new(space())
        .generations(generations)
        .islands(2)
        .checkpoint(dir)
        .run_local(4, |p, _| Ok(p.float("x").powi(2) + p.int("n") as f64))
        .unwrap();
}

#[test]
fn more_generations_continue_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    small_run(tmp.path(), 30);
    small_run(tmp.path(), 50);
    let replay = read_checkpoint(tmp.path()).unwrap().unwrap();
    assert!(replay.workers.iter().all(|j| j.evaluated.len() == 50 && j.done));
    // The report says the generations the run reached, not its first start's.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = elsewhere.path().join("report");
    let mut cmd = Command::new(bin());
    cmd.arg("report").arg(tmp.path()).arg("--out").arg(&out);
    assert!(run_with_timeout(cmd, Duration::from_secs(60)).status.success());
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["generations"], 50);
}

/// A resume with no more generations than the checkpoint's run did evaluates nothing, and says so
/// instead of ending as if it had run.
#[test]
fn a_resume_with_nothing_left_to_do_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tmp.path().join("ck");
    for generations in ["4", "3"] {
        let mut cmd = Command::new(bin());
        cmd.args(["--local-ranks", "2", "--function", "sphere", "--quiet", "--generations", generations]);
        cmd.arg("--checkpoint").arg(&ck);
        let out = run_with_timeout(cmd, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let said = "nothing was evaluated: the checkpoint's run had already ended (--generations 3; a larger";
        assert_eq!(stderr.contains(said), generations == "3", "{stderr}");
    }
}

/// `(x, n)` of the children of `out/trials.jsonl`'s first generation from `from` on.
fn first_children(out: &Path, from: u64) -> Vec<(f64, i64)> {
    let text = std::fs::read_to_string(out.join("trials.jsonl")).unwrap();
    let trials: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let generation = |t: &serde_json::Value| t["generation"].as_u64().unwrap();
    let first = trials.iter().map(generation).filter(|g| *g >= from).min().unwrap();
    let child = |t: &serde_json::Value| (t["params"]["x"].as_f64().unwrap(), t["params"]["n"].as_i64().unwrap());
    trials.iter().filter(|t| generation(t) == first).map(child).collect()
}

/// At a resume, and at a warm start, the workers of an island breed at once, before any hears of
/// another's child: with the GP, whose child is its model's argmax, each bred the same one (here
/// x within 1e-7 of the others, n = 1: 3 of 4 evaluations wasted per start). Each now works out
/// its peers' children first.
#[test]
fn the_first_children_of_a_resume_and_of_a_warm_start_differ_between_the_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let space = tmp.path().join("space.toml");
    std::fs::write(
        &space,
        "[params]\nx = { type = \"float\", low = -1.0, high = 1.0 }\nn = { type = \"int\", low = 1, high = 5 }\n",
    )
    .unwrap();
    let trial = r#"awk -v x="${1#--x=}" -v n="${2#--n=}" 'BEGIN { printf "propulate: loss=%.12g\n", x * x + n * n }'"#;
    let run = |transport, name: &str, flags: &[&str]| {
        let mut cmd = common::launch(transport, 4);
        cmd.args(["--propagator", "gp", "--seed", "1", "--quiet"]).args(flags).arg("--space").arg(&space);
        let dir = tmp.path().join(name);
        cmd.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(&dir);
        cmd.args(["--", "sh", "-c", trial, "trial"]);
        common::succeeded(&run_with_timeout(cmd, Duration::from_secs(300)));
        dir
    };
    let first = run(common::Transport::Mpi, "first", &["--generations", "3"]);
    run(common::Transport::Mpi, "first", &["--generations", "4"]);
    let checkpoint = first.join("ck").display().to_string();
    let second = run(common::Transport::Local, "second", &["--generations", "1", "--warm-start", &checkpoint]);
    for children in [first_children(&first, 3), first_children(&second, 0)] {
        assert_eq!(children.len(), 4);
        // Different: another n, or x more than a near-twin's distance apart.
        for (i, a) in children.iter().enumerate() {
            assert!(children[i + 1..].iter().all(|b| a.1 != b.1 || (a.0 - b.0).abs() > 1e-5), "{children:?}");
        }
    }
}

/// Under mpirun every worker root's clean end leaves a snapshot of its whole journal
/// (`PROPULATE_SNAPSHOT_BYTES=0` makes every journal worth one): the next resume reads the snapshots
/// and parses nothing, and they hold what parsing the segments gives.
#[test]
fn a_clean_end_under_mpirun_leaves_snapshots_that_hold_what_the_segments_say() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, copy) = (tmp.path().join("ck"), tmp.path().join("copy"));
    let journals = |dir: &Path| {
        let replay = read_checkpoint(dir).unwrap().unwrap();
        replay.workers.iter().map(|j| serde_json::to_string(j).unwrap()).collect::<Vec<_>>()
    };
    for generations in ["50", "80"] {
        let mut cmd = mpirun(4);
        cmd.env(WORTH_WRITING_VAR, "0").arg(bin()).args(run_args(
            &dir,
            &["--islands", "2", "--generations", generations, "--seed", "3", "--migration-probability", "0.9"],
        ));
        let out = run_with_timeout(cmd, Duration::from_secs(120));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let manifest = Manifest::read(&dir).unwrap();
        for w in 0..4 {
            assert!(dir.join(snapshot_name(w)).is_file(), "{generations} generations: worker {w} left no snapshot");
            let read = read_worker_journal(&dir, w, &manifest).unwrap();
            assert_eq!(read.parsed_bytes, 0, "{generations} generations: worker {w}'s snapshot misses segments");
            assert_eq!(read.journal.evaluated.len(), generations.parse::<usize>().unwrap());
        }
        let _ = std::fs::remove_dir_all(&copy);
        std::fs::create_dir(&copy).unwrap();
        for e in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".jsonl") || name == "manifest.json" {
                std::fs::copy(e.path(), copy.join(name)).unwrap();
            }
        }
        assert_eq!(journals(&dir), journals(&copy), "{generations} generations: snapshots and segments differ");
    }
    let emigrations: usize = read_checkpoint(&dir).unwrap().unwrap().workers.iter().map(|j| j.emigrations.len()).sum();
    assert!(emigrations > 0, "no migration: the test covers less than it says");
}

fn listing(dir: &Path) -> BTreeSet<(String, Vec<u8>)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().to_string(), std::fs::read(e.path()).unwrap())
        })
        .collect()
}

#[test]
fn an_incompatible_resume_names_every_difference_and_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ck");
    let mut cmd = Command::new(bin());
    cmd.args(run_args(&dir, &["--local-ranks", "4", "--islands", "2", "--generations", "20"]));
    assert!(run_with_timeout(cmd, Duration::from_secs(60)).status.success());
    let before = listing(&dir);
    let mut cmd = mpirun(6);
    cmd.arg(bin())
        .args(run_args(&dir, &["--islands", "3", "--seed", "9", "--function", "leon", "--generations", "20"]));
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    for expected in [
        "holds a different run",
        "number of workers: checkpoint has 4, this run has 6",
        "islands: checkpoint has sizes [2, 2], this run has [2, 2, 2]",
        "seed: checkpoint has 0, this run has 9",
        "function: checkpoint has \"sphere\", this run has \"leon\"",
        r#"search space: parameter 'x0': checkpoint has {"name":"x0","type":"float","lo":-5.12,"hi":5.12"#,
    ] {
        assert!(err.contains(expected), "missing '{expected}' in:\n{err}");
    }
    assert_eq!(before, listing(&dir), "a refused resume changed the checkpoint");
}

#[test]
fn torn_tails_are_ignored_and_corruption_is_an_error_with_file_and_offset() {
    let tmp = tempfile::tempdir().unwrap();
    small_run(tmp.path(), 20);
    let journal = tmp.path().join("worker-00001.0000.jsonl");
    let original = std::fs::read(&journal).unwrap();

    // A kill in the middle of a write: the last line has no newline.
    let mut torn = original.clone();
    torn.extend_from_slice(b"{\"e\":\"eval\",\"ind\":{\"val");
    std::fs::write(&journal, &torn).unwrap();
    let replay = read_checkpoint(tmp.path()).unwrap().unwrap();
    assert_eq!(replay.workers[1].evaluated.len(), 20);
    assert!(replay.warnings[0].contains("worker-00001.0000.jsonl") && replay.warnings[0].contains("torn"));
    let before = listing(tmp.path());
    small_run(tmp.path(), 25); // resumes past the torn line, in a new segment
    let after = listing(tmp.path());
    assert!(before.is_subset(&after), "resume rewrote or deleted journal data");
    assert_eq!(read_checkpoint(tmp.path()).unwrap().unwrap().workers[1].evaluated.len(), 25);

    // Garbage before the tail is corruption.
    let mut bad = original.clone();
    let cut = original.iter().position(|&b| b == b'\n').unwrap() + 1;
    bad.splice(cut..cut + 5, b"#####".iter().copied());
    std::fs::write(&journal, &bad).unwrap();
    let e = read_checkpoint(tmp.path()).unwrap_err().to_string();
    assert!(e.contains("worker-00001.0000.jsonl") && e.contains(&format!("byte offset {cut}")), "{e}");

    // A missing manifest, a foreign file.
    std::fs::write(&journal, &original).unwrap();
    // An edited layout is refused by name, not a division by zero, in a report and in a resume.
    let manifest = std::fs::read_to_string(tmp.path().join("manifest.json")).unwrap();
    let edited = manifest.replace("\"ranks_per_worker\": 1", "\"ranks_per_worker\": 0");
    assert_ne!(manifest, edited);
    std::fs::write(tmp.path().join("manifest.json"), &edited).unwrap();
    let e = read_checkpoint(tmp.path()).unwrap_err().to_string();
    assert!(e.contains("invalid layout") && e.contains("ranks per worker must be at least 1"), "{e}");
    let mut cmd = Command::new(bin());
    cmd.args(run_args(tmp.path(), &["--local-ranks", "4", "--generations", "30"]));
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("invalid layout") && !stderr.contains("panicked"), "{stderr}");
    std::fs::write(tmp.path().join("manifest.json"), &manifest).unwrap();
    std::fs::rename(tmp.path().join("manifest.json"), tmp.path().join("manifest.json.tmp")).unwrap();
    let e = read_checkpoint(tmp.path()).unwrap_err().to_string();
    assert!(e.contains("no manifest.json"), "{e}");
    std::fs::rename(tmp.path().join("manifest.json.tmp"), tmp.path().join("manifest.json")).unwrap();
    std::fs::write(tmp.path().join("data.csv"), "a,b\n").unwrap();
    let e = read_checkpoint(tmp.path()).unwrap_err().to_string();
    assert!(e.contains("data.csv") && e.contains("not part of a propulate-rs checkpoint"), "{e}");
    std::fs::write(tmp.path().join("manifest.json"), "{\"format\": \"something-else\"}").unwrap();
    std::fs::remove_file(tmp.path().join("data.csv")).unwrap();
    let e = read_checkpoint(tmp.path()).unwrap_err().to_string();
    assert!(e.contains("manifest.json") && e.contains("not a propulate-rs checkpoint"), "{e}");
}

#[test]
fn report_summarizes_an_unfinished_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ck");
    let mut cmd = Command::new(bin());
    cmd.args(run_args(&dir, &["--local-ranks", "2", "--generations", "2000", "--eval-delay-ms", "1"]));
    let mut child = spawn(cmd);
    let mut moments = Moments::new();
    wait_for(&dir, 50, &mut child, &mut moments);
    let _ = child.kill();
    let _ = child.wait();
    let out_dir = tmp.path().join("report");
    let mut cmd = Command::new(bin());
    cmd.arg("report").arg(&dir).arg("--out").arg(&out_dir).args(["--top-n", "2"]);
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("interrupted or running"), "{stdout}");
    let recorded = trials(&dir).len();
    assert!(recorded > 0 && recorded < 4000);
    let csv = std::fs::read_to_string(out_dir.join("trials.csv")).unwrap();
    assert_eq!(csv.lines().count() - 1, recorded);
    let report = report_data(&out_dir);
    assert_eq!(report["total"], recorded, "the report shows every evaluation recorded");
    assert_eq!(report["settings"]["function"], "sphere");
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["function"], "sphere");
    assert!(best["params"]["x0"].is_number());
    // An export into the checkpoint under a name it does not keep would make the next resume
    // refuse it: refused, naming the flag.
    let mut cmd = Command::new(bin());
    cmd.arg("report").arg(&dir).args(["--top-n", "0"]);
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--top-n must be at least 1"));
    let mut cmd = Command::new(bin());
    cmd.arg("report").arg(&dir).arg("--optuna-journal").arg(dir.join("study.log"));
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("--optuna-journal") && stderr.contains("is inside the checkpoint")
    );
    assert!(!dir.join("study.log").exists());
}

/// The kinds of run whose results `report` writes into their checkpoint: (name, flags before the
/// generations, flags after them).
fn kinds_of_run(work: &Path) -> Vec<(&'static str, Vec<String>, Vec<String>)> {
    std::fs::write(work.join("space.toml"), common::TWO_OBJECTIVES_SPACE).unwrap();
    std::fs::write(work.join("trial.py"), common::TWO_OBJECTIVES).unwrap();
    let command = |objectives: &str| {
        let mut before = vec!["--space".into(), work.join("space.toml").display().to_string()];
        before.extend(["--objectives".into(), objectives.into()]);
        let after = vec!["--".into(), "python3".into(), work.join("trial.py").display().to_string(), "{x}".into()];
        (before, after)
    };
    let (one_before, one_after) = command("accuracy:max");
    let (two_before, two_after) = command("accuracy:max,size:min");
    vec![
        ("one objective", vec!["--function".into(), "sphere".into()], vec![]),
        ("several objectives", vec!["--function".into(), "zdt1".into()], vec![]),
        ("command trials", one_before, one_after),
        ("command trials, several objectives", two_before, two_after),
    ]
}

#[test]
fn what_propulate_rs_writes_into_a_checkpoint_does_not_stop_its_resume() {
    // The workflow of docs/guide/cli.md (`propulate-rs report`): run with the results and logs
    // inside the checkpoint, report into it, run again with more generations; for every kind of
    // run, so that each result file it writes is one its checkpoint tolerates (a run with several
    // objectives once refused its own front.csv). The CNN's run does the same in tests/cnn.rs.
    let tmp = tempfile::tempdir().unwrap();
    for (kind, before, after) in kinds_of_run(tmp.path()) {
        let dir = tmp.path().join(kind.replace([' ', ','], "-"));
        let logs = dir.join("logs");
        let run = |generations: &str| {
            let mut cmd = Command::new(bin());
            cmd.args(["--local-ranks", "2", "--generations", generations, "--quiet"]).args(&before);
            cmd.arg("--checkpoint").arg(&dir).arg("--out").arg(&dir).arg("--log-dir").arg(&logs).args(&after);
            let out = run_with_timeout(cmd, Duration::from_secs(120));
            assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        };
        run("6");
        let mut cmd = Command::new(bin());
        cmd.arg("report").arg(&dir);
        let out = run_with_timeout(cmd, Duration::from_secs(60));
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        let several = kind.contains("several");
        for f in ["best.json", "trials.csv", "trials.jsonl", "report.html", "logs/rank-00001.log"] {
            assert!(dir.join(f).exists(), "{kind}: {f}");
        }
        assert_eq!(dir.join("front.csv").exists(), several, "{kind}: front.csv");
        let before_resume = trials(&dir);
        run("10");
        let after_resume = trials(&dir);
        assert_eq!(after_resume.len(), 20, "{kind}");
        // Every evaluation of the first run is found again, unchanged.
        for (id, trial) in &before_resume {
            assert_eq!(after_resume.get(id), Some(trial), "{kind}: {id:?}");
        }
        let csv = std::fs::read_to_string(dir.join("trials.csv")).unwrap();
        assert_eq!(csv.lines().count() - 1, 20, "{kind}");
    }
    // Anything else in the directory still stops a run before it touches it.
    let dir = tmp.path().join("one-objective");
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let mut cmd = Command::new(bin());
    cmd.args(run_args(&dir, &["--local-ranks", "2", "--generations", "40"]));
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("notes.txt is not part of a propulate-rs checkpoint"));
}

#[test]
fn reshape_continues_on_other_numbers_of_workers_and_islands() {
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    let mut cmd = mpirun(4);
    cmd.arg(bin()).args(run_args(&old, &["--islands", "2", "--generations", "100", "--function", "rastrigin"]));
    assert!(run_with_timeout(cmd, Duration::from_secs(120)).status.success());
    let old_best = read_checkpoint(&old)
        .unwrap()
        .unwrap()
        .workers
        .iter()
        .flat_map(|j| &j.evaluated)
        .map(|i| i.loss)
        .fold(f64::INFINITY, f64::min);
    let before = listing(&old);

    let reshaped = |np: usize, function: &str| {
        let mut cmd = mpirun(np);
        let old = old.to_str().unwrap().to_string();
        let out = tmp.path().join("out").to_str().unwrap().to_string();
        let args =
            ["--islands", "3", "--generations", "60", "--function", function, "--reshape-from", &old, "--out", &out];
        cmd.arg(bin()).args(run_args(&new, &args));
        run_with_timeout(cmd, Duration::from_secs(120))
    };
    let out = reshaped(6, "sphere");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds a run of another problem"));
    assert!(!new.join("manifest.json").exists(), "a refused reshape must not create a checkpoint");
    // The same command without --reshape-from on another number of ranks is pointed to it.
    let mut cmd = mpirun(6);
    cmd.arg(bin()).args(run_args(&old, &["--islands", "3", "--generations", "100", "--function", "rastrigin"]));
    let stderr = String::from_utf8_lossy(&run_with_timeout(cmd, Duration::from_secs(120)).stderr).to_string();
    assert!(stderr.contains("a job of another size continues it into a new directory: --reshape-from DIR"), "{stderr}");

    let out = reshaped(6, "rastrigin");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("redistributed over 3 islands"), "{stderr}");
    assert_eq!(before, listing(&old), "the old checkpoint must only be read");
    let replay = read_checkpoint(&new).unwrap().unwrap();
    let offset = replay.manifest.generation_offset;
    assert_eq!(offset, 100);
    for j in &replay.workers {
        assert_eq!(j.evaluated.len(), 60);
        assert!(j.evaluated.iter().all(|i| i.id.generation >= offset));
    }
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/best.json")).unwrap()).unwrap();
    assert_eq!(best["consistent"], true);
    assert!(best["loss"].as_f64().unwrap() <= old_best, "the carried-over population was lost");
    assert_eq!(best["evaluations"].as_u64(), Some(360));

    // Running the same command again resumes the new checkpoint; it is not seeded twice.
    let out = reshaped(6, "rastrigin");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("360 from the checkpoint"));
}

#[test]
fn a_resume_refuses_a_journal_that_another_process_still_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ck");
    let mut cmd = Command::new(bin());
    cmd.args(run_args(&dir, &["--local-ranks", "4", "--generations", "20"]));
    assert!(run_with_timeout(cmd, Duration::from_secs(60)).status.success());
    // A leftover rank of an earlier job would hold this lock while it appends.
    let lock = std::fs::OpenOptions::new().write(true).open(dir.join("worker-00002.lock")).unwrap();
    lock.try_lock().unwrap();
    let before = listing(&dir);
    let mut cmd = mpirun(4);
    cmd.arg(bin()).args(run_args(&dir, &["--generations", "30"]));
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("worker 2's journal is still being written by another process"), "{stderr}");
    assert_eq!(before, listing(&dir));
    drop(lock);
    let mut cmd = mpirun(4);
    cmd.arg(bin()).args(run_args(&dir, &["--generations", "30"]));
    assert!(run_with_timeout(cmd, Duration::from_secs(60)).status.success());
}

/// Where `flock` cannot be trusted or is refused (`PROPULATE_JOURNAL_LOCK=file`), each journal is
/// guarded by an owner file: present while the job runs, gone after it, refusing a second job while
/// its heartbeat is fresh.
#[test]
fn owner_file_locks_guard_journals_where_flock_is_not_used() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ck");
    let job = |generations: &str| {
        let mut cmd = mpirun(4);
        cmd.env("PROPULATE_JOURNAL_LOCK", "file").arg(bin()).args(run_args(&dir, &["--generations", generations]));
        run_with_timeout(cmd, Duration::from_secs(60))
    };
    assert!(job("20").status.success());
    let owners = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".owner"))
            .count()
    };
    assert_eq!(owners(&dir), 0, "a finished job leaves no owner file");
    // A live job elsewhere holds worker 1's journal (fresh heartbeat).
    std::fs::write(dir.join("worker-00001.owner"), "host elsewhere pid 4242\n").unwrap();
    let out = job("30");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("worker 1's journal is still being written by host elsewhere pid 4242"), "{stderr}");
    std::fs::remove_file(dir.join("worker-00001.owner")).unwrap();
    let out = job("30");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("80 from the checkpoint"));
    assert_eq!(owners(&dir), 0);
}

/// A resume breeds with the propagator its checkpoint was bred with: without `--propagator` it
/// takes the recorded one (also in `best.json`; a reshaped run too), another one is refused naming both, and a
/// checkpoint that records none (written before every run recorded its propagator) was bred with
/// `ga`, the only propagator that went unrecorded.
#[test]
fn a_resume_keeps_the_checkpoints_propagator_and_refuses_another() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ck");
    let out = tmp.path().join("out");
    let job = |extra: &[&str]| {
        let mut base = vec!["--local-ranks", "1", "--function", "sphere"];
        base.extend_from_slice(extra);
        let mut cmd = Command::new(bin());
        cmd.args(run_args(&dir, &base));
        run_with_timeout(cmd, Duration::from_secs(60))
    };
    let first = job(&["--generations", "8", "--propagator", "tpe"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let resumed = job(&["--generations", "12", "--out", out.to_str().unwrap()]);
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["propagator"], "tpe", "{best}");
    // A run reshaped from it (here onto 2 workers) breeds with its propagator too.
    let (reshaped_dir, reshaped_out) = (tmp.path().join("reshaped"), tmp.path().join("reshaped-out"));
    let mut cmd = Command::new(bin());
    let (from, out) = (dir.to_str().unwrap(), reshaped_out.to_str().unwrap());
    let base =
        ["--local-ranks", "2", "--function", "sphere", "--generations", "4", "--reshape-from", from, "--out", out];
    cmd.args(run_args(&reshaped_dir, &base));
    let reshaped = run_with_timeout(cmd, Duration::from_secs(60));
    assert!(reshaped.status.success(), "{}", String::from_utf8_lossy(&reshaped.stderr));
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reshaped_out.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["propagator"], "tpe", "{best}");
    let other = job(&["--generations", "16", "--propagator", "ga"]);
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--propagator ga: the checkpoint in") && stderr.contains("was bred with tpe"), "{stderr}");
    // A manifest from before propagator specs: the genetic settings in `config.propagator` and no
    // `propagator` fact mean ga.
    let path = dir.join("manifest.json");
    let mut manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["config"]["propagator"] = old_genetic_settings();
    std::fs::write(&path, manifest.to_string()).unwrap();
    let legacy = job(&["--generations", "16", "--propagator", "tpe"]);
    let stderr = String::from_utf8_lossy(&legacy.stderr);
    assert_eq!(legacy.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("was bred with ga; resume with --propagator ga"), "{stderr}");
}

/// `config.propagator` as manifests before propagator specs held it: the genetic propagator's
/// settings, without a name.
fn old_genetic_settings() -> serde_json::Value {
    serde_json::to_value(propulate::propagator::DefaultPropagatorConfig::for_workers(1)).unwrap()
}

/// A resume breeds with the propagator settings its checkpoint recorded, flags left out included:
/// a GP run started with `--gp-warp none` resumes with it (`best.json` names every setting in
/// effect), another value is refused, a GP checkpoint from before propagator specs (bred with the
/// squared-exponential model, retired since) is refused with a message naming the retirement and
/// `--warm-start`, which then starts a new run from its evaluations, and a new GP run records the
/// defaults and the Matérn model.
#[test]
fn a_resume_keeps_the_checkpoints_propagator_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ck");
    let out = tmp.path().join("out");
    let job = |dir: &std::path::Path, extra: &[&str]| {
        let mut base = vec!["--local-ranks", "1", "--function", "sphere", "--out", out.to_str().unwrap()];
        base.extend_from_slice(extra);
        let mut cmd = Command::new(bin());
        cmd.args(run_args(dir, &base));
        run_with_timeout(cmd, Duration::from_secs(60))
    };
    // (warp, matern, xi) as best.json names them: every setting, defaults too.
    let settings_in_best = || {
        let best: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("best.json")).unwrap()).unwrap();
        let s = &best["propagator_settings"];
        (s["warp"].clone(), s["matern"].clone(), s["xi"].as_f64().unwrap())
    };
    let first = job(&dir, &["--generations", "7", "--propagator", "gp", "--gp-warp", "none"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let resumed = job(&dir, &["--generations", "9"]);
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(settings_in_best().0, false);
    let other = job(&dir, &["--generations", "10", "--gp-warp", "power"]);
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("propagator gp warp: checkpoint has false, this run has true"), "{stderr}");
    // A GP checkpoint from before propagator specs: the name and the flags given as facts, the
    // genetic settings in `config.propagator`. It bred with the squared-exponential model, which
    // is retired: refused, naming the way on.
    let path = dir.join("manifest.json");
    let mut manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(manifest["config"]["propagator"]["name"], "gp", "{manifest}");
    manifest["config"]["propagator"] = old_genetic_settings();
    manifest["extra"]["propagator"] = "gp".into();
    std::fs::write(&path, manifest.to_string()).unwrap();
    let legacy = job(&dir, &["--generations", "10"]);
    let stderr = String::from_utf8_lossy(&legacy.stderr);
    assert_eq!(legacy.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("squared-exponential model") && stderr.contains("retired"), "{stderr}");
    assert!(stderr.contains("--warm-start DIR"), "{stderr}");
    // ... and its 9 evaluations start a new run, not evaluated again.
    let dir_text = dir.to_str().unwrap();
    let warm = job(&tmp.path().join("warm"), &["--generations", "2", "--propagator", "gp", "--warm-start", dir_text]);
    let stderr = String::from_utf8_lossy(&warm.stderr);
    assert!(warm.status.success(), "{stderr}");
    assert!(
        stderr.contains("9 evaluations") || String::from_utf8_lossy(&warm.stdout).contains("9 evaluations"),
        "{stderr}"
    );
    // A new GP run records the defaults and the Matérn model.
    let fresh = job(&tmp.path().join("fresh"), &["--generations", "2", "--propagator", "gp"]);
    assert!(fresh.status.success(), "{}", String::from_utf8_lossy(&fresh.stderr));
    assert_eq!(settings_in_best(), (true.into(), true.into(), 0.0));
    // --propagator auto says what it picked, which the checkpoint records; a GP flag that the
    // pick takes is accepted.
    let auto = job(&tmp.path().join("auto"), &["--generations", "3", "--propagator", "auto", "--gp-xi", "0.2"]);
    let stderr = String::from_utf8_lossy(&auto.stderr);
    assert!(auto.status.success(), "{stderr}");
    assert!(stderr.contains("auto picked gp: 2 numeric and 0 categorical parameters, 3 evaluations"), "{stderr}");
    assert_eq!(settings_in_best().2, 0.2);
    let manifest = std::fs::read_to_string(tmp.path().join("auto").join("manifest.json")).unwrap();
    assert!(manifest.contains("\"name\": \"gp\""), "{manifest}");
}

/// The manifest records the breeding settings the flags chose, which a resume then keeps: the
/// default's, or with `--reference-genetic` the reference's (one worker: a pool of 4 and steps
/// over 3 decades against a pool of 2 and a fixed step).
#[test]
fn the_manifest_records_the_default_or_the_reference_genetic_settings() {
    for (flag, pool, decades) in [(None, 4, 3.0), (Some("--reference-genetic"), 2, 0.0)] {
        let tmp = tempfile::tempdir().unwrap();
        let base = ["--local-ranks", "1", "--function", "sphere", "--generations", "3"];
        let mut cmd = Command::new(bin());
        cmd.args(run_args(tmp.path(), &base)).args(flag);
        let out = run_with_timeout(cmd, Duration::from_secs(60));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let replay = read_checkpoint(tmp.path()).unwrap().expect("a checkpoint");
        let spec = replay.manifest.config.propagator.expect("the CLI records its propagator settings");
        let propulate::propagator::PropagatorSpec::Ga(p) = spec else { panic!("{spec:?}") };
        assert_eq!((p.pop_size, p.step_decades), (pool, decades), "{flag:?}: {p:?}");
    }
}
