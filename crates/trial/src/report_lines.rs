//! What a trial's program tells propulate-rs, and how it is read:
//!
//! - the result: `{"loss": <number>, ...}` written by the rank-0 process to `$PROPULATE_RESULT`
//!   (more numeric keys are kept as metrics of the trial), or a line `propulate: loss=<number>` on
//!   its stdout; the file wins when there are both. A run with several objectives reads each from
//!   the file by name (`loss` only when it is one of them);
//! - constraints measured by the training (feasible when each is at most 0): `"constraints":
//!   [0.1, -2.0]` in the result file, or a line `propulate: constraints=0.1,-2.0` (the last such
//!   line counts; one that cannot be read fails the evaluation unless the file gives them);
//! - intermediate values: a line `propulate: step=<n> loss=<number>` each, for early stopping.

use std::path::Path;

/// A line of the rank-0 process's stdout, as far as propulate-rs is concerned.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// `propulate: step=<n> loss=<number>`.
    Step {
        /// The step (an epoch, say); steps must increase.
        step: u64,
        /// Its value.
        value: f64,
    },
    /// `propulate: loss=<number>`: the result.
    Loss(f64),
    /// `propulate: constraints=<number>,<number>,...`: the constraint values.
    Constraints(Vec<f64>),
    /// A `propulate: constraints=` line that cannot be read (a value that is no finite number,
    /// say a failed measurement's `nan`): what is wrong with it. Unlike another malformed line it
    /// fails the evaluation, whose feasibility is then unknown.
    BadConstraints(String),
    /// A line that starts with `propulate:` but cannot be read: what is wrong with it.
    Malformed(String),
    /// Anything else: the program's own output.
    Other,
}

/// Read one line of output.
pub fn parse_line(line: &str) -> Line {
    // A progress bar (tqdm) rewrites its line with carriage returns, so a result printed after it
    // ends the same line: what a terminal shows, the part after the last '\r', is what counts.
    let line = line.trim_end().rsplit('\r').next().unwrap_or_default();
    let Some(rest) = line.trim().strip_prefix("propulate:") else { return Line::Other };
    let words: Vec<&str> = rest.split_whitespace().collect();
    let malformed = || {
        Line::Malformed(format!(
            "'{}': expected 'propulate: loss=<number>' or 'propulate: step=<n> loss=<number>'",
            line.trim()
        ))
    };
    let number = |w: &str, key: &str| w.strip_prefix(key).and_then(|v| v.parse::<f64>().ok());
    // Any line about constraints that cannot be read fails the evaluation (read as something else,
    // it would leave the evaluation unconstrained, so feasible). Spaces around '=' and ',' are
    // read, as Python's `", ".join(...)` writes them.
    if let Some(after) = rest.trim_start().strip_prefix("constraints") {
        let values: Option<Vec<f64>> = after
            .trim_start()
            .strip_prefix('=')
            .and_then(|list| list.split(',').map(|v| v.trim().parse::<f64>().ok().filter(|x| x.is_finite())).collect());
        return values.map_or_else(
            || {
                Line::BadConstraints(format!(
                    "'{}': expected 'propulate: constraints=<number>,<number>,...' with finite numbers",
                    line.trim()
                ))
            },
            Line::Constraints,
        );
    }
    match words.as_slice() {
        [loss] => number(loss, "loss=").map_or_else(malformed, Line::Loss),
        [step, loss] => match (step.strip_prefix("step=").and_then(|s| s.parse::<u64>().ok()), number(loss, "loss=")) {
            (Some(step), Some(value)) => Line::Step { step, value },
            _ => malformed(),
        },
        _ => malformed(),
    }
}

/// What a result file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultFile {
    /// The loss (or the first objective standing in for it).
    pub loss: f64,
    /// The other numbers, by name (booleans as 0 or 1).
    pub metrics: Vec<(String, f64)>,
    /// `"constraints"`: the constraint values, in order (`None` when the file has none).
    pub constraints: Option<Vec<f64>>,
}

