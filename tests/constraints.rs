//! Constraints measured by a command trial under mpirun, from the result file
//! (`{"loss": ..., "constraints": [...]}`) and from a line (`propulate: constraints=...`): the best
//! individual is the best feasible one, the search breeds towards the feasible side, and every
//! output shows feasibility: `trials.csv` (`feasible`, `constraint_1`), `trials.jsonl` and
//! `best.json` (`constraints`, `feasible`), the report's data, and the Optuna export (the
//! `constraints` system attribute Optuna's samplers keep), which Optuna opens.

mod common;

use std::time::Duration;

use common::{bin, mpirun, report_data, run_with_timeout, through_optuna, trials_jsonl};
use serde_json::Value;

const SPACE: &str =
    "[params]\nx = { type = \"float\", low = 0.0, high = 1.0 }\ny = { type = \"float\", low = 0.0, high = 1.0 }\n";

/// Loss x^2 + y^2, lowest at the origin, where the first constraint (x + y >= 1) does not hold;
/// the second always holds. Even generations write the result file, odd ones print lines.
const TRIAL: &str = r#"
x=${1#--x=} y=${2#--y=}
loss=$(awk -v x="$x" -v y="$y" 'BEGIN { printf "%.12g", x * x + y * y }')
c1=$(awk -v x="$x" -v y="$y" 'BEGIN { printf "%.12g", 1 - x - y }')
generation=${PROPULATE_TRIAL##*/}
if [ $((generation % 2)) = 0 ]; then
  echo "{\"loss\": $loss, \"constraints\": [$c1, -0.5]}" > "$PROPULATE_RESULT"
else
  echo "propulate: constraints=$c1,-0.5"
  echo "propulate: loss=$loss"
fi
"#;

const WORKERS: usize = 4;
const GENERATIONS: usize = 10;

/// Runs `trial` (a shell script) over [`SPACE`] under mpirun in `dir`, which must succeed.
fn run(dir: &std::path::Path, workers: usize, generations: usize, trial: &str) {
    std::fs::write(dir.join("space.toml"), SPACE).unwrap();
    let mut cmd = mpirun(workers);
    cmd.arg(bin()).args(["--quiet", "--generations", &generations.to_string()]);
    cmd.arg("--space").arg(dir.join("space.toml"));
    cmd.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(dir.join("out"));
    cmd.args(["--", "sh", "-c", trial, "trial"]);
    let out = run_with_timeout(cmd, Duration::from_secs(300));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn constraints_from_a_command_trial_rank_feasible_first_and_show_in_every_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, WORKERS, GENERATIONS, TRIAL);

    let trials = trials_jsonl(dir);
    assert_eq!(trials.len(), WORKERS * GENERATIONS);
    let constraint = |t: &Value| t["constraints"][0].as_f64().unwrap();
    for t in &trials {
        assert!(t["failure"].is_null(), "{t}");
        let (x, y) = (t["params"]["x"].as_f64().unwrap(), t["params"]["y"].as_f64().unwrap());
        assert!((constraint(t) - (1.0 - x - y)).abs() < 1e-9, "{t}");
        assert_eq!(t["constraints"][1], -0.5);
        assert_eq!(t["feasible"], constraint(t) <= 0.0, "{t}");
    }
    let feasible: Vec<&Value> = trials.iter().filter(|t| t["feasible"] == true).collect();
    let lowest_feasible = feasible.iter().map(|t| t["loss"].as_f64().unwrap()).fold(f64::INFINITY, f64::min);
    let best: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("out/best.json")).unwrap()).unwrap();
    assert_eq!(best["feasible"], true, "{best}");
    assert_eq!(best["loss"].as_f64().unwrap(), lowest_feasible);
    assert!(lowest_feasible < 0.6, "the search found the feasible side's minimum (0.5): {lowest_feasible}");
    let bred_feasible =
        trials.iter().filter(|t| t["generation"].as_u64().unwrap() >= 5 && constraint(t) <= 0.01).count();
    assert!(bred_feasible * 4 >= WORKERS * 5 * 3, "{bred_feasible} of the later children feasible");

    let csv = std::fs::read_to_string(dir.join("out/trials.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name}: {header:?}"));
    let (f, c1, c2) = (column("feasible"), column("constraint_1"), column("constraint_2"));
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let value: f64 = cells[c1].parse().unwrap();
        assert_eq!(cells[f], if value <= 0.0 { "true" } else { "false" }, "{line}");
        assert_eq!(cells[c2], "-0.5");
    }
    let report = report_data(&dir.join("out"));
    let shown = report["trials"].as_array().unwrap();
    assert!(shown.iter().all(|t| t["feasible"].is_boolean() && t["constraints"].is_array()), "{report}");

    let seen: Vec<Vec<f64>> =
        serde_json::from_value(through_optuna(dir, r#"sorted(t.system_attrs["constraints"] for t in trials)"#))
            .unwrap();
    let mut expected: Vec<Vec<f64>> = trials
        .iter()
        .map(|t| t["constraints"].as_array().unwrap().iter().map(|c| c.as_f64().unwrap()).collect())
        .collect();
    expected.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(seen, expected);
}

/// Prints a constraints line it cannot have measured (`nan`), and on odd generations a readable
/// one after it.
const UNREADABLE: &str = r#"
generation=${PROPULATE_TRIAL##*/}
echo "propulate: constraints=nan"
if [ $((generation % 2)) = 1 ]; then echo "propulate: constraints=-1"; fi
echo "propulate: loss=0.5"
"#;

/// A constraints line that cannot be read fails the evaluation, naming the line, instead of
/// leaving it unconstrained (and so feasible, a candidate for the best); the last line counts.
#[test]
fn an_unreadable_constraints_line_fails_the_evaluation_and_the_last_line_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, 2, 2, UNREADABLE);
    let trials = trials_jsonl(dir);
    assert_eq!(trials.len(), 4);
    for t in &trials {
        if t["generation"] == 0 {
            let failure = t["failure"].as_str().unwrap_or_else(|| panic!("not failed: {t}"));
            assert!(failure.contains("constraints line cannot be read") && failure.contains("constraints=nan"), "{t}");
        } else {
            assert!(t["failure"].is_null(), "{t}");
            assert_eq!((t["constraints"][0].as_f64(), &t["feasible"]), (Some(-1.0), &Value::Bool(true)), "{t}");
        }
    }
}
