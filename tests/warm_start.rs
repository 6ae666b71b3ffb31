//! `--warm-start PATH` under mpirun: a new run starts with the evaluations of an earlier one, from
//! its checkpoint, its `trials.csv`, the Optuna journal it was exported to and a journal Optuna
//! itself wrote, without evaluating them again; the imported ones are marked in the outputs; a
//! resume does not import twice, nor does a source given twice; a space that does not match is
//! one error naming the parameter, and values outside the new bounds are left out, counted.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{bin, mpirun, optuna_python, run_with_timeout, trials_jsonl};
use serde_json::Value;

const SPACE: &str =
    "[params]\nx = { type = \"float\", low = -2.0, high = 2.0 }\ny = { type = \"float\", low = -2.0, high = 2.0 }\n";
const TRIAL: &str = r#"awk -v x="${1#--x=}" -v y="${2#--y=}" 'BEGIN { printf "propulate: loss=%.12g\n", (x - 1) ^ 2 + (y + 0.5) ^ 2 }'"#;
const WORKERS: usize = 2;
const GENERATIONS: usize = 8;

/// The search of `space` into `dir/name` (checkpoint `ck`, results `out`) with `flags`.
fn search(dir: &Path, name: &str, space: &str, flags: &[&str]) -> Output {
    let run = dir.join(name);
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("space.toml"), space).unwrap();
    let mut cmd = mpirun(WORKERS);
    cmd.arg(bin()).args(["--generations", &GENERATIONS.to_string(), "--propagator", "ga"]).args(flags);
    cmd.arg("--space").arg(run.join("space.toml"));
    cmd.arg("--checkpoint").arg(run.join("ck")).arg("--out").arg(run.join("out"));
    cmd.args(["--", "sh", "-c", TRIAL, "trial"]);
    run_with_timeout(cmd, Duration::from_secs(300))
}

fn ok(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    text
}

fn best(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("out/best.json")).unwrap()).unwrap()
}

/// Seed records in a checkpoint's journals.
fn seeded(ck: &Path) -> usize {
    std::fs::read_dir(ck)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default().matches(r#"{"e":"seed""#).count())
        .sum()
}

#[test]
fn a_run_starts_from_an_earlier_runs_evaluations_from_each_source_and_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    ok(&search(dir, "a", SPACE, &[]));
    let earlier = (WORKERS * GENERATIONS).to_string();
    let a_best = best(&dir.join("a"))["loss"].as_f64().unwrap();

    // From the checkpoint: every earlier evaluation, none evaluated again, the best at least as good.
    let ck_a = dir.join("a/ck").display().to_string();
    let said = ok(&search(dir, "b", SPACE, &["--warm-start", &ck_a]));
    assert!(said.contains(&format!("warm start: {earlier} evaluations of {ck_a}")), "{said}");
    assert!(said.contains("left out: 0 with a value outside this search space, 0 failed"), "{said}");
    assert_eq!(trials_jsonl(&dir.join("b")).len(), WORKERS * GENERATIONS, "only this run's own evaluations");
    let b = best(&dir.join("b"));
    assert!(b["loss"].as_f64().unwrap() <= a_best, "{b}");
    // Where the best is the earlier run's, the outputs say it was imported.
    assert_eq!(b["imported"] == true, b["loss"].as_f64() == Some(a_best), "{b}");
    assert_eq!(b["worker"].is_null(), b["imported"] == true, "an imported one has no worker of this run: {b}");
    assert_eq!(said.contains("(imported by --warm-start from an earlier run)"), b["imported"] == true, "{said}");
    // A resume of it finds the seeds in its journal and imports nothing again.
    let seeds = seeded(&dir.join("b/ck"));
    assert!(seeds >= 1);
    let again = ok(&search(dir, "b", SPACE, &["--warm-start", &ck_a]));
    assert!(again.contains("its warm start was applied when it began"), "{again}");
    assert_eq!(seeded(&dir.join("b/ck")), seeds, "no second import");

    // From trials.csv and from the Optuna journal the earlier run was exported to.
    let csv = dir.join("a/out/trials.csv").display().to_string();
    let said = ok(&search(dir, "c", SPACE, &["--warm-start", &csv]));
    assert!(said.contains(&format!("warm start: {earlier} evaluations of {csv}")), "{said}");
    let journal = dir.join("a/study.log");
    let mut export = Command::new(bin());
    export
        .arg("report")
        .arg(dir.join("a/ck"))
        .arg("--out")
        .arg(dir.join("a/out"))
        .arg("--optuna-journal")
        .arg(&journal);
    ok(&run_with_timeout(export, Duration::from_secs(60)));
    let journal = journal.display().to_string();
    let said = ok(&search(dir, "d", SPACE, &["--warm-start", &journal]));
    assert!(said.contains(&format!("warm start: {earlier} evaluations of {journal}")), "{said}");

    // From a journal Optuna wrote itself (one failed trial among them, left out).
    let written = dir.join("optuna.log");
    let study = r#"
import sys, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(sys.argv[1]))
study = optuna.create_study(storage=storage, sampler=optuna.samplers.RandomSampler(seed=1))
def objective(trial):
    x, y = trial.suggest_float("x", -2, 2), trial.suggest_float("y", -2, 2)
    if trial.number == 2:
        raise ValueError("a failure")
    return (x - 1) ** 2 + (y + 0.5) ** 2
