//! A run as an Optuna journal file (`JournalFileBackend`, the format Optuna 4 and 5 read), so that
//! `optuna-dashboard FILE` and Optuna's own analysis (`optuna.visualization`, importances) open a
//! propulate-rs run. One line creates the study (minimizing), then one line per trial creates it
//! whole, as Optuna's own `add_trial` does: its parameters in Optuna's internal representation
//! with their distributions, its state (complete, failed, pruned), its value, its intermediate
//! values, its start and end, and the island, worker, generation, failure and metrics as user
//! attributes (with population-based training also its lineage: `pbt_parent`, `pbt_step`,
//! `pbt_steps`, `pbt_exploited`). A run that declares objectives (several: a multi-objective
//! study) has one direction per objective, each trial's `values` as reported, and the objectives' names as the study's metric
//! names (what `study.set_metric_names` records), so that the dashboard draws its Pareto front.
//! The format is Optuna's (optuna/storages/journal/_storage.py); this writes it anew.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value as Json, json};

use crate::error::{Error, Result};
use propulate_core::individual::Individual;
use propulate_core::objective::{Direction, Objective};
use propulate_core::population::breed_key;
use propulate_core::space::{Domain, SearchSpace, Value};

/// Optuna's journal operations (`optuna.storages.journal`): this writer's, and those the warm
/// start's reader replays (`warm_start.rs`).
pub(crate) const CREATE_STUDY: u64 = 0;
pub(crate) const SET_STUDY_SYSTEM_ATTR: u64 = 3;
pub(crate) const CREATE_TRIAL: u64 = 4;
pub(crate) const SET_TRIAL_PARAM: u64 = 5;
pub(crate) const SET_TRIAL_STATE_VALUES: u64 = 6;
pub(crate) const SET_TRIAL_SYSTEM_ATTR: u64 = 9;
/// Optuna's `StudyDirection`s.
pub(crate) const MINIMIZE: u64 = 1;
pub(crate) const MAXIMIZE: u64 = 2;
/// The study system attribute that holds the metric names (Optuna's `study:metric_names`).
pub(crate) const METRIC_NAMES: &str = "study:metric_names";
/// Optuna's `TrialState`s.
pub(crate) const COMPLETE: u64 = 1;
const PRUNED: u64 = 2;
pub(crate) const FAIL: u64 = 3;
/// The `worker_id` Optuna stamps on each line (its own are a UUID and a thread id).
const WORKER_ID: &str = "propulate-rs-export";

