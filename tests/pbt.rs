//! Population-based training under mpirun, with a toy training whose saved state records its
//! history (tests/trials/pbt_toy.sh): every evaluation continued exactly the state of its parent
//! (its member's last, or the best member's it exploited), explored inside the space, the members
//! stopped at their budget of steps, and the states no one needs were deleted; the same across a
//! kill -9 and a resume, and a missing state fails only the evaluation that needed it.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{bin, kill_9_after, mpirun, recorded, run_with_timeout, succeeded, trials_jsonl};
use serde_json::Value;

const SPACE: &str = "[params]\nlr = { type = \"float\", low = 0.01, high = 0.5, log = true }\n";
const BUDGET: u64 = 12;
const INTERVAL: u64 = 2;

/// The mpirun jobs of this file run one at a time: each is 4 ranks and their trial processes, on
/// machines of 2 cores, and `exploits_continue_the_donors_latest_state` allows 0.6 s for a result
/// in flight (with the other jobs of this file beside it, a CI run saw no exploit at all).
static ONE_JOB_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_job_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn toy() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trials/pbt_toy.sh").display().to_string()
}

/// The job's command line: 4 workers on 2 islands, PBT with a budget of 12 steps in intervals of 2.
fn job(dir: &Path, sleep: &str) -> Command {
    std::fs::write(dir.join("space.toml"), SPACE).unwrap();
    let mut c = mpirun(4);
    c.arg(bin()).arg("--space").arg(dir.join("space.toml"));
    c.args(["--islands", "2", "--propagator", "pbt", "--pbt-interval", "2", "--pbt-steps", "12"]);
    // No --generations: the members' budget ends the run. States superseded 1 s ago go: the
    // trials take 0.3 s or more, the run a few seconds; a second is far more than a message
    // between the ranks takes, even on a busy machine.
    c.args(["--seed", "3", "--pbt-keep-seconds", "1"]);
    c.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(dir.join("out"));
    c.arg("--").arg(toy()).arg("{lr}").arg(sleep);
    c
}

fn id_of(t: &Value) -> String {
    format!("{}/{}/{}", t["island"], t["worker"], t["generation"])
}

fn trial_dir(dir: &Path, id: &str) -> PathBuf {
    let parts: Vec<&str> = id.split('/').collect();
    dir.join("ck/trials").join(format!("island{}-worker{}-gen{}", parts[0], parts[1], parts[2]))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every evaluation's lineage against the states its trials saw and saved; returns the number
/// of exploits.
fn check_lineages(dir: &Path) -> usize {
    let trials = trials_jsonl(dir);
    let by_id: BTreeMap<String, &Value> = trials.iter().map(|t| (id_of(t), t)).collect();
    let mut exploits = 0;
    for t in trials.iter().filter(|t| t["failure"].is_null()) {
        let id = id_of(t);
        let lineage = &t["lineage"];
        assert_eq!(lineage["steps"], INTERVAL, "{id}");
        let lr = t["params"]["lr"].as_f64().unwrap();
        assert!((0.01..=0.5).contains(&lr), "{id}: lr {lr} outside the space");
        let seen = read(&trial_dir(dir, &id).join("seen.txt"));
        let saved = read(&trial_dir(dir, &id).join("saved.txt"));
        let step = lineage["step"].as_u64().unwrap();
        assert_eq!(saved, format!("{seen}{id} {}\n", step + INTERVAL), "{id}: saved = restored + its own line");
        match lineage["parent"].as_str() {
            None => {
                assert_eq!((seen.as_str(), step), ("", 0), "{id}: a fresh member starts from nothing");
            }
            Some(parent) => {
                let p = by_id[parent];
                assert!(p["failure"].is_null(), "{id} continued {parent}, which failed");
                assert_eq!(seen, read(&trial_dir(dir, parent).join("saved.txt")), "{id}: exactly {parent}'s state");
                assert_eq!(step, p["lineage"]["step"].as_u64().unwrap() + INTERVAL, "{id}: at {parent}'s steps");
                if lineage["exploited"].as_bool().unwrap() {
                    exploits += 1;
                    assert!(p["loss"].as_f64().unwrap() <= 1.0);
                } else {
                    assert_eq!(p["worker"], t["worker"], "{id}: continues its own member");
                    assert_eq!(p["generation"].as_u64().unwrap() + 1, t["generation"].as_u64().unwrap(), "{id}");
                    assert_eq!(p["params"], t["params"], "{id}: same hyperparameters");
                }
            }
        }
    }
    // Each worker trained until its member's state reached the budget, and no further.
    let mut last: BTreeMap<u64, &Value> = BTreeMap::new();
    for t in &trials {
        let w = t["worker"].as_u64().unwrap();
        if last.get(&w).is_none_or(|l| l["generation"].as_u64() < t["generation"].as_u64()) {
            last.insert(w, t);
        }
    }
    assert_eq!(last.len(), 4, "every worker trained");
    for (w, t) in last {
        let after = t["lineage"]["step"].as_u64().unwrap() + INTERVAL;
        assert!(t["failure"].is_null() && after >= BUDGET, "worker {w} stopped at step {after}");
    }
    exploits
}

/// Saved states under the checkpoint (no half-written ones) and their number.
fn states(dir: &Path) -> usize {
    let names: Vec<String> = std::fs::read_dir(dir.join("ck/states"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".partial")), "half-written states left: {names:?}");
    names.len()
}