study.optimize(objective, n_trials=6, catch=(ValueError,))
"#;
    let mut optuna = Command::new(optuna_python());
    optuna.args(["-c", study]).arg(&written);
    ok(&run_with_timeout(optuna, Duration::from_secs(120)));
    let written = written.display().to_string();
    let said = ok(&search(dir, "e", SPACE, &["--warm-start", &written]));
    assert!(said.contains(&format!("warm start: 5 evaluations of {written}")), "{said}");
    assert!(said.contains("0 with a value outside this search space, 1 failed"), "{said}");

    // A study that maximizes: its values negated are losses (taken as they are, its best would be
    // the worst loss, and the run's best loss below 0, which this loss never is).
    let maximized = dir.join("maximized.log");
    let study = study
        .replace("create_study(", "create_study(direction='maximize', ")
        .replace("return (x - 1) ** 2 + (y + 0.5) ** 2", "return -((x - 1) ** 2 + (y + 0.5) ** 2)")
        + "print(f'best value {study.best_value!r}')\n";
    let mut optuna = Command::new(optuna_python());
    optuna.args(["-c", &study]).arg(&maximized);
    let printed = ok(&run_with_timeout(optuna, Duration::from_secs(120)));
    let best_value: f64 = printed.lines().find_map(|l| l.strip_prefix("best value ")).unwrap().parse().unwrap();
    ok(&search(dir, "f", SPACE, &["--warm-start", &maximized.display().to_string()]));
    let loss = best(&dir.join("f"))["loss"].as_f64().unwrap();
    assert!((0.0..=-best_value).contains(&loss), "best loss {loss}, the study's best value {best_value}");
}

