//! The sources a warm start reads (`--warm-start PATH`): a propulate-rs checkpoint directory, a
//! `trials.csv` the run wrote, or an Optuna journal file (as Optuna's `JournalStorage` writes it,
//! or `propulate-rs report --optuna-journal`). Each becomes an [`EarlierRun`]: its parameters and
//! its evaluations by name, which `propulate_core::warm_start` fits to this run's space.

use std::path::Path;

use serde_json::{Map, Value as Json};

use crate::config::{CheckpointSettings, RunConfig};
use crate::error::{Error, Result};
use crate::journal::{Manifest, seed_checkpoint};
use crate::optuna_journal::{
    COMPLETE, CREATE_STUDY, CREATE_TRIAL, FAIL, MAXIMIZE, METRIC_NAMES, MINIMIZE, SET_STUDY_SYSTEM_ATTR,
    SET_TRIAL_PARAM, SET_TRIAL_STATE_VALUES, SET_TRIAL_SYSTEM_ATTR,
};
use propulate_core::enqueued::csv_value;
use propulate_core::layout::Layout;
use propulate_core::objective::Direction;
use propulate_core::space::SearchSpace;
use propulate_core::warm_start::{Earlier, EarlierObjective, EarlierRun, Kind, import};

/// Seed the new checkpoint `ck.dir` with the evaluations of the earlier runs `ck.warm_start`
/// (dealt over the islands as `--reshape-from` deals its individuals, recorded in the journal, so
/// that a resume has them without importing them again). Returns the notice to show and the
/// manifest written; the manifest's `warm_started_from` lists the sources.
pub(crate) fn seed(
    ck: &CheckpointSettings,
    cfg: &RunConfig,
    space: &SearchSpace,
    layout: &Layout,
) -> Result<(String, Manifest)> {
    let (mut seeds, mut outside, mut failed, mut twice, mut missing, mut unfinished) = (Vec::new(), 0, 0, 0, 0, 0);
    let mut seen = Vec::new();
    // An evaluation another source gave already (a run's checkpoint and its trials.csv, say):
    // the same values and the same loss, to the bit.
    let mut known: std::collections::HashSet<String> = std::collections::HashSet::new();
    let key = |ind: &propulate_core::Individual| format!("{:?} {}", ind.values, ind.loss.to_bits());
    for path in &ck.warm_start {
        // The same source twice would count each of its evaluations twice in every model.
        let same = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if seen.contains(&same) {
            return Err(Error::InvalidConfig(format!(
                "--warm-start {}: given twice (its evaluations would be imported twice)",
                path.display()
            )));
        }
        seen.push(same);
        let run = read(path, space)?;
        let imported = import(space, &run, &cfg.objectives, &path.display().to_string(), seeds.len() as u64)?;
        outside += imported.outside;
        failed += imported.failed;
        missing += imported.missing;
        unfinished += imported.unfinished;
        let keys: Vec<String> = imported.individuals.iter().map(key).collect();
        for (ind, k) in imported.individuals.into_iter().zip(&keys) {
            if known.contains(k) {
                twice += 1;
            } else {
                seeds.push(ind);
            }
        }
        known.extend(keys);
    }
    // Numbered anew: the left-out ones leave no gaps.
    for (k, ind) in seeds.iter_mut().enumerate() {
        ind.id.generation = k as u64;
    }
    // This run's workers number their generations after the imported ones.
    let offset = seeds.len() as u64;
    let sources: Vec<String> = ck.warm_start.iter().map(|p| p.display().to_string()).collect();
    let mut extra = ck.extra.clone();
    extra.insert("warm_started_from".into(), sources.clone().into());
    let (seeded, manifest) = seed_checkpoint(&ck.dir, cfg, space, layout, extra, seeds, offset)?;
    let also = |n: usize, what: &str| if n > 0 { format!(", {n} {what}") } else { String::new() };
    let notice = format!(
        "warm start: {seeded} evaluations of {} in {}, not evaluated again; left out: {outside} with a value \
         outside this search space, {failed} failed{}{}{}",
        sources.join(", "),
        ck.dir.display(),
        also(missing, "without a value for a parameter active here"),
        also(unfinished, "pruned or unfinished"),
        also(twice, "given by an earlier source already")
    );
    Ok((notice, manifest))
}