/// Write `trials` of a run over `space` with `objectives` (none: one loss) into the Optuna journal
/// `path` as the study `study_name`, in breeding order (the order they started). The file is
/// replaced (written beside it, then renamed).
pub fn write_optuna_journal(
    path: &Path,
    study_name: &str,
    space: &SearchSpace,
    objectives: &[Objective],
    trials: &[Individual],
) -> Result<()> {
    let distributions: Map<String, Json> =
        space.params().iter().map(|p| (p.name.clone(), Json::String(distribution(&p.domain)))).collect();
    let mut ordered: Vec<&Individual> = trials.iter().collect();
    ordered.sort_by_key(|t| breed_key(t));
    // Declared objectives, even one (`--objectives accuracy:max`), are written as reported, with
    // their directions and names: the loss would be a maximized objective negated.
    let declared = !objectives.is_empty();
    let directions: Vec<u64> = if declared {
        objectives.iter().map(|o| if o.direction == Direction::Max { MAXIMIZE } else { MINIMIZE }).collect()
    } else {
        vec![MINIMIZE]
    };
    let mut lines = vec![json!({
        "op_code": CREATE_STUDY, "worker_id": WORKER_ID, "study_name": study_name, "directions": directions,
    })];
    if declared {
        let names: Vec<&str> = objectives.iter().map(|o| o.name.as_str()).collect();
        lines.push(json!({
            "op_code": SET_STUDY_SYSTEM_ATTR, "worker_id": WORKER_ID, "study_id": 0,
            "system_attr": {METRIC_NAMES: names},
        }));
    }
    lines.extend(ordered.iter().map(|t| trial_line(space, &distributions, declared, t)));
    // As --out: a directory that does not exist yet is made.
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    for line in &lines {
        writeln!(file, "{line}").map_err(|e| Error::io(&tmp, e))?;
    }
    file.sync_all().map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// A parameter's domain as Optuna's `distribution_to_json` writes it (a JSON string).
fn distribution(domain: &Domain) -> String {
    let (name, attributes) = match domain {
        Domain::Float { lo, hi, log } => {
            ("FloatDistribution", json!({"step": null, "low": lo, "high": hi, "log": log}))
        }
        Domain::Int { lo, hi } => ("IntDistribution", json!({"log": false, "step": 1, "low": lo, "high": hi})),
        Domain::Categorical { choices } => ("CategoricalDistribution", json!({"choices": choices})),
    };
    json!({"name": name, "attributes": attributes}).to_string()
}

/// One trial, created whole.
fn trial_line(space: &SearchSpace, distributions: &Map<String, Json>, declared: bool, t: &Individual) -> Json {
    // An inactive conditional parameter is absent from both, as in an Optuna trial that did not
    // suggest it (Optuna requires the same names in each).
    let active = space.active(&t.values);
    let distributions: Map<String, Json> = if active.iter().all(|a| *a) {
        distributions.clone()
    } else {
        space.active_values(&t.values).map(|(_, p, _)| (p.name.clone(), distributions[&p.name].clone())).collect()
    };
    let params: Map<String, Json> = space
        .params()
        .iter()
        .zip(&t.values)
        .zip(&active)
        .filter(|(_, a)| **a)
        .map(|((p, v), _)| {
            let internal = match v {
                Value::Float(x) => json!(x),
                Value::Int(n) => json!(*n as f64),
                Value::Cat(k) => json!(*k as f64),
            };
            (p.name.clone(), internal)
        })
        .collect();
    let pruned = t.curve.as_ref().is_some_and(|c| c.pruned);
    let state = match (&t.failure, pruned) {
        (Some(_), _) => FAIL,
        (None, true) => PRUNED,
        (None, false) => COMPLETE,
    };
    let value = (t.failure.is_none() && t.loss.is_finite() && !declared).then_some(t.loss);
    let values = (t.failure.is_none() && declared && !t.objectives.is_empty()).then(|| t.objectives.clone());
    let intermediate: Map<String, Json> =
        t.curve.iter().flat_map(|c| &c.points).map(|(step, v)| (step.to_string(), json!(v))).collect();
    let mut user_attrs = Map::new();
    user_attrs.insert("island".into(), json!(t.id.island));
    user_attrs.insert("worker".into(), json!(t.id.worker));
    user_attrs.insert("generation".into(), json!(t.id.generation));
    if let Some(reason) = &t.failure {
        user_attrs.insert("failure".into(), json!(reason));
    }
    for (name, v) in &t.metrics {
        user_attrs.insert(name.clone(), json!(v));
    }
    if let Some(l) = &t.lineage {
        user_attrs.insert("pbt_parent".into(), json!(l.parent.map(|p| p.to_string())));
        user_attrs.insert("pbt_step".into(), json!(l.step));
        user_attrs.insert("pbt_steps".into(), json!(l.steps));
        user_attrs.insert("pbt_exploited".into(), json!(l.exploited));
    }
    let start = t.start_time();
    let end = start + chrono::Duration::microseconds((t.duration_s * 1e6) as i64);
    let stamp = |d: chrono::DateTime<chrono::Utc>| d.to_rfc3339_opts(chrono::SecondsFormat::Micros, false);
    json!({
        "op_code": CREATE_TRIAL,
        "worker_id": WORKER_ID,
        "study_id": 0,
        "datetime_start": stamp(start),
        "datetime_complete": stamp(end),
        "state": state,
        "value": value,
        "values": values,
        "distributions": distributions,
        "params": params,
        "user_attrs": user_attrs,
        // Where Optuna's samplers keep a trial's constraint values (`_CONSTRAINTS_KEY`): its
        // dashboard and `study.best_trial` tell feasible trials apart by them.
        "system_attrs": if t.constraints.is_empty() { json!({}) } else { json!({"constraints": t.constraints}) },
        "intermediate_values": intermediate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use propulate_core::individual::IndividualId;
    use propulate_core::lineage::Lineage;
    use propulate_core::space::Value;

    #[test]
    fn a_lineage_becomes_user_attributes() {
        let space = SearchSpace::builder().float("lr", 0.0, 1.0).build().unwrap();
        let mut t = Individual::new(vec![Value::Float(0.5)]);
        t.loss = 0.25;
        let parent = IndividualId { island: 0, worker: 2, generation: 3 };
        t.lineage = Some(Box::new(Lineage { parent: Some(parent), step: 8, steps: 2, exploited: true }));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.log");
        write_optuna_journal(&path, "s", &space, &[], &[t.clone()]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let line: Json = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        let attrs = &line["user_attrs"];
        assert_eq!(
            (&attrs["pbt_parent"], &attrs["pbt_step"], &attrs["pbt_steps"], &attrs["pbt_exploited"]),
            (&json!("0/2/3"), &json!(8), &json!(2), &json!(true)),
            "{line}"
        );
        t.lineage = None;
        write_optuna_journal(&path, "s", &space, &[], &[t]).unwrap();
        assert!(!std::fs::read_to_string(&path).unwrap().contains("pbt_"), "none without a lineage");
    }
}
