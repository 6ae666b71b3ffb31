//! Conditional parameters (`when = { optimizer = "sgd" }` in the space file) under mpirun: with
//! every propagator that accepts a conditional space, no trial ever sees an inactive parameter
//! (neither as `--name=value` nor in `PROPULATE_PARAMS`: the trial itself fails if it does) and
//! every active one is there; the outputs leave inactive parameters out (`trials.jsonl`,
//! `best.json`) or empty (`trials.csv`), and Optuna opens the export with each trial's own
//! parameters. The propagators that cannot search such a space, and conditions that are cyclic,
//! dangling or on a non-categorical parameter, are one clear error before anything runs.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::{bin, mpirun, run_with_timeout, through_optuna, trials_jsonl};
use serde_json::Value;

const SPACE: &str = r#"[params]
optimizer = { type = "categorical", choices = ["sgd", "adam", "adadelta"] }
lr = { type = "float", low = 0.0, high = 1.0 }
momentum = { type = "float", low = 0.0, high = 0.99, when = { optimizer = "sgd" } }
betas = { type = "categorical", choices = ["default", "custom"], when = { optimizer = "adam" } }
beta2 = { type = "float", low = 0.9, high = 0.9999, when = { betas = "custom" } }
"#;

/// The trial: fails (exit 3, saying why) when an inactive parameter reaches it as an argument or
/// in PROPULATE_PARAMS, or an active one is missing; else reports a loss whose best is sgd with
/// momentum 0.9 and a learning rate of 0.3.
const TRIAL: &str = r#"
opt= lr= m= betas= b2=
for a in "$@"; do
  case "$a" in
    --optimizer=*) opt=${a#*=} ;; --lr=*) lr=${a#*=} ;; --momentum=*) m=${a#*=} ;;
    --betas=*) betas=${a#*=} ;; --beta2=*) b2=${a#*=} ;;
    *) echo "unexpected argument $a" >&2; exit 3 ;;
  esac
done
want_m= want_betas= want_b2=
[ "$opt" = sgd ] && want_m=1
[ "$opt" = adam ] && want_betas=1
[ "$opt" = adam ] && [ "$betas" = custom ] && want_b2=1
json() { case "$PROPULATE_PARAMS" in *"\"$1\""*) echo 1 ;; esac; }
check() {
  if [ -n "$2" ] && [ -z "$3" ]; then echo "inactive $1 reached the trial: $* / $PROPULATE_PARAMS" >&2; exit 3; fi
  if [ -z "$2" ] && [ -n "$3" ]; then echo "active $1 is missing: $* / $PROPULATE_PARAMS" >&2; exit 3; fi
}
check momentum "$m" "$want_m"; check betas "$betas" "$want_betas"; check beta2 "$b2" "$want_b2"
check momentum-json "$(json momentum)" "$want_m"; check betas-json "$(json betas)" "$want_betas"
check beta2-json "$(json beta2)" "$want_b2"
awk -v o="$opt" -v lr="$lr" -v m="${m:-0}" -v b="${b2:-0.9}" 'BEGIN {
  l = (lr - 0.3) ^ 2
  if (o == "sgd") l += (m - 0.9) ^ 2; else if (o == "adam") l += 0.05 + 10 * (b - 0.999) ^ 2; else l += 0.2
  printf "propulate: loss=%.12g\n", l
}'
"#;

const WORKERS: usize = 4;
const GENERATIONS: usize = 8;

/// The search of [`SPACE`] by `propagator` under mpirun, into `dir`.
fn search(dir: &Path, propagator: &str, space: &str) -> Output {
    std::fs::write(dir.join("space.toml"), space).unwrap();
    let mut cmd = mpirun(WORKERS);
    cmd.arg(bin()).args(["--quiet", "--propagator", propagator, "--generations", &GENERATIONS.to_string()]);
    cmd.arg("--space").arg(dir.join("space.toml"));
    cmd.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(dir.join("out"));
    cmd.args(["--", "sh", "-c", TRIAL, "trial"]);
    run_with_timeout(cmd, Duration::from_secs(300))
}

/// The parameters active for `params` (a trial's, by name), in the space's order.
fn active(params: &serde_json::Map<String, Value>) -> Vec<&'static str> {
    let mut names = vec!["optimizer", "lr"];
    match params["optimizer"].as_str().unwrap() {
        "sgd" => names.push("momentum"),
        "adam" => {
            names.push("betas");
            if params["betas"] == "custom" {
                names.push("beta2");
            }
        }
        _ => {}
    }
    names
}