/// The evaluations of the earlier run at `path`, whichever of the three sources it is; a
/// trials.csv's columns named after the parameters of `space` they hold.
fn read(path: &Path, space: &SearchSpace) -> Result<EarlierRun> {
    let flag = |e: Error| Error::InvalidConfig(format!("--warm-start {}: {e}", path.display()));
    if path.is_dir() {
        return checkpoint(path).map_err(flag);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::InvalidConfig(format!("--warm-start {}: {e}", path.display())))?;
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let run = if first.trim_start().starts_with('{') {
        optuna_journal(&text)
    } else {
        trials_csv(&text).map(|mut run| {
            csv_columns_as_params(&mut run, space);
            run
        })
    };
    run.map_err(|m| Error::InvalidConfig(format!("--warm-start {}: {m}", path.display())))
}

/// A checkpoint's recorded evaluations, with the kinds its manifest's space gives.
fn checkpoint(dir: &Path) -> Result<EarlierRun> {
    let replay = crate::report::load(dir)?;
    let space = &replay.manifest.space;
    let params = space.params().iter().map(|p| (p.name.clone(), Some(Kind::of(&p.domain)))).collect();
    let objectives = replay
        .manifest
        .config
        .objectives
        .iter()
        .map(|o| EarlierObjective { name: Some(o.name.clone()), direction: Some(o.direction) })
        .collect();
    let evaluations = replay
        .workers
        .iter()
        .flat_map(|j| &j.evaluated)
        .map(|ind| Earlier {
            params: space.active_values(&ind.values).map(|(i, p, v)| (p.name.clone(), space.to_json(i, v))).collect(),
            loss: ind.loss,
            values: ind.objectives.clone(),
            constraints: ind.constraints.clone(),
            // Stopped early: its loss is a step's, not a finished training's.
            unfinished: ind.pruned(),
        })
        .collect();
    Ok(EarlierRun { params, objectives, evaluations })
}

/// `trials.csv`: the parameters are the columns between `generation` and `loss` (a `param_`
/// prefix, which the table adds to a parameter named as one of its columns, taken off); an empty
/// cell is an inactive parameter; `inf` a failed evaluation; the objectives (when the run declared
/// some) the columns after `loss` up to `feasible` or `failure`; `constraint_1`, ... its
/// constraints.
fn trials_csv(text: &str) -> std::result::Result<EarlierRun, String> {
    let mut rows = propulate_core::csv_rows::rows(text)?.into_iter();
    let header = rows.next().ok_or("holds nothing")?.fields;
    let at = |name: &str| header.iter().position(|h| h == name);
    let (Some(generation), Some(loss)) = (at("generation"), at("loss")) else {
        return Err(
            "is neither a checkpoint, a trials.csv (no generation and loss columns) nor an Optuna journal".into()
        );
    };
    if loss <= generation {
        return Err("has its loss column before its parameters: not a trials.csv".into());
    }
    let objectives_end = ["feasible", "failure"].iter().filter_map(|h| at(h)).min().unwrap_or(header.len());
    let objective_columns = loss + 1..objectives_end.max(loss + 1);
    let names: Vec<String> = header[generation + 1..loss].to_vec();
    let constraints: Vec<usize> = (1..).map_while(|k| at(&format!("constraint_{k}"))).collect();
    let pruned = at("pruned");
    let mut evaluations = Vec::new();
    for propulate_core::csv_rows::Row { line, fields: row } in rows {
        if row.len() != header.len() {
            return Err(format!("line {line} has {} fields for the header's {}", row.len(), header.len()));
        }
        let params = names
            .iter()
            .zip(&row[generation + 1..loss])
            .filter(|(_, cell)| !cell.is_empty())
            .map(|(name, cell)| (name.clone(), csv_value(cell)))
            .collect();
        let loss = if row[loss] == "inf" { f64::INFINITY } else { row[loss].parse().unwrap_or(f64::INFINITY) };
        let values = row[objective_columns.clone()].iter().map(|v| v.parse().unwrap_or(f64::NAN)).collect();
        let constraints = constraints.iter().filter_map(|&c| row[c].parse().ok()).collect();
        let unfinished = pruned.is_some_and(|p| row[p] == "true");
        evaluations.push(Earlier { params, loss, values, constraints, unfinished });
    }
    // `objective_loss` is the objective `loss` (output::objective_column).
    let objectives = header[objective_columns]
        .iter()
        .map(|column| match column.strip_prefix("objective_") {
            Some(name) if crate::output::objective_column(name) == *column => name.to_string(),
            _ => column.clone(),
        })
        .map(|name| EarlierObjective { name: Some(name), direction: None })
        .collect();
    // A table records no types, but its cells can tell some: a word is a categorical's choice, a
    // number with a fraction a float's value (an int parameter here is then named as retyped,
    // where each value would be left out as outside the space); whole numbers may be either.
    let kind = |name: &String| {
        let cells = evaluations.iter().filter_map(|e: &Earlier| e.params.get(name));
        cells.fold(None, |seen, cell| match (seen, cell) {
            (_, Json::String(_)) | (Some(Kind::Categorical), _) => Some(Kind::Categorical),
            (_, Json::Number(n)) if n.as_f64().is_some_and(|x| x.fract() != 0.0) => Some(Kind::Float),
            (seen, _) => seen,
        })
    };
    let params = names.iter().map(|n| (n.clone(), kind(n))).collect();
    Ok(EarlierRun { params, objectives, evaluations })
}