#[test]
fn members_continue_exactly_their_parents_state_and_the_worst_exploit_the_best() {
    let _one_job = one_job_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = run_with_timeout(job(dir, "0.3"), Duration::from_secs(300));
    let stdout = succeeded(&out);
    let exploits = check_lineages(dir);
    assert!(exploits >= 1, "no member exploited another in {} trials", trials_jsonl(dir).len());
    let kept = states(dir);
    let trials = trials_jsonl(dir);
    assert!(kept < trials.len(), "states no one needs are deleted: {kept} kept of {}", trials.len());
    // Each member's last state and the best's are among them.
    for w in 0..4u64 {
        let last = trials.iter().filter(|t| t["worker"] == w).max_by_key(|t| t["generation"].as_u64()).unwrap();
        let name = format!("{}-{}-{}", last["island"], last["worker"], last["generation"]);
        assert!(dir.join("ck/states").join(&name).is_dir(), "worker {w}'s last state {name} was deleted");
    }
    assert!(stdout.contains(&format!("training states kept: {kept} (")), "{stdout}");
    // Each evaluation's line says where its member's training stood and came from.
    assert!(stdout.contains("generation 0 [steps 0-2, fresh]: lr="), "{stdout}");
    assert!(stdout.contains(" [steps 2-4, continued ") && stdout.contains(", exploited "), "{stdout}");
    let csv = read(&dir.join("out/trials.csv"));
    assert!(csv.lines().next().unwrap().ends_with(",parent,step,steps,exploited"), "{csv}");
    let best: Value = serde_json::from_str(&read(&dir.join("out/best.json"))).unwrap();
    assert_eq!(best["training_states"]["count"], kept);
    // The best member's schedule: from a fresh member, parent by parent, to the best.
    let schedule = best["schedule"].as_array().expect("a schedule");
    assert!(schedule[0]["lineage"]["parent"].is_null(), "{schedule:?}");
    assert_eq!(id_of(schedule.last().unwrap()), id_of(&best));
    for pair in schedule.windows(2) {
        assert_eq!(pair[1]["lineage"]["parent"], id_of(&pair[0]).as_str());
    }
    assert_eq!(schedule.len() as u64, best["lineage"]["step"].as_u64().unwrap() / INTERVAL + 1);
}

/// Seconds since the Unix epoch of a trial's start and end (trials.jsonl's `start` and
/// `duration_s`).
fn start_and_end(t: &Value) -> (f64, f64) {
    let start = chrono::DateTime::parse_from_rfc3339(t["start"].as_str().unwrap()).unwrap();
    let start = start.timestamp_micros() as f64 / 1e6;
    (start, start + t["duration_s"].as_f64().unwrap())
}