#[test]
fn inactive_parameters_never_reach_a_trial_with_any_propagator_that_accepts_the_space() {
    for propagator in ["ga", "random", "tpe", "gp", "auto"] {
        let tmp = tempfile::tempdir().unwrap();
        let out = search(tmp.path(), propagator, SPACE);
        assert!(out.status.success(), "{propagator}: {}", String::from_utf8_lossy(&out.stderr));
        let trials = trials_jsonl(tmp.path());
        assert_eq!(trials.len(), WORKERS * GENERATIONS, "{propagator}");
        let mut optimizers = std::collections::BTreeSet::new();
        for t in &trials {
            assert!(t["failure"].is_null(), "{propagator}: a trial saw the wrong parameters: {}", t["failure"]);
            let params = t["params"].as_object().unwrap();
            let mut names: Vec<&str> = params.keys().map(String::as_str).collect();
            let mut expected = active(params);
            names.sort();
            expected.sort();
            assert_eq!(names, expected, "{propagator}: {t}");
            optimizers.insert(params["optimizer"].as_str().unwrap().to_string());
        }
        assert_eq!(optimizers.len(), 3, "{propagator} tried every branch: {optimizers:?}");
        let best: Value =
            serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/best.json")).unwrap()).unwrap();
        let params = best["params"].as_object().unwrap_or_else(|| panic!("{best}"));
        let mut names: Vec<&str> = params.keys().map(String::as_str).collect();
        let mut expected = active(params);
        names.sort();
        expected.sort();
        assert_eq!(names, expected, "{propagator}: best.json {best}");
        if propagator == "auto" {
            outputs_show_each_trials_own_parameters(tmp.path(), &trials);
        }
    }
}

/// `trials.csv` leaves an inactive parameter's cell empty; Optuna opens the export with each
/// trial's active parameters only.
fn outputs_show_each_trials_own_parameters(dir: &Path, trials: &[Value]) {
    let csv = std::fs::read_to_string(dir.join("out/trials.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let sgd = cells[column("optimizer")] == "sgd";
        assert_eq!(cells[column("momentum")].is_empty(), !sgd, "{line}");
        assert_eq!(cells[column("betas")].is_empty(), cells[column("optimizer")] != "adam", "{line}");
    }
    let seen: Vec<Vec<String>> =
        serde_json::from_value(through_optuna(dir, "sorted(sorted(t.params) for t in trials)")).unwrap();
    let mut expected: Vec<Vec<String>> = trials
        .iter()
        .map(|t| {
            let mut names: Vec<String> =
                active(t["params"].as_object().unwrap()).iter().map(|s| s.to_string()).collect();
            names.sort();
            names
        })
        .collect();
    expected.sort();
    assert_eq!(seen, expected);
}

#[test]
fn a_propagator_that_cannot_search_it_and_bad_conditions_are_one_error_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let refused = search(tmp.path(), "cmaes", SPACE);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("CMA-ES cannot search a conditional space (parameter 'momentum'"), "{stderr}");
    assert!(!tmp.path().join("out/trials.jsonl").exists());
    let bad = [
        (
            "momentum = { type = \"float\", low = 0, high = 1, when = { optimiser = \"sgd\" } }",
            "parameter 'momentum': its condition names 'optimiser', which is not a parameter",
        ),
        (
            "momentum = { type = \"float\", low = 0, high = 1, when = { lr = \"sgd\" } }",
            "parameter 'momentum': its condition names 'lr', which is not categorical",
        ),
        (
            "a = { type = \"categorical\", choices = [\"x\"], when = { b = \"x\" } }\nb = { type = \"categorical\", choices = [\"x\"], when = { a = \"x\" } }",
            "its conditions form a cycle (a -> b -> a)",
        ),
    ];
    for (line, expected) in bad {
        let space = format!(
            "[params]\noptimizer = {{ type = \"categorical\", choices = [\"sgd\", \"adam\"] }}\nlr = {{ type = \"float\", low = 0, high = 1 }}\n{line}\n"
        );
        let out = search(tmp.path(), "ga", &space);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "expected {expected:?} in {stderr}");
    }
}