/// A trials.csv's columns renamed to the parameters of `space` they hold: the table names a
/// parameter called as one of its own columns `param_<name>` (output::param_columns, with the
/// earlier run's objectives), which only the space can undo exactly.
fn csv_columns_as_params(run: &mut EarlierRun, space: &SearchSpace) {
    let objectives: Vec<String> = run.objectives.iter().filter_map(|o| o.name.clone()).collect();
    let columns = crate::output::param_columns(space, &objectives);
    let rename = |column: &str| -> Option<String> {
        let k = columns.iter().position(|c| c == column)?;
        Some(space.params()[k].name.clone()).filter(|name| name != column)
    };
    for (name, _) in &mut run.params {
        if let Some(new) = rename(name) {
            *name = new;
        }
    }
    for e in &mut run.evaluations {
        let renamed: Vec<(String, String)> =
            e.params.keys().filter_map(|c| rename(c).map(|n| (c.clone(), n))).collect();
        let mut values: Vec<(String, Json)> =
            renamed.iter().map(|(c, n)| (n.clone(), e.params.remove(c).unwrap())).collect();
        for (name, value) in values.drain(..) {
            e.params.insert(name, value);
        }
    }
}

/// One trial as the journal builds it.
#[derive(Default)]
struct Trial {
    params: Map<String, Json>,
    state: Option<u64>,
    values: Vec<f64>,
    /// By Optuna's key: `0`, `1`, ... of the list `constraints` (`constraints_func`), and the
    /// names of `Trial.set_constraint(name, value)` (Optuna 5), kept as `constraints:<name>`.
    constraints: Vec<(String, f64)>,
}

impl Trial {
    /// The constraints among system attributes `attrs`, as Optuna's
    /// `_get_constraints_from_system_attrs` reads them: the old list, then each named one (a name
    /// given again replaces its value).
    fn add_constraints(&mut self, attrs: &Json) {
        let Some(attrs) = attrs.as_object() else { return };
        let mut set = |key: String, value: Option<f64>| {
            let Some(value) = value else { return };
            match self.constraints.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => self.constraints.push((key, value)),
            }
        };
        if let Some(list) = attrs.get("constraints").and_then(Json::as_array) {
            for (k, c) in list.iter().enumerate() {
                set(k.to_string(), c.as_f64());
            }
        }
        for (key, value) in attrs {
            if let Some(name) = key.strip_prefix("constraints:") {
                set(name.to_string(), value.as_f64());
            }
        }
    }
}

/// A trial's values in a journal operation: `values` (a list, or null), or an older `value`.
fn values_of(op: &Json) -> Vec<f64> {
    match (op["values"].as_array(), op["value"].as_f64()) {
        (Some(values), _) => values.iter().map(|v| v.as_f64().unwrap_or(f64::NAN)).collect(),
        (None, Some(v)) => vec![v],
        (None, None) => Vec::new(),
    }
}