/// A worker breeds knowing every result its island finished while it trained: each exploit
/// continues the donor's latest evaluation, unless a later one ended less than a moment before
/// (its message in flight). Open MPI's first empty probe after a trial used to end the drain while
/// the results sent during the trial waited, and every exploit took the donor's evaluation before
/// (whose state its owner then deleted).
#[test]
fn exploits_continue_the_donors_latest_state() {
    let _one_job = one_job_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("space.toml"), SPACE).unwrap();
    let mut c = mpirun(4);
    c.arg(bin()).arg("--space").arg(dir.join("space.toml"));
    // States superseded 1 s ago go, so that an exploit of a stale state also fails its evaluation.
    c.args(["--propagator", "pbt", "--pbt-interval", "1", "--pbt-steps", "8"]);
    c.args(["--seed", "5", "--pbt-keep-seconds", "1"]);
    c.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(dir.join("out"));
    // Trials of 1.2-2.0 s, the longer the smaller the learning rate: a result missed for a whole
    // trial is late by 1.2 s or more, one in flight (a breed, a journal line, a state's rename,
    // on a busy machine) by far less than the 0.6 s allowed. The worst member (the smallest rate)
    // finishes each round last, so it decides knowing the others' results of that round and
    // exploits: with equal trials the order the ranks finish in decided, and a CI run on a loaded
    // machine saw no exploit in 32 trials.
    let sleep = r#"$(awk -v lr="$1" 'BEGIN { printf "%.3f", 1.2 + 0.8 * log(0.5 / lr) / log(50) }')"#;
    common::shim(dir, "slower_for_smaller_rates.sh", &format!("exec {} \"$1\" \"{sleep}\"", toy()));
    c.arg("--").arg(dir.join("slower_for_smaller_rates.sh")).arg("{lr}");
    succeeded(&run_with_timeout(c, Duration::from_secs(300)));
    let trials = trials_jsonl(dir);
    let mut exploits = 0;
    for t in trials.iter().filter(|t| t["lineage"]["exploited"] == true) {
        exploits += 1;
        let donor = &trials.iter().find(|d| id_of(d) == t["lineage"]["parent"].as_str().unwrap()).unwrap();
        let (bred_at, _) = start_and_end(t);
        for later in trials
            .iter()
            .filter(|d| d["worker"] == donor["worker"] && d["generation"].as_u64() > donor["generation"].as_u64())
        {
            let (_, ended) = start_and_end(later);
            assert!(
                ended > bred_at - 0.6,
                "{} exploited {} although {} had ended {:.2} s before",
                id_of(t),
                id_of(donor),
                id_of(later),
                bred_at - ended
            );
        }
    }
    assert!(exploits >= 3, "only {exploits} exploits in {} trials", trials.len());
    // No evaluation failed for want of its state.
    assert!(trials.iter().all(|t| t["failure"].is_null()), "{trials:?}");
}

/// With PB2's explore (which the resume keeps, recorded in the checkpoint): the model picks the
/// exploiting members' values, nothing else changes.
#[test]
fn a_kill_9_then_the_same_command_resumes_every_member_from_its_last_state() {
    let _one_job = one_job_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let pb2 = || before_command(job(dir, "0.2"), &["--pbt-explore", "pb2"]);
    kill_9_after(pb2(), &dir.join("ck"), 8);
    let before = recorded(&dir.join("ck"));
    assert!(before < 24, "the kill came after the end ({before} evaluations)");
    let manifest: Value = serde_json::from_str(&read(&dir.join("ck/manifest.json"))).unwrap();
    assert_eq!(manifest["config"]["propagator"]["explore"], "pb2", "{manifest}");
    // The same command without the flag resumes as recorded.
    let out = run_with_timeout(job(dir, "0.2"), Duration::from_secs(300));
    let stdout = succeeded(&out);
    assert!(stdout.contains("from the checkpoint"), "{stdout}");
    check_lineages(dir);
    assert!(trials_jsonl(dir).iter().all(|t| t["failure"].is_null()), "every member went on from a complete state");
    states(dir);
}

/// A member's own state gone (deleted by hand, or left in the checkpoint a run was reshaped from):
/// the member starts afresh at once, with a warning, and no evaluation fails for it.
#[test]
fn a_missing_own_state_starts_the_member_afresh_with_a_warning() {
    let _one_job = one_job_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // One worker: its member can only continue its own states.
    let one = |dir: &Path| {
        std::fs::write(dir.join("space.toml"), SPACE).unwrap();
        let mut c = mpirun(1);
        c.arg(bin()).arg("--space").arg(dir.join("space.toml"));
        c.args(["--propagator", "pbt", "--pbt-interval", "2", "--pbt-steps", "6", "--seed", "1"]);
        c.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(dir.join("out"));
        c.arg("--").arg(toy()).arg("{lr}");
        c
    };
    let out = run_with_timeout(before_command(one(dir), &["--generations", "2"]), Duration::from_secs(120));
    succeeded(&out);
    // The member's latest state goes missing before the resume continues it.
    std::fs::remove_dir_all(dir.join("ck/states/0-0-1")).unwrap();
    let out = run_with_timeout(before_command(one(dir), &["--generations", "6"]), Duration::from_secs(120));
    succeeded(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the training state of 0/0/1 that this worker's member would continue is missing")
            && stderr.contains("the member starts afresh"),
        "{stderr}"
    );
    let trials = trials_jsonl(dir);
    assert!(trials.iter().all(|t| t["failure"].is_null()), "{trials:?}");
    // A fresh member from generation 2, trained to the budget of 6 steps in 3 evaluations.
    let after: Vec<&Value> = trials.iter().filter(|t| t["generation"].as_u64().unwrap() >= 2).collect();
    assert_eq!(after.len(), 3, "{trials:?}");
    assert!(after[0]["lineage"]["parent"].is_null() && after[0]["lineage"]["step"] == 0, "{:?}", after[0]);
    assert_eq!(after[2]["lineage"]["step"], 4);
}

