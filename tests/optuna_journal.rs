//! `propulate-rs report CHECKPOINT --optuna-journal FILE` writes a run that the real Optuna (5.0.0
//! from PyPI, installed by scripts/install-optuna.sh) opens: every trial with its parameters and
//! their distributions (float with log, int, categorical), its value, its state (complete, failed,
//! pruned), its intermediate values, and island/worker/generation as user attributes, all checked
//! against `trials.csv`; and optuna-dashboard 0.21.0 serves it.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{
    TRAINING, TRAINING_SPACE as SPACE, TWO_OBJECTIVES, TWO_OBJECTIVES_SPACE, bin, optuna_python, run_with_timeout,
};

const CHECK: &str = r#"
import csv, json, math, sys
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState
journal, trials_csv = sys.argv[1], sys.argv[2]
storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal))
[summary] = optuna.get_all_study_summaries(storage)
study = optuna.load_study(study_name=summary.study_name, storage=storage)
assert study.direction == optuna.study.StudyDirection.MINIMIZE
rows = list(csv.DictReader(open(trials_csv)))
trials = study.get_trials(deepcopy=False)
assert len(trials) == len(rows), (len(trials), len(rows))
by_id = {(t.user_attrs["island"], t.user_attrs["worker"], t.user_attrs["generation"]): t for t in trials}
states = {"complete": 0, "fail": 0, "pruned": 0}
for row in rows:
    t = by_id[(int(row["island"]), int(row["worker"]), int(row["generation"]))]
    d = t.distributions
    assert d["lr"] == FloatDistribution(1e-4, 1e-1, log=True), d["lr"]
    assert d["width"] == FloatDistribution(-1.0, 1.0), d["width"]
    assert d["layers"] == IntDistribution(1, 6), d["layers"]
    assert d["act"] == CategoricalDistribution(["relu", "tanh", "broken"]), d["act"]
    assert math.isclose(t.params["lr"], float(row["lr"]), rel_tol=1e-3), (t.params, row)
    assert math.isclose(t.params["width"], float(row["width"]), rel_tol=1e-3, abs_tol=1e-4), (t.params, row)
    assert t.params["layers"] == int(row["layers"]) and t.params["act"] == row["act"], (t.params, row)
    if row["failure"]:
        assert t.state == TrialState.FAIL and t.value is None and row["failure"] in t.user_attrs["failure"]
        states["fail"] += 1
        continue
    assert math.isclose(t.value, float(row["loss"]), rel_tol=1e-12), (t.value, row["loss"])
    if row["pruned"] == "true":
        assert t.state == TrialState.PRUNED, t.state
        states["pruned"] += 1
    else:
        assert t.state == TrialState.COMPLETE, t.state
        states["complete"] += 1
    assert max(t.intermediate_values) == int(row["last_step"]), (t.intermediate_values, row["last_step"])
    assert t.datetime_complete >= t.datetime_start
assert all(states.values()), states  # each state occurs
# Optuna's own analysis runs on it.
optuna.importance.get_param_importances(study)
print("ok", json.dumps(states))
"#;