/// An Optuna journal's one study: its complete trials, with their values as the study's
/// objectives (named where the study named its metrics) and the first, negated when the study
/// maximizes it, as the loss.
fn optuna_journal(text: &str) -> std::result::Result<EarlierRun, String> {
    let mut trials: Vec<Trial> = Vec::new();
    let mut kinds: Vec<(String, Option<Kind>)> = Vec::new();
    let mut studies = 0;
    let mut directions: Vec<Direction> = Vec::new();
    let mut metric_names: Vec<String> = Vec::new();
    for (k, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let op: Json = serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", k + 1))?;
        let trial = |trials: &mut Vec<Trial>| -> std::result::Result<usize, String> {
            let id = op["trial_id"].as_u64().ok_or(format!("line {}: no trial_id", k + 1))? as usize;
            if id >= trials.len() {
                return Err(format!("line {}: trial {id} was never created", k + 1));
            }
            Ok(id)
        };
        match op["op_code"].as_u64() {
            Some(CREATE_STUDY) => {
                studies += 1;
                let codes = op["directions"].as_array().cloned().unwrap_or_default();
                directions = codes
                    .iter()
                    .map(|d| match d.as_u64() {
                        Some(MINIMIZE) => Ok(Direction::Min),
                        Some(MAXIMIZE) => Ok(Direction::Max),
                        _ => {
                            Err(format!("line {}: a study direction {d} that is neither minimize nor maximize", k + 1))
                        }
                    })
                    .collect::<std::result::Result<_, _>>()?;
            }
            Some(SET_STUDY_SYSTEM_ATTR) => {
                if let Some(names) = op["system_attr"][METRIC_NAMES].as_array() {
                    metric_names = names.iter().map(|n| n.as_str().unwrap_or_default().to_string()).collect();
                }
            }
            Some(CREATE_TRIAL) => {
                let mut t = Trial { state: op["state"].as_u64(), ..Trial::default() };
                t.values = values_of(&op);
                if let (Some(params), Some(distributions)) = (op["params"].as_object(), op["distributions"].as_object())
                {
                    for (name, internal) in params {
                        let d = distributions.get(name).and_then(Json::as_str).unwrap_or_default();
                        set_param(&mut t, &mut kinds, name, internal, d).map_err(|m| format!("line {}: {m}", k + 1))?;
                    }
                }
                t.add_constraints(&op["system_attrs"]);
                trials.push(t);
            }
            Some(SET_TRIAL_PARAM) => {
                let id = trial(&mut trials)?;
                let name = op["param_name"].as_str().unwrap_or_default();
                let d = op["distribution"].as_str().unwrap_or_default();
                set_param(&mut trials[id], &mut kinds, name, &op["param_value_internal"], d)
                    .map_err(|m| format!("line {}: {m}", k + 1))?;
            }
            Some(SET_TRIAL_STATE_VALUES) => {
                let id = trial(&mut trials)?;
                trials[id].state = op["state"].as_u64();
                trials[id].values = values_of(&op);
            }
            Some(SET_TRIAL_SYSTEM_ATTR) => {
                let id = trial(&mut trials)?;
                trials[id].add_constraints(&op["system_attr"]);
            }
            Some(_) => {}
            None => {
                return Err(format!(
                    "line {}: no op_code: neither a checkpoint, a trials.csv nor an Optuna journal",
                    k + 1
                ));
            }
        }
    }
    if studies != 1 {
        return Err(format!("holds {studies} studies; a warm start reads a journal of one"));
    }
    let first_sign = if directions.first() == Some(&Direction::Max) { -1.0 } else { 1.0 };
    let evaluations = trials
        .into_iter()
        .map(|t| Earlier {
            params: t.params,
            loss: t.values.first().filter(|_| t.state == Some(COMPLETE)).map_or(f64::INFINITY, |v| first_sign * v),
            unfinished: !matches!(t.state, Some(COMPLETE | FAIL)),
            values: t.values,
            constraints: t.constraints.into_iter().map(|(_, c)| c).collect(),
        })
        .collect();
    let named = metric_names.len() == directions.len();
    let objectives = directions
        .iter()
        .enumerate()
        .map(|(k, d)| EarlierObjective { name: named.then(|| metric_names[k].clone()), direction: Some(*d) })
        .collect();
    Ok(EarlierRun { params: kinds, objectives, evaluations })
}

