//! Several objectives through the CLI under mpirun: a ZDT1 run on two islands writes a front
//! (front.csv, best.json, report.html) that is exactly the non-dominated evaluations of its
//! journal, a resume keeps it so, a command trial's objectives come from its result file by name,
//! and what cannot work is refused with a message that says why.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use common::{Transport, bin, report_data, run_with_timeout, succeeded};
use propulate::pareto::dominates;
use serde_json::Value;

/// Identities ("island/worker/generation") of `rows`, each a JSON object with those keys.
fn identity(row: &Value) -> String {
    format!("{}/{}/{}", row["island"], row["worker"], row["generation"])
}

/// The non-dominated successful trials of `dir/trials.jsonl` by brute force, all objectives
/// minimized after multiplying by `signs`, keyed by identity.
fn non_dominated(dir: &Path, names: &[&str], signs: &[f64]) -> BTreeSet<String> {
    let text = std::fs::read_to_string(dir.join("trials.jsonl")).expect("trials.jsonl");
    let points: Vec<(String, Vec<f64>)> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|t| t["failure"].is_null())
        .map(|t| {
            let values = names.iter().zip(signs).map(|(n, s)| t["objectives"][n].as_f64().unwrap() * s).collect();
            (identity(&t), values)
        })
        .collect();
    points.iter().filter(|(_, p)| !points.iter().any(|(_, q)| dominates(q, p))).map(|(id, _)| id.clone()).collect()
}

/// The identities and objective columns of `dir/front.csv`.
fn front_csv(dir: &Path) -> (Vec<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(dir.join("front.csv")).expect("front.csv");
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let ids = lines.map(|l| l.split(',').take(3).collect::<Vec<_>>().join("/")).collect();
    (header, ids)
}

fn run(args: &[&str]) -> std::process::Output {
    let mut cmd = common::launch(Transport::Mpi, 4);
    cmd.args(args).arg("--quiet");
    run_with_timeout(cmd, Duration::from_secs(300))
}

#[test]
fn a_zdt1_run_on_two_islands_keeps_its_whole_front_across_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ck) = (dir.path().join("out"), dir.path().join("ck"));
    let args = |generations: &str| {
        let (out, ck) = (out.to_str().unwrap().to_string(), ck.to_str().unwrap().to_string());
        let mut a: Vec<String> = ["--function", "zdt1", "--islands", "2", "--seed", "5", "--generations"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend([generations.to_string(), "--out".into(), out, "--checkpoint".into(), ck]);
        a
    };
    let first = args("60");
    succeeded(&run(&first.iter().map(String::as_str).collect::<Vec<_>>()));
    let (header, ids) = front_csv(&out);
    assert_eq!(&header[..4], ["island", "worker", "generation", "x0"]);
    assert_eq!(&header[header.len() - 2..], ["f1", "f2"]);
    assert_eq!(ids, non_dominated(&out, &["f1", "f2"], &[1.0, 1.0]), "front.csv is the non-dominated trials");

    // Resumed to 120 generations: the front is that of all 480 evaluations.
    let second = args("120");
    let stdout = succeeded(&run(&second.iter().map(String::as_str).collect::<Vec<_>>()));
    assert!(stdout.contains("Pareto front:") && stdout.contains("front.csv"), "{stdout}");
    let best: Value = serde_json::from_str(&std::fs::read_to_string(out.join("best.json")).unwrap()).unwrap();
    assert_eq!(best["evaluations"], 480);
    assert_eq!(best["resumed"], 240);
    let (_, ids) = front_csv(&out);
    assert_eq!(ids, non_dominated(&out, &["f1", "f2"], &[1.0, 1.0]));
    let in_best: BTreeSet<String> = best["front"].as_array().unwrap().iter().map(identity).collect();
    assert_eq!(in_best, ids);
    assert_eq!(best["island_fronts"].as_array().unwrap().len(), 2);
    assert_eq!(best["objectives"][1], serde_json::json!({"name": "f2", "direction": "min"}));
    let data = report_data(&out);
    assert_eq!(data["front"].as_array().unwrap().len(), ids.len(), "the report draws the whole front");

    // The report of the checkpoint rebuilds the same front.
    let again = dir.path().join("again");
    let report = std::process::Command::new(bin()).arg("report").arg(&ck).arg("--out").arg(&again).output().unwrap();
    succeeded(&report);
    assert_eq!(front_csv(&again).1, ids);
}

/// [`common::TWO_OBJECTIVES`] as a command trial on 2 MPI ranks under `objectives`, results in
/// `dir/out`.
fn two_objectives_trials(dir: &Path, objectives: &str, generations: &str) -> std::process::Output {
    std::fs::write(dir.join("space.toml"), common::TWO_OBJECTIVES_SPACE).unwrap();
    std::fs::write(dir.join("trial.py"), common::TWO_OBJECTIVES).unwrap();
    let mut cmd = common::launch(Transport::Mpi, 2);
    cmd.arg("--space").arg(dir.join("space.toml"));
    cmd.args(["--objectives", objectives, "--generations", generations, "--quiet", "--no-checkpoint"]);
    cmd.arg("--out").arg(dir.join("out")).arg("--trials-dir").arg(dir.join("trials"));
    cmd.args(["--", "python3"]).arg(dir.join("trial.py")).arg("{x}");
    run_with_timeout(cmd, Duration::from_secs(300))
}

#[test]
fn a_command_trials_objectives_come_from_its_result_file_by_name_and_direction() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    succeeded(&two_objectives_trials(dir.path(), "accuracy:max,size:min", "12"));
    let (header, ids) = front_csv(&out);
    assert_eq!(header, ["island", "worker", "generation", "x", "accuracy", "size"]);
    assert_eq!(ids, non_dominated(&out, &["accuracy", "size"], &[-1.0, 1.0]));
    let text = std::fs::read_to_string(out.join("trials.jsonl")).unwrap();
    let trials: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(trials.len(), 24);
    for t in &trials {
        let x = t["params"]["x"].as_f64().unwrap();
        if x > 0.9 {
            let reason = t["failure"].as_str().unwrap();
            assert!(reason.contains(r#"has no "size" (an objective"#), "{reason}");
        } else {
            assert_eq!(t["objectives"]["accuracy"].as_f64().unwrap(), x);
            assert!(t.get("metrics").is_none(), "objectives are not kept twice as metrics: {t}");
        }
    }
}

/// One maximized objective: the loss is it negated, and the run's last line names it as declared
/// instead of printing the negated loss.
#[test]
fn one_maximized_objective_is_reported_by_its_name_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let stdout = succeeded(&two_objectives_trials(dir.path(), "accuracy:max", "4"));
    let text = std::fs::read_to_string(out.join("trials.jsonl")).unwrap();
    let best = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["objectives"]["accuracy"].as_f64().unwrap())
        .fold(f64::MIN, f64::max);
    assert!(stdout.contains(&format!("best accuracy {best:.6e}, maximized (born on")), "{best}:\n{stdout}");
}

#[test]
fn what_cannot_work_is_refused_before_the_run() {
    for (args, expected) in [
        (vec!["--function", "zdt1", "--objectives", "a,b"], "zdt1 declares its own objectives (f1, f2)"),
        (vec!["--function", "dtlz2", "--propagator", "cmaes"], "propagator cmaes models one loss"),
        (vec!["--function", "sphere", "--objectives", "loss:min,epochs:up"], "'up' is neither min nor max"),
        (vec!["--function", "zdt9"], "zdt1, zdt2, zdt3, dtlz2"),
    ] {
        let mut all = args.clone();
        all.push("--no-checkpoint");
        let out = run(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}