/// A result file's contents: the loss, the other numbers as metrics (booleans as 0 or 1) and the
/// constraints (a list of finite numbers). With `objectives` (their names), each must be a number
/// of the file, and `loss` is needed only when it is one of them (else the first objective stands
/// in for it).
pub fn parse_result_file(path: &Path, text: &str, objectives: &[String]) -> Result<ResultFile, String> {
    let what = || format!("the result file {}", path.display());
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        // Python's json.dump writes a float nan or inf as NaN or Infinity, which JSON has not.
        let python = ["NaN", "Infinity"].iter().any(|t| text.contains(t));
        let hint = if python { " (it holds NaN or Infinity: a value that is no finite number)" } else { "" };
        format!("{} is not JSON{hint}: {e}", what())
    })?;
    let serde_json::Value::Object(map) = value else {
        return Err(format!("{} is not a JSON object such as {{\"loss\": 0.25}}", what()));
    };
    let number = |key: &str| match map.get(key) {
        Some(serde_json::Value::Number(n)) => Ok(Some(n.as_f64().unwrap_or(f64::NAN))),
        Some(other) => Err(format!("{} has \"{key}\": {other}, not a number", what())),
        None => Ok(None),
    };
    for name in objectives {
        if number(name)?.is_none() {
            return Err(format!(
                "{} has no \"{name}\" (an objective: the file holds one number per objective, by name)",
                what()
            ));
        }
    }
    // With objectives that leave out `loss`, the first stands in for it, and a "loss" the program
    // writes besides is one of its numbers (a metric), not lost.
    let loss_is_a_metric = !objectives.is_empty() && !objectives.iter().any(|o| o == "loss");
    let loss = match (number("loss")?, objectives.first()) {
        (_, Some(first)) if loss_is_a_metric => number(first)?.expect("checked above"),
        (Some(loss), _) => loss,
        (None, _) => return Err(format!("{} has no \"loss\"", what())),
    };
    // One number is one constraint, as the Python package takes it.
    let constraints = match map.get("constraints") {
        None => None,
        Some(given) => {
            let items = match given {
                serde_json::Value::Array(items) => items.as_slice(),
                one => std::slice::from_ref(one),
            };
            Some(
                items
                    .iter()
                    .map(|c| c.as_f64().filter(|x| x.is_finite()))
                    .collect::<Option<Vec<f64>>>()
                    .ok_or_else(|| format!("{} has \"constraints\": {given}, not a list of finite numbers", what()))?,
            )
        }
    };
    let metrics = map
        .iter()
        .filter(|(k, _)| *k != "loss" || loss_is_a_metric)
        .filter_map(|(k, v)| match v {
            serde_json::Value::Number(n) => n.as_f64().map(|x| (k.clone(), x)),
            serde_json::Value::Bool(b) => Some((k.clone(), f64::from(u8::from(*b)))),
            _ => None,
        })
        .collect();
    Ok(ResultFile { loss, metrics, constraints })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_documented() {
        assert_eq!(parse_line("propulate: loss=0.25"), Line::Loss(0.25));
        assert_eq!(parse_line("  propulate: loss=1e-3\n"), Line::Loss(1e-3));
        assert_eq!(parse_line("propulate: step=3 loss=0.5"), Line::Step { step: 3, value: 0.5 });
        assert_eq!(parse_line("epoch 3: loss=0.5"), Line::Other);
        assert_eq!(parse_line("[rank0] propulate: loss=0.5"), Line::Other);
        // After a progress bar's carriage returns, and with Windows line ends.
        assert_eq!(parse_line("\r 50%|#####     |\r100%|##########|\rpropulate: loss=0.5"), Line::Loss(0.5));
        assert_eq!(parse_line("propulate: loss=0.5\r\n"), Line::Loss(0.5));
        assert_eq!(parse_line("propulate: loss=0.5\r 10%|#"), Line::Other, "a bar drawn over it hides it");
        for bad in
            ["propulate: loss=abc", "propulate: step=-1 loss=1", "propulate: lost=1", "propulate:", "propulate: step=1"]
        {
            assert!(matches!(parse_line(bad), Line::Malformed(m) if m.contains("expected")), "{bad}");
        }
    }

    #[test]
    fn result_files_give_the_loss_and_numeric_metrics() {
        let p = Path::new("r.json");
        let ResultFile { loss, metrics, constraints } =
            parse_result_file(p, r#"{"loss": 0.5, "accuracy": 0.9, "epochs": 3, "note": "x", "best": true}"#, &[])
                .unwrap();
        assert_eq!(constraints, None);
        assert_eq!(loss, 0.5);
        assert_eq!(metrics, [("accuracy".to_string(), 0.9), ("best".to_string(), 1.0), ("epochs".to_string(), 3.0)]);
        for (bad, expected) in [
            ("", "not JSON"),
            (r#"{"loss": NaN}"#, "is not JSON (it holds NaN or Infinity"),
            ("[1]", "not a JSON object"),
            (r#"{"acc": 1}"#, "no \"loss\""),
            (r#"{"loss": "0.5"}"#, "not a number"),
            (r#"{"loss": 0.5, "constraints": "0.1"}"#, "\"constraints\": \"0.1\", not a list of finite numbers"),
            (r#"{"loss": 0.5, "constraints": [0.1, "x"]}"#, "not a list of finite numbers"),
        ] {
            let e = parse_result_file(p, bad, &[]).unwrap_err();
            assert!(e.contains(expected) && e.contains("r.json"), "{bad}: {e}");
        }
    }

    #[test]
    fn constraints_come_as_a_list_in_the_file_or_as_a_line() {
        let read =
            parse_result_file(Path::new("r.json"), r#"{"loss": 0.42, "constraints": [0.1, -2.0]}"#, &[]).unwrap();
        assert_eq!((read.loss, read.constraints), (0.42, Some(vec![0.1, -2.0])));
        assert!(read.metrics.is_empty(), "the constraints are no metric: {:?}", read.metrics);
        let one = parse_result_file(Path::new("r.json"), r#"{"loss": 0.42, "constraints": 0.5}"#, &[]).unwrap();
        assert_eq!(one.constraints, Some(vec![0.5]), "one number, as Python takes it");
        assert_eq!(parse_line("propulate: constraints=0.1,-2.0"), Line::Constraints(vec![0.1, -2.0]));
        assert_eq!(parse_line("propulate: constraints=3"), Line::Constraints(vec![3.0]));
        // As Python's ", ".join writes them, and with spaces around '='.
        assert_eq!(parse_line("propulate: constraints=0.1, -2"), Line::Constraints(vec![0.1, -2.0]));
        assert_eq!(parse_line("propulate: constraints = 5"), Line::Constraints(vec![5.0]));
        // Whatever else a constraints line holds fails the evaluation: read as another line, it
        // would leave it unconstrained, so feasible.
        for bad in [
            "propulate: constraints=",
            "propulate: constraints=0.1,x",
            "propulate: constraints=nan",
            "propulate: constraints=5 # memory",
            "propulate: constraints 5",
        ] {
            assert!(matches!(parse_line(bad), Line::BadConstraints(m) if m.contains("constraints=<number>")), "{bad}");
        }
    }

    #[test]
    fn objectives_are_read_by_name_and_loss_only_when_one_of_them() {
        let p = Path::new("r.json");
        let names = ["val_loss".to_string(), "acc".to_string()];
        let ResultFile { loss, metrics, .. } =
            parse_result_file(p, r#"{"val_loss": 0.25, "acc": 0.75}"#, &names).unwrap();
        assert_eq!(loss, 0.25, "the first objective stands in for the loss");
        assert_eq!(metrics, [("acc".to_string(), 0.75), ("val_loss".to_string(), 0.25)]);
        let e = parse_result_file(p, r#"{"val_loss": 0.25}"#, &names).unwrap_err();
        assert!(e.contains(r#"has no "acc" (an objective"#), "{e}");
        let e = parse_result_file(p, r#"{"val_loss": 0.25, "acc": "high"}"#, &names).unwrap_err();
        assert!(e.contains(r#""acc": "high", not a number"#), "{e}");
        let with_loss = ["loss".to_string(), "acc".to_string()];
        let e = parse_result_file(p, r#"{"acc": 0.5}"#, &with_loss).unwrap_err();
        assert!(e.contains(r#"no "loss""#), "{e}");
        // A "loss" the program writes besides objectives that leave it out is one of its metrics.
        let read = parse_result_file(p, r#"{"loss": 7.0, "val_loss": 0.25, "acc": 0.75}"#, &names).unwrap();
        assert_eq!(read.loss, 0.25);
        assert!(read.metrics.contains(&("loss".to_string(), 7.0)), "{:?}", read.metrics);
    }
}