/// With several objectives (ZDT1's f1 and f2), each source gives every objective of every
/// evaluation: the new run, its resume and a report read the checkpoint the warm start made.
#[test]
fn a_run_with_objectives_takes_them_from_each_source() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let zdt1 = |name: &str, flags: &[&str]| {
        let mut cmd = mpirun(WORKERS);
        cmd.arg(bin()).args(["--function", "zdt1", "--generations", "3", "--seed", "3", "--quiet"]).args(flags);
        cmd.arg("--checkpoint").arg(dir.join(name).join("ck")).arg("--out").arg(dir.join(name).join("out"));
        ok(&run_with_timeout(cmd, Duration::from_secs(300)))
    };
    zdt1("a", &[]);
    let journal = dir.join("a/study.log");
    let mut export = Command::new(bin());
    export.arg("report").arg(dir.join("a/ck")).arg("--optuna-journal").arg(&journal);
    ok(&run_with_timeout(export, Duration::from_secs(60)));
    let sources = [dir.join("a/ck"), dir.join("a/out/trials.csv"), journal];
    for (name, source) in ["b", "c", "d"].into_iter().zip(&sources) {
        let source = source.display().to_string();
        let said = zdt1(name, &["--warm-start", &source]);
        assert!(said.contains(&format!("warm start: {} evaluations of {source}", WORKERS * 3)), "{said}");
        zdt1(name, &["--warm-start", &source]);
        let mut report = Command::new(bin());
        report.arg("report").arg(dir.join(name).join("ck"));
        ok(&run_with_timeout(report, Duration::from_secs(60)));
        let front = best(&dir.join(name))["front"].as_array().unwrap().clone();
        assert!(front.iter().all(|m| m["objectives"]["f1"].is_number() && m["objectives"]["f2"].is_number()));
    }
}

#[test]
fn a_space_that_does_not_match_is_refused_and_values_outside_are_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    ok(&search(dir, "a", SPACE, &[]));
    let ck_a = dir.join("a/ck").display().to_string();
    let with_z = format!("{SPACE}z = {{ type = \"float\", low = 0.0, high = 1.0 }}\n");
    let retyped =
        SPACE.replace("y = { type = \"float\", low = -2.0, high = 2.0 }", "y = { type = \"int\", low = -2, high = 2 }");
    let without_y = "[params]\nx = { type = \"float\", low = -2.0, high = 2.0 }\n";
    for (space, expected) in [
        (with_z.as_str(), "parameter 'z' of the search space is not in the earlier run (it has x, y)"),
        (retyped.as_str(), "parameter 'y' is an int here but a float in the earlier run"),
        (without_y, "the earlier run has parameter 'y', which the search space has not"),
    ] {
        let out = search(dir, "refused", space, &["--warm-start", &ck_a]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("--warm-start {ck_a}: {expected}")), "{stderr}");
        assert!(!dir.join("refused/out/trials.jsonl").exists());
        let _ = std::fs::remove_dir_all(dir.join("refused"));
    }
    // A trials.csv records no types, but a float's values (fractions) tell it from an int.
    let csv_a = dir.join("a/out/trials.csv").display().to_string();
    let out = search(dir, "refused", &retyped, &["--warm-start", &csv_a]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("parameter 'y' is an int here but a float in the earlier run"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir.join("refused"));
    // The same source twice, spelt two ways, would import every evaluation twice.
    let out = search(dir, "twice", SPACE, &["--warm-start", &ck_a, "--warm-start", &format!("{ck_a}/")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("--warm-start {ck_a}/: given twice")), "{stderr}");
    // The same run through two sources (its checkpoint and its trials.csv): each evaluation once.
    let csv = dir.join("a/out/trials.csv").display().to_string();
    let said = ok(&search(dir, "both", SPACE, &["--warm-start", &ck_a, "--warm-start", &csv]));
    let n = WORKERS * GENERATIONS;
    assert!(said.contains(&format!("warm start: {n} evaluations of {ck_a}, {csv}")), "{said}");
    assert!(said.contains(&format!("0 failed, {n} given by an earlier source already")), "{said}");
    // Half the range: the evaluations with x below 0 are left out and counted.
    let half = SPACE
        .replace("x = { type = \"float\", low = -2.0, high = 2.0 }", "x = { type = \"float\", low = 0.0, high = 2.0 }");
    let outside = trials_jsonl(&dir.join("a")).iter().filter(|t| t["params"]["x"].as_f64().unwrap() < 0.0).count();
    let said = ok(&search(dir, "half", &half, &["--warm-start", &ck_a]));
    let kept = WORKERS * GENERATIONS - outside;
    assert!(said.contains(&format!("warm start: {kept} evaluations")), "{said}");
    assert!(said.contains(&format!("left out: {outside} with a value outside this search space")), "{said}");
}