/// optuna-dashboard (0.21.0, installed beside Optuna) serves the journal: its API lists the study
/// and every trial with its state, as trials.csv has them.
const DASHBOARD: &str = r#"
import csv, json, os, socket, subprocess, sys, time, urllib.request
journal, trials_csv = sys.argv[1], sys.argv[2]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
exe = os.path.join(os.path.dirname(sys.executable), "optuna-dashboard")
server = subprocess.Popen([exe, journal, "--host", "127.0.0.1", "--port", str(port)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
def get(path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
        return r.read()
try:
    for _ in range(300):
        try:
            studies = json.loads(get("/api/studies"))["study_summaries"]
            break
        except OSError:
            assert server.poll() is None, server.stderr.read().decode()
            time.sleep(0.1)
    else:
        raise SystemExit("optuna-dashboard did not answer")
    [study] = studies
    assert study["directions"] == ["minimize"], study
    detail = json.loads(get(f"/api/studies/{study['study_id']}?after=0"))
    rows = list(csv.DictReader(open(trials_csv)))
    assert len(detail["trials"]) == len(rows), (len(detail["trials"]), len(rows))
    want = {"Complete": 0, "Fail": 0, "Pruned": 0}
    for r in rows:
        want["Fail" if r["failure"] else "Pruned" if r["pruned"] == "true" else "Complete"] += 1
    got = {k: sum(t["state"] == k for t in detail["trials"]) for k in want}
    assert got == want, (got, want)
    assert detail["has_intermediate_values"]
    assert {p["name"] for p in detail["union_search_space"]} == {"lr", "width", "layers", "act"}
    assert b"Optuna Dashboard" in get("/dashboard")
    print("ok", json.dumps(got))
finally:
    server.terminate()
    server.wait(timeout=30)
"#;

/// A run with two objectives, one maximized: a multi-objective study with their directions and
/// names, each trial's values as trials.csv has them, and Optuna's own Pareto front (best_trials)
/// the run's front.csv.
const MULTI: &str = r#"
import csv, json, math, sys
import optuna
from optuna.study import StudyDirection
from optuna.trial import TrialState
journal, out = sys.argv[1], sys.argv[2]
storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal))
[summary] = optuna.get_all_study_summaries(storage)
study = optuna.load_study(study_name=summary.study_name, storage=storage)
assert study.directions == [StudyDirection.MAXIMIZE, StudyDirection.MINIMIZE], study.directions
assert study.metric_names == ["accuracy", "size"], study.metric_names
rows = list(csv.DictReader(open(out + "/trials.csv")))
key = lambda t: (t.user_attrs["island"], t.user_attrs["worker"], t.user_attrs["generation"])
by_id = {key(t): t for t in study.get_trials(deepcopy=False)}
assert len(by_id) == len(rows)
for row in rows:
    t = by_id[(int(row["island"]), int(row["worker"]), int(row["generation"]))]
    if row["failure"]:
        assert t.state == TrialState.FAIL and t.values is None
    else:
        assert t.state == TrialState.COMPLETE
        assert t.values == [float(row["accuracy"]), float(row["size"])], (t.values, row)
front = {(int(r["island"]), int(r["worker"]), int(r["generation"])) for r in csv.DictReader(open(out + "/front.csv"))}
assert {key(t) for t in study.best_trials} == front, (len(study.best_trials), len(front))
print("ok", len(front))
"#;

/// A command-trial run over `space_text` with `flags` and `command` (after `--`), checkpointed in
/// `dir/ck`, then `report` of it into `dir/out` with its Optuna journal `dir/study.log`, which is
/// returned.
fn run_and_export(dir: &std::path::Path, space_text: &str, flags: &[&str], command: &[&str]) -> PathBuf {
    let (space, ck) = (dir.join("space.toml"), dir.join("ck"));
    std::fs::write(&space, space_text).unwrap();
    let mut run = Command::new(bin());
    run.args(flags).arg("-q").arg("--space").arg(&space).arg("--checkpoint").arg(&ck).arg("--").args(command);
    let ran = run_with_timeout(run, Duration::from_secs(300));
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let journal = dir.join("study.log");
    let mut report = Command::new(bin());
    report.arg("report").arg(&ck).arg("--out").arg(dir.join("out")).arg("--optuna-journal").arg(&journal);
    let reported = run_with_timeout(report, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&reported.stdout);
    assert!(reported.status.success(), "{}", String::from_utf8_lossy(&reported.stderr));
    assert!(stdout.contains(&format!("wrote {} (an Optuna journal", journal.display())), "{stdout}");
    journal
}

#[test]
fn a_run_with_two_objectives_is_a_multi_objective_study_with_the_same_front() {
    let tmp = tempfile::tempdir().unwrap();
    let flags = ["--local-ranks", "2", "--generations", "10", "--objectives", "accuracy:max,size:min"];
    let journal = run_and_export(tmp.path(), TWO_OBJECTIVES_SPACE, &flags, &["python3", "-c", TWO_OBJECTIVES, "{x}"]);
    let out = tmp.path().join("out");
    let mut check = Command::new(optuna_python());
    check.args(["-c", MULTI]).arg(&journal).arg(&out);
    let checked = run_with_timeout(check, Duration::from_secs(120));
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success() && said.starts_with("ok"), "{said}\n{}", String::from_utf8_lossy(&checked.stderr));
}

#[test]
fn the_optuna_journal_export_opens_in_optuna_with_every_trial_as_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let flags = ["--local-ranks", "2", "--generations", "12", "--early-stop", "median", "--propagator", "tpe"];
    let command = ["python3", "-c", TRAINING, "{lr}", "{width}", "{layers}", "{act}"];
    let journal = run_and_export(tmp.path(), SPACE, &flags, &command);
    let out = tmp.path().join("out");
    let mut check = Command::new(optuna_python());
    check.args(["-c", CHECK]).arg(&journal).arg(out.join("trials.csv"));
    let checked = run_with_timeout(check, Duration::from_secs(120));
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success() && said.starts_with("ok"), "{said}\n{}", String::from_utf8_lossy(&checked.stderr));

    let mut dashboard = Command::new(optuna_python());
    dashboard.args(["-c", DASHBOARD]).arg(&journal).arg(out.join("trials.csv"));
    let served = run_with_timeout(dashboard, Duration::from_secs(120));
    let said = String::from_utf8_lossy(&served.stdout);
    assert!(served.status.success() && said.starts_with("ok"), "{said}\n{}", String::from_utf8_lossy(&served.stderr));
}