/// Record `name = internal` (Optuna's internal representation under the distribution `d`, a JSON
/// text) on `t`, and the parameter's kind.
fn set_param(
    t: &mut Trial,
    kinds: &mut Vec<(String, Option<Kind>)>,
    name: &str,
    internal: &Json,
    d: &str,
) -> std::result::Result<(), String> {
    let d: Json =
        serde_json::from_str(d).map_err(|e| format!("parameter '{name}': its distribution is not JSON: {e}"))?;
    let x = internal.as_f64().ok_or(format!("parameter '{name}': value {internal} is not a number"))?;
    let (kind, value) = match d["name"].as_str() {
        Some(
            "FloatDistribution" | "UniformDistribution" | "LogUniformDistribution" | "DiscreteUniformDistribution",
        ) => (Kind::Float, Json::from(x)),
        Some("IntDistribution" | "IntUniformDistribution" | "IntLogUniformDistribution") => {
            (Kind::Int, Json::from(x.round() as i64))
        }
        Some("CategoricalDistribution") => {
            let choice = &d["attributes"]["choices"][x as usize];
            let text = choice.as_str().map_or_else(|| choice.to_string(), str::to_string);
            (Kind::Categorical, Json::from(text))
        }
        other => return Err(format!("parameter '{name}': unknown distribution {other:?}")),
    };
    if !kinds.iter().any(|(n, _)| n == name) {
        kinds.push((name.to_string(), Some(kind)));
    }
    t.params.insert(name.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trials_csv_gives_its_parameters_losses_and_constraints() {
        let text = "island,worker,generation,opt,x,loss,feasible,constraint_1,failure,start,duration_s\n\
                    0,0,0,sgd,0.5,1.25,true,-1,,t,1\n\
                    0,1,0,adam,,inf,,,\"the loss, it failed\",t,1\n";
        let run = trials_csv(text).unwrap();
        // A word is a categorical's choice, a fraction a float's value.
        let kinds = [("opt".to_string(), Some(Kind::Categorical)), ("x".to_string(), Some(Kind::Float))];
        assert_eq!(run.params, kinds);
        let whole = trials_csv("island,worker,generation,n,loss\n0,0,0,3,1\n0,0,1,4.0,1\n").unwrap();
        assert_eq!(whole.params, [("n".to_string(), None)], "whole numbers may be an int's or a float's");
        assert_eq!(run.evaluations[0].params["x"], 0.5);
        assert_eq!(run.evaluations[0].params["opt"], "sgd");
        assert_eq!((run.evaluations[0].loss, run.evaluations[0].constraints.clone()), (1.25, vec![-1.0]));
        assert!(!run.evaluations[1].params.contains_key("x") && run.evaluations[1].loss.is_infinite());
        assert!(trials_csv("a,b\n1,2\n").unwrap_err().contains("neither a checkpoint"));
        // An evaluation stopped early is no finished one.
        let stopped =
            trials_csv("island,worker,generation,x,loss,pruned,last_step\n0,0,0,0.5,2,true,3\n0,0,1,0.6,1,false,9\n");
        let unfinished: Vec<bool> = stopped.unwrap().evaluations.iter().map(|e| e.unfinished).collect();
        assert_eq!(unfinished, [true, false]);
    }

    /// What output::trials_csv writes, a warm start reads back: parameters named as the table's
    /// columns (and as its prefixed names), an objective named `loss`.
    #[test]
    fn a_trials_csv_the_run_wrote_reads_back_whatever_its_names() {
        use propulate_core::individual::Individual;
        use propulate_core::{Objective, Value};
        let space = SearchSpace::builder()
            .float("loss", 0.0, 1.0)
            .float("param_loss", 0.0, 1.0)
            .int("steps", 1, 9)
            .categorical("start", &["a", "b"])
            .build()
            .unwrap();
        let objectives = [Objective::min("loss"), Objective::max("acc")];
        let mut t = Individual::new(vec![Value::Float(0.25), Value::Float(0.75), Value::Int(3), Value::Cat(1)]);
        (t.loss, t.objectives) = (0.5, vec![0.5, 0.9]);
        let text = crate::output::trials_csv(&space, &objectives, &[t]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trials.csv");
        std::fs::write(&path, &text).unwrap();
        // A categorical's words tell its kind: the columns are renamed all the same.
        let run = read(&path, &space).unwrap();
        let imported = import(&space, &run, &objectives, "t.csv", 0).unwrap();
        assert_eq!(imported.individuals.len(), 1, "{text}");
        let ind = &imported.individuals[0];
        assert_eq!(ind.values, [Value::Float(0.25), Value::Float(0.75), Value::Int(3), Value::Cat(1)]);
        assert_eq!((ind.loss, ind.objectives.clone()), (0.5, vec![0.5, 0.9]));
    }

    #[test]
    fn an_optuna_journal_is_replayed_operation_by_operation() {
        let float = r#"{\"name\": \"FloatDistribution\", \"attributes\": {\"step\": null, \"low\": 0.0, \"high\": 1.0, \"log\": false}}"#;
        let cat = r#"{\"name\": \"CategoricalDistribution\", \"attributes\": {\"choices\": [\"sgd\", \"adam\"]}}"#;
        let text = [
            r#"{"op_code": 0, "worker_id": "w", "study_name": "s", "directions": [1]}"#.to_string(),
            r#"{"op_code": 4, "worker_id": "w", "study_id": 0, "datetime_start": "t"}"#.to_string(),
            format!(r#"{{"op_code": 5, "worker_id": "w", "trial_id": 0, "param_name": "x", "param_value_internal": 0.25, "distribution": "{float}"}}"#),
            format!(r#"{{"op_code": 5, "worker_id": "w", "trial_id": 0, "param_name": "opt", "param_value_internal": 1, "distribution": "{cat}"}}"#),
            r#"{"op_code": 9, "worker_id": "w", "trial_id": 0, "system_attr": {"constraints": [0.5]}}"#.to_string(),
            r#"{"op_code": 6, "worker_id": "w", "trial_id": 0, "state": 1, "values": [2.5]}"#.to_string(),
            r#"{"op_code": 4, "worker_id": "w", "study_id": 0, "datetime_start": "t"}"#.to_string(),
            r#"{"op_code": 6, "worker_id": "w", "trial_id": 1, "state": 3, "values": null}"#.to_string(),
            // Optuna 5's Trial.set_constraint: one attribute per named constraint.
            r#"{"op_code": 4, "worker_id": "w", "study_id": 0, "datetime_start": "t"}"#.to_string(),
            r#"{"op_code": 9, "worker_id": "w", "trial_id": 2, "system_attr": {"constraints:mem": 1.45}}"#.to_string(),
            r#"{"op_code": 9, "worker_id": "w", "trial_id": 2, "system_attr": {"constraints:lat": -0.5}}"#.to_string(),
            r#"{"op_code": 6, "worker_id": "w", "trial_id": 2, "state": 1, "values": [1.0]}"#.to_string(),
        ]
        .join("\n");
        let run = optuna_journal(&text).unwrap();
        assert_eq!(run.params, [("x".to_string(), Some(Kind::Float)), ("opt".to_string(), Some(Kind::Categorical))]);
        let first = &run.evaluations[0];
        assert_eq!((first.params["x"].as_f64(), first.params["opt"].as_str()), (Some(0.25), Some("adam")));
        assert_eq!((first.loss, first.constraints.clone()), (2.5, vec![0.5]));
        assert!(run.evaluations[1].loss.is_infinite(), "a failed trial");
        assert_eq!(run.evaluations[2].constraints, [1.45, -0.5], "set_constraint's, in the order set");
        let e = optuna_journal(r#"{"op_code": 6, "trial_id": 3, "state": 1}"#).unwrap_err();
        assert!(e.contains("trial 3 was never created"), "{e}");
    }
}