/// `--reshape-from` a PBT checkpoint: the states stay in the old checkpoint, so the members of the
/// new job start afresh, none after a failed evaluation.
#[test]
fn a_run_reshaped_from_a_pbt_checkpoint_starts_its_members_afresh_without_failures() {
    let _one_job = one_job_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("space.toml"), SPACE).unwrap();
    let job = |np: usize, extra: &[&str]| {
        let mut c = mpirun(np);
        c.arg(bin()).arg("--space").arg(dir.join("space.toml"));
        c.args(["--propagator", "pbt", "--pbt-interval", "2", "--pbt-steps", "6", "--seed", "1"]).args(extra);
        c.arg("--").arg(toy()).arg("{lr}");
        run_with_timeout(c, Duration::from_secs(120))
    };
    let old = dir.join("old").display().to_string();
    succeeded(&job(2, &["--generations", "1", "--checkpoint", &old]));
    let new = dir.join("ck").display().to_string();
    let out_dir = dir.join("out").display().to_string();
    let out = job(1, &["--reshape-from", &old, "--checkpoint", &new, "--out", &out_dir]);
    let stdout = succeeded(&out);
    assert!(stdout.contains("(0 failed)"), "{stdout}");
    let trials = trials_jsonl(dir);
    let ours: Vec<&Value> = trials.iter().filter(|t| t["generation"].as_u64().unwrap() >= 1).collect();
    assert_eq!(ours.len(), 3, "a fresh member trained to its 6 steps: {trials:?}");
    assert!(ours[0]["lineage"]["parent"].is_null(), "{:?}", ours[0]);
}

/// Where every training fails (on a GPU machine a worker of two ranks on one GPU, which NCCL
/// refuses, failed every evaluation), a run ended by its members' budget ends: each worker gives
/// up after 3 failures in a row instead of starting fresh members for ever.
#[test]
fn a_run_whose_every_training_fails_ends() {
    let _one_job = one_job_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("space.toml"), SPACE).unwrap();
    let mut c = mpirun(2);
    c.arg(bin()).arg("--space").arg(dir.join("space.toml"));
    c.args(["--propagator", "pbt", "--pbt-interval", "2", "--pbt-steps", "6", "--seed", "1"]);
    c.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(dir.join("out"));
    c.args(["--", "sh", "-c", "echo refused >&2; exit 3"]);
    let out = run_with_timeout(c, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let trials = trials_jsonl(dir);
    assert_eq!(trials.len(), 6, "3 per worker: {stdout}");
    assert!(trials.iter().all(|t| !t["failure"].is_null()), "{trials:?}");
    assert!(stdout.contains("6 failed"), "{stdout}");
    assert_eq!(out.status.code(), Some(3), "nothing succeeded");
}

/// `cmd` with `extra` put before the trial command's `--`.
fn before_command(cmd: Command, extra: &[&str]) -> Command {
    let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().to_string()).collect();
    let split = args.iter().position(|a| a == "--").unwrap();
    let mut c = Command::new(cmd.get_program());
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.args(&args[..split]).args(extra).args(&args[split..]);
    c
}

#[test]
fn early_stopping_is_refused_with_the_reason() {
    // (A run without a checkpoint is refused too: crates/engine/tests/pbt.rs.)
    let tmp = tempfile::tempdir().unwrap();
    let out = run_with_timeout(before_command(job(tmp.path(), ""), &["--early-stop=median"]), Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let reason = "run it without an early stopper (the command line's --early-stop none)";
    assert!(!out.status.success() && stderr.contains(reason), "{stderr}");
    // An earlier run's evaluations have no states to continue: no warm start either, and nothing
    // is written.
    let csv = tmp.path().join("earlier.csv");
    std::fs::write(&csv, "island,worker,generation,lr,loss\n0,0,0,0.1,1.0\n").unwrap();
    let warm = ["--warm-start", csv.to_str().unwrap()];
    let out = run_with_timeout(before_command(job(tmp.path(), ""), &warm), Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("it takes no warm start (leave out --warm-start)"), "{stderr}");
}
