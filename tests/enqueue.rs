//! `--enqueue FILE`: configurations known in advance are the first evaluations of the workers, in
//! order across them, each evaluated once, across a kill -9 of the job and its resume; more of
//! them than the run evaluates are named at its start and wait for a longer run; a bad file (an
//! empty one included) is one error before anything is evaluated, and a resume with another file
//! is refused.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{bin, kill_9_after, mpirun, recorded, run_with_timeout, trials_jsonl};

const WORKERS: usize = 4;
const GENERATIONS: usize = 5;

/// Ten configurations of sphere's two coordinates, each unlike anything a propagator would breed.
fn configurations() -> Vec<(f64, f64)> {
    (0..10).map(|k| (-4.0 + 0.25 * k as f64, 3.125 - 0.5 * k as f64)).collect()
}

fn write_csv(path: &Path) {
    let mut text = String::from("x0,x1\n");
    for (a, b) in configurations() {
        text.push_str(&format!("{a},{b}\n"));
    }
    std::fs::write(path, text).unwrap();
}

fn job(dir: &Path, enqueue: &Path) -> std::process::Command {
    job_of(dir, enqueue, GENERATIONS)
}

fn job_of(dir: &Path, enqueue: &Path, generations: usize) -> std::process::Command {
    let mut cmd = mpirun(WORKERS);
    cmd.arg(bin()).args(["--function", "sphere", "--propagator", "ga", "--quiet", "--eval-delay-ms", "40"]);
    cmd.args(["--generations", &generations.to_string(), "--enqueue"]).arg(enqueue);
    cmd.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(dir.join("out"));
    cmd
}

#[test]
fn enqueued_configurations_come_first_and_once_across_a_kill_and_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let enqueue = dir.path().join("known.csv");
    write_csv(&enqueue);
    kill_9_after(job(dir.path(), &enqueue), &dir.path().join("ck"), 6);
    let before = recorded(&dir.path().join("ck"));
    assert!((6..WORKERS * GENERATIONS).contains(&before), "the kill did not land mid-run: {before} recorded");
    let out = run_with_timeout(job(dir.path(), &enqueue), Duration::from_secs(300));
    assert!(out.status.success(), "resume failed: {}", String::from_utf8_lossy(&out.stderr));
    let trials = trials_jsonl(dir.path());
    assert_eq!(trials.len(), WORKERS * GENERATIONS, "every (worker, generation) once");
    let at = |worker: usize, generation: usize| {
        let found: Vec<_> =
            trials.iter().filter(|t| t["worker"] == worker as u64 && t["generation"] == generation as u64).collect();
        assert_eq!(found.len(), 1, "worker {worker} generation {generation}: {} trials", found.len());
        (found[0]["params"]["x0"].as_f64().unwrap(), found[0]["params"]["x1"].as_f64().unwrap())
    };
    for (k, expected) in configurations().into_iter().enumerate() {
        assert_eq!(at(k % WORKERS, k / WORKERS), expected, "configuration {k}");
    }
}

#[test]
fn a_bad_file_is_one_error_before_any_evaluation_and_a_resume_needs_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let enqueue = dir.path().join("known.jsonl");
    std::fs::write(&enqueue, "{\"x0\": 1.0, \"x1\": 2.0}\n{\"x0\": 1.0, \"x1\": 9.0}\n").unwrap();
    let out = run_with_timeout(job(dir.path(), &enqueue), Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("enqueued configuration 2: parameter 'x1' has 9, outside its bounds"), "{stderr}");
    assert_eq!(recorded(&dir.path().join("ck")), 0);

    std::fs::write(&enqueue, "{\"x0\": 1.0, \"x1\": 2.0}\n").unwrap();
    let out = run_with_timeout(job(dir.path(), &enqueue), Duration::from_secs(120));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "x0,x1\n1.0,2.0\n0.5,0.5\n").unwrap();
    let out = run_with_timeout(job(dir.path(), &other), Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("enqueued configurations: checkpoint has 1, this run has 2"), "{stderr}");
    // As many, one edited: which one is said.
    std::fs::write(&other, "x0,x1\n1.0,2.5\n").unwrap();
    let out = run_with_timeout(job(dir.path(), &other), Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("enqueued configurations: configuration 1 differs"), "{stderr}");
}

#[test]
fn configurations_beyond_the_budget_are_named_and_a_longer_run_evaluates_them() {
    let dir = tempfile::tempdir().unwrap();
    let enqueue = dir.path().join("known.csv");
    write_csv(&enqueue);
    let out = run_with_timeout(job_of(dir.path(), &enqueue, 2), Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let notice = "10 configurations are enqueued, but the run evaluates at most 8 (4 workers x 2 generations): the \
                  last 2 are not evaluated";
    assert_eq!(stderr.matches(notice).count(), 1, "{stderr}");
    let out = run_with_timeout(job_of(dir.path(), &enqueue, 3), Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("are enqueued"), "{stderr}");
    let evaluated: Vec<(f64, f64)> = trials_jsonl(dir.path())
        .iter()
        .map(|t| (t["params"]["x0"].as_f64().unwrap(), t["params"]["x1"].as_f64().unwrap()))
        .collect();
    assert!(configurations().iter().all(|c| evaluated.contains(c)), "{evaluated:?}");

    let empty = dir.path().join("header-only.csv");
    std::fs::write(&empty, "x0,x1\n").unwrap();
    let out = run_with_timeout(job_of(&dir.path().join("empty"), &empty, 2), Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("holds no configuration (a header and no line under it)"), "{stderr}");
}
