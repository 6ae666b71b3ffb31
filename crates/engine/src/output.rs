//! What a run leaves behind for the user: `best.json`, the trial tables (`trials.csv`,
//! `trials.jsonl`), `report.html` and the end-of-run summary table.

use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value as Json, json};

use crate::error::{Error, Result};
use crate::files::{OutputFile, TEMPORARY_SUFFIX};
use crate::result::RunResult;
use propulate_core::individual::Individual;
use propulate_core::objective::Objective;
use propulate_core::space::SearchSpace;

/// An individual as a JSON object: loss, params (name to value), identity, failure, its value of
/// each of the run's `objectives` (name to value, when it has them), the metrics its loss recorded
/// (if any), the values it reported (`curve`, `[step, value]` pairs, and `pruned`) if it
/// reported any, and with population-based training its `lineage`: the evaluation whose state it
/// continued (`parent`, `"island/worker/generation"`, null for a fresh member), the `step` it
/// started at, the `steps` it trained and whether it `exploited` another member.
pub fn individual_json(space: &SearchSpace, objectives: &[Objective], ind: &Individual) -> Json {
    // An inactive conditional parameter is not part of the configuration: absent.
    let params: Map<String, Json> =
        space.active_values(&ind.values).map(|(i, p, v)| (p.name.clone(), space.to_json(i, v))).collect();
    let mut j = json!({
        "loss": finite_or_null(ind.loss),
        "params": params,
        "island": ind.id.island,
        // An imported evaluation's worker is none of this run's (its identity holds a marker).
        "worker": if ind.id.is_imported() { Json::Null } else { json!(ind.id.worker) },
        "generation": ind.id.generation,
        "failure": ind.failure,
    });
    let object = j.as_object_mut().expect("object");
    if !ind.objectives.is_empty() && ind.objectives.len() == objectives.len() {
        let named: Map<String, Json> =
            objectives.iter().zip(&ind.objectives).map(|(o, v)| (o.name.clone(), json!(v))).collect();
        object.insert("objectives".into(), named.into());
    }
    if !ind.metrics.is_empty() {
        object.insert("metrics".into(), json!(ind.metrics));
    }
    if ind.id.is_imported() {
        // Evaluated by an earlier run (`--warm-start`), not by this one.
        object.insert("imported".into(), json!(true));
    }
    if !ind.constraints.is_empty() {
        object.insert("constraints".into(), json!(ind.constraints));
        object.insert("feasible".into(), json!(ind.is_feasible()));
    }
    if let Some(curve) = &ind.curve {
        object.insert("curve".into(), json!(curve.points));
        object.insert("pruned".into(), json!(curve.pruned));
    }
    if let Some(l) = &ind.lineage {
        object.insert(
            "lineage".into(),
            json!({
                "parent": l.parent.map(|p| p.to_string()),
                "step": l.step,
                "steps": l.steps,
                "exploited": l.exploited,
            }),
        );
    }
    j
}

fn finite_or_null(x: f64) -> Json {
    if x.is_finite() { json!(x) } else { Json::Null }
}

/// Write `bytes` to `path` through a temporary file beside it (`name.tmp`), synced and renamed over
/// it: a crash leaves the old file or the new one, never a torn one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_all_atomically(&[(path.to_path_buf(), bytes)])
}

/// Write several files as [`write_atomically`] does, every temporary first and then every rename:
/// a full disk or a quota leaves the old set whole (no new best.json beside an old trials.csv) and
/// no temporary behind.
fn write_all_atomically(files: &[(std::path::PathBuf, &[u8])]) -> Result<()> {
    // Each file its own temporary, one a checkpoint directory tolerates.
    let temporary = |path: &Path| {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(TEMPORARY_SUFFIX);
        path.with_file_name(name)
    };
    let write = |tmp: &Path, bytes: &[u8]| -> Result<()> {
        let mut f = fs::File::create(tmp).map_err(|e| Error::io(tmp, e))?;
        f.write_all(bytes).map_err(|e| Error::io(tmp, e))?;
        f.sync_all().map_err(|e| Error::io(tmp, e))
    };
    for (k, (path, bytes)) in files.iter().enumerate() {
        if let Err(e) = write(&temporary(path), bytes) {
            for (path, _) in &files[..=k] {
                let _ = fs::remove_file(temporary(path));
            }
            return Err(e);
        }
    }
    for (path, _) in files {
        fs::rename(temporary(path), path).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

/// Check, before a run, that `dir` can take its results: it exists or can be created, and a file
/// can be written there (`best.json.tmp`, removed again; a checkpoint directory tolerates it). A
/// run that found out at its end would lose its table of trials.
pub fn check_output_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::io(dir, std::io::Error::other("a file, not a directory")));
    }
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let probe = dir.join(format!("{}{TEMPORARY_SUFFIX}", OutputFile::Best.name()));
    fs::File::create(&probe).and_then(|mut f| f.write_all(b"probe\n")).map_err(|e| Error::io(&probe, e))?;
    fs::remove_file(&probe).map_err(|e| Error::io(&probe, e))
}

/// Write `best.json`, `trials.csv`, `trials.jsonl` and `report.html` into `dir` (created if
/// missing), and with two or more objectives `front.csv`.
/// `extra` adds run facts (function name, ranks, the settings of
/// [`run_settings`](crate::report_html::run_settings), ...) to `best.json`; the report lists them.
pub fn write_outputs(dir: &Path, space: &SearchSpace, result: &RunResult, extra: Map<String, Json>) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let objectives = &result.objectives;
    let to_json = |i: &Individual| individual_json(space, objectives, i);
    let mut best = match result.best.first() {
        Some(b) => to_json(b),
        None => json!({"loss": null, "params": {}}),
    };
    let report = crate::report_html::report_html(space, result, &extra);
    let obj = best.as_object_mut().expect("object");
    obj.insert("evaluations".into(), json!(result.evaluations));
    obj.insert("failed".into(), json!(result.failed));
    obj.insert("pruned".into(), json!(result.pruned));
    obj.insert("wall_s".into(), json!(result.wall_s));
    obj.insert("evals_per_s".into(), json!(result.evals_per_s()));
    obj.insert("resumed".into(), json!(result.resumed));
    obj.insert("consistent".into(), json!(result.consistent));
    obj.insert("emigrated".into(), json!(result.emigrated));
    obj.insert("active_per_island".into(), json!(result.active_per_island));
    if let Some(states) = result.training_states {
        obj.insert("training_states".into(), json!(states));
    }
    // Population-based training: the best member's hyperparameters along the states it grew from.
    if let Some(b) = result.best.first() {
        let chain = propulate_core::schedule::lineage_chain(&result.trials, b);
        if !chain.is_empty() {
            obj.insert("schedule".into(), chain.iter().map(|t| to_json(t)).collect());
        }
    }
    obj.insert("top".into(), result.best.iter().map(to_json).collect());
    let islands: Vec<Json> = result.islands.iter().map(|top| top.iter().map(to_json).collect()).collect();
    obj.insert("islands".into(), islands.into());
    if result.objectives.len() >= 2 {
        obj.insert("objectives".into(), json!(result.objectives));
        obj.insert("front".into(), result.front.iter().map(to_json).collect());
        let fronts: Vec<Json> = result.island_fronts.iter().map(|front| front.iter().map(to_json).collect()).collect();
        obj.insert("island_fronts".into(), fronts.into());
    }
    // The run's own results win: `islands` is each island's best here, the island count in `extra`.
    for (key, value) in extra {
        obj.entry(key).or_insert(value);
    }
    let text = serde_json::to_string_pretty(&best).expect("json") + "\n";

    let mut trials = result.trials.clone();
    trials.sort_by_key(|i| (i.id.worker, i.id.generation));
    let csv = trials_csv(space, objectives, &trials);
    let mut jsonl = String::new();
    for t in &trials {
        let mut j = to_json(t);
        let o = j.as_object_mut().expect("object");
        o.insert("start".into(), json!(t.start_time().to_rfc3339()));
        o.insert("duration_s".into(), json!(t.duration_s));
        jsonl.push_str(&j.to_string());
        jsonl.push('\n');
    }
    let mut files = vec![
        (dir.join(OutputFile::Best.name()), text.as_bytes()),
        (dir.join(OutputFile::TrialsCsv.name()), csv.as_bytes()),
        (dir.join(OutputFile::TrialsJsonl.name()), jsonl.as_bytes()),
        (dir.join(OutputFile::Report.name()), report.as_bytes()),
    ];
    let front = (result.objectives.len() >= 2).then(|| front_csv(space, objectives, &result.front));
    if let Some(front) = &front {
        files.push((dir.join(OutputFile::Front.name()), front.as_bytes()));
    }
    write_all_atomically(&files)
}

/// Write a page made by [`report_html`](crate::report_html::report_html) as `dir/report.html`,
/// atomically: a browser or a watcher never sees half a report.
pub fn write_report(dir: &Path, page: &str) -> Result<()> {
    write_atomically(&dir.join(OutputFile::Report.name()), page.as_bytes())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// `island,worker,generation`, one column per parameter and one per objective: the header of
/// `front.csv`, and the start of `trials.csv`'s with `loss` between them.
fn identity_and_params_header(space: &SearchSpace, objectives: &[Objective]) -> String {
    let mut out = String::from("island,worker,generation");
    let objectives: Vec<String> = objectives.iter().map(|o| o.name.clone()).collect();
    for name in param_columns(space, &objectives) {
        out.push(',');
        out.push_str(&csv_field(&name));
    }
    out
}

/// The columns the trial tables name themselves (`constraint_<k>` and the objectives too).
pub const OWN_COLUMNS: [&str; 14] = [
    "island",
    "worker",
    "generation",
    "loss",
    "feasible",
    "failure",
    "start",
    "duration_s",
    "pruned",
    "last_step",
    "parent",
    "step",
    "steps",
    "exploited",
];

/// An objective's column in trials.csv: its name, or `objective_<name>` for one named as a column
/// of the table's own (`--objectives loss:min,params:min`: the loss column is there already).
pub(crate) fn objective_column(name: &str) -> String {
    if OWN_COLUMNS.contains(&name) { format!("objective_{name}") } else { name.to_string() }
}

/// Whether the trial tables have a column `name` of their own, with these objectives.
pub(crate) fn is_own_column(name: &str, objectives: &[String]) -> bool {
    OWN_COLUMNS.contains(&name)
        || objectives.iter().any(|o| o == name)
        || name.strip_prefix("constraint_").is_some_and(|k| k.parse::<usize>().is_ok())
}

/// Each parameter's column, with objectives of these names: its name, or `param_<name>` where the
/// tables have a column of that name (a parameter called `loss` or `steps`): two columns of one
/// name read as one in pandas.
pub(crate) fn param_columns(space: &SearchSpace, objectives: &[String]) -> Vec<String> {
    let names: Vec<&str> = space.params().iter().map(|p| p.name.as_str()).collect();
    let own = |n: &str| is_own_column(n, objectives);
    names
        .iter()
        .map(|name| {
            let mut column = name.to_string();
            while own(&column) || (column != *name && names.contains(&column.as_str())) {
                column = format!("param_{column}");
            }
            column
        })
        .collect()
}

/// `t`'s identity and parameter values as the start of a CSV row; an inactive conditional
/// parameter's cell is empty.
fn identity_and_params_row(space: &SearchSpace, t: &Individual) -> String {
    let mut out = format!("{},{},{}", t.id.island, t.id.worker, t.id.generation);
    let active = space.active(&t.values);
    for (i, v) in t.values.iter().enumerate() {
        out.push(',');
        if active[i] {
            out.push_str(&csv_field(&space.render(i, *v)));
        }
    }
    out
}

/// `front.csv`: one row per individual of `front` (a run's non-dominated evaluations): identity
/// (birth island, worker, generation), parameters, and one column per objective, named as
/// declared, holding the value as reported (a maximized objective not negated).
pub fn front_csv(space: &SearchSpace, objectives: &[Objective], front: &[Individual]) -> String {
    let mut out = identity_and_params_header(space, objectives);
    for o in objectives {
        out.push(',');
        out.push_str(&csv_field(&o.name));
    }
    out.push('\n');
    for t in front {
        out.push_str(&identity_and_params_row(space, t));
        for v in &t.objectives {
            let _ = write!(out, ",{v}");
        }
        out.push('\n');
    }
    out
}

/// One row per evaluation: identity, one column per parameter (`param_<name>` where the table has
/// a column of its name), loss, then (when the run declares
/// objectives) one column per objective, named as declared (`objective_<name>` for one named as a
/// column of the table's own), then (when any evaluation reported
/// constraints) `feasible` and `constraint_1`, `constraint_2`, ... (empty where one reported
/// none), then failure, start, duration, then
/// one column per metric that any evaluation recorded and that is not an objective (empty where
/// one did not; named `metric_<name>` where another column has its name), then, when any evaluation reported intermediate values, `pruned` (`true` when an
/// early stopper ended it) and `last_step` (the step of its last report: where it stopped, if
/// pruned), then, with population-based training, `parent` (the evaluation whose training state it
/// continued, `island/worker/generation`; empty for a fresh member), `step` (the steps done in
/// that state), `steps` (the steps it trained) and `exploited`.
pub fn trials_csv(space: &SearchSpace, objectives: &[Objective], trials: &[Individual]) -> String {
    let is_objective = |m: &str| objectives.iter().any(|o| o.name == m);
    let metrics: std::collections::BTreeSet<&str> =
        trials.iter().flat_map(|t| t.metrics.keys().map(String::as_str)).filter(|m| !is_objective(m)).collect();
    let curves = trials.iter().any(|t| t.curve.is_some());
    let mut out = identity_and_params_header(space, objectives);
    out.push_str(",loss");
    for o in objectives {
        out.push(',');
        out.push_str(&csv_field(&objective_column(&o.name)));
    }
    let constraints = trials.iter().map(|t| t.constraints.len()).max().unwrap_or(0);
    if constraints > 0 {
        out.push_str(",feasible");
        for k in 1..=constraints {
            let _ = write!(out, ",constraint_{k}");
        }
    }
    out.push_str(",failure,start,duration_s");
    let lineages = trials.iter().any(|t| t.lineage.is_some());
    // A metric named as another column (a result file that echoes the parameters, say) gets a
    // `metric_` prefix: a table with two columns of one name reads as one in pandas.
    let mut taken: std::collections::HashSet<String> = out.split(',').map(str::to_string).collect();
    if curves {
        taken.extend(["pruned", "last_step"].map(String::from));
    }
    if lineages {
        taken.extend(["parent", "step", "steps", "exploited"].map(String::from));
    }
    for m in &metrics {
        let mut header = m.to_string();
        while taken.contains(&header) {
            header = format!("metric_{header}");
        }
        out.push(',');
        out.push_str(&csv_field(&header));
        taken.insert(header);
    }
    if curves {
        out.push_str(",pruned,last_step");
    }
    if lineages {
        out.push_str(",parent,step,steps,exploited");
    }
    out.push('\n');
    for t in trials {
        out.push_str(&identity_and_params_row(space, t));
        let loss = if t.loss.is_finite() { format!("{}", t.loss) } else { "inf".into() };
        let _ = write!(out, ",{loss}");
        for k in 0..objectives.len() {
            out.push(',');
            if let Some(v) = t.objectives.get(k) {
                let _ = write!(out, "{v}");
            }
        }
        if constraints > 0 {
            // A failed evaluation has no feasibility.
            let feasible = if t.failure.is_some() { String::new() } else { t.is_feasible().to_string() };
            let _ = write!(out, ",{feasible}");
            for k in 0..constraints {
                out.push(',');
                if let Some(c) = t.constraints.get(k) {
                    let _ = write!(out, "{c}");
                }
            }
        }
        let _ = write!(
            out,
            ",{},{},{}",
            csv_field(t.failure.as_deref().unwrap_or("")),
            t.start_time().to_rfc3339(),
            t.duration_s
        );
        for m in &metrics {
            out.push(',');
            if let Some(v) = t.metrics.get(*m) {
                let _ = write!(out, "{v}");
            }
        }
        if curves {
            let last = t.curve.as_ref().and_then(|c| c.last_step()).map(|s| s.to_string()).unwrap_or_default();
            let _ = write!(out, ",{},{last}", t.pruned());
        }
        if lineages {
            match &t.lineage {
                Some(l) => {
                    let parent = l.parent.map(|p| p.to_string()).unwrap_or_default();
                    let _ = write!(out, ",{parent},{},{},{}", l.step, l.steps, l.exploited);
                }
                None => out.push_str(",,,,"),
            }
        }
        out.push('\n');
    }
    out
}

/// The end-of-run table: the top individuals of each island, then totals.
pub fn summary_table(space: &SearchSpace, result: &RunResult) -> String {
    let mut s = String::new();
    if result.objectives.len() >= 2 {
        // An island's "best" would be an end of its front: its front's size says more.
        for (isl, front) in result.island_fronts.iter().enumerate() {
            let _ = writeln!(s, "island {isl}: {} on its Pareto front", front.len());
        }
    } else {
        write_island_tops(&mut s, space, result);
    }
    totals_and_best(&mut s, result);
    s
}

/// Each island's best residents at the end, a row each. An individual lives on the island it last
/// migrated to, so an island's rows need not hold the best it bred: the title says so, and each
/// row where its individual was born, so that nobody reads a better emigrant's absence as a wrong
/// result.
fn write_island_tops(s: &mut String, space: &SearchSpace, result: &RunResult) {
    let _ = writeln!(s, "{ISLAND_TOPS_TITLE}");
    let _ = writeln!(s, "{:<7} {:<5} {:<14} {:<18} params", "island", "rank", "loss", "born (isl/wkr/gen)");
    for (isl, top) in result.islands.iter().enumerate() {
        for (k, ind) in top.iter().enumerate() {
            let params: Vec<String> = space
                .active_values(&ind.values)
                .map(|(i, p, v)| format!("{}={}", p.name, space.render_short(i, v)))
                .collect();
            let _ = writeln!(
                s,
                "{:<7} {:<5} {:<14.6e} {:<18} {}",
                isl,
                k + 1,
                ind.loss,
                if ind.id.is_imported() { "imported".to_string() } else { ind.id.to_string() },
                params.join(" ")
            );
        }
    }
}

/// The title of the table of each island's best residents.
pub const ISLAND_TOPS_TITLE: &str =
    "each island's best residents at the end (migrants count where they live; born: where each was bred)";

/// The totals line, then the best loss or the run's front.
fn totals_and_best(s: &mut String, result: &RunResult) {
    let mut resumed = String::new();
    let pruned = result.pruned;
    if pruned > 0 {
        let _ = write!(resumed, ", {pruned} pruned");
    }
    if result.resumed > 0 {
        let _ = write!(resumed, ", {} from the checkpoint", result.resumed);
    }
    // Slow losses (trainings) are counted per hour, cheap ones per second.
    let rate = match result.evals_per_s() {
        r if r >= 1.0 => format!("{r:.0} evaluations/s"),
        r => format!("{:.0} evaluations/h", r * 3600.0),
    };
    let _ = writeln!(
        s,
        "evaluations: {} ({} failed{resumed}) in {:.2} s = {rate}; islands consistent: {}",
        result.evaluations,
        result.failed,
        result.wall_s,
        if result.consistent { "yes" } else { "NO" }
    );
    if let Some(states) = result.training_states {
        let _ = writeln!(
            s,
            "training states kept: {} ({:.1} MB) under the checkpoint's {}/",
            states.count,
            states.bytes as f64 / 1e6,
            crate::files::states::STATES_DIR
        );
    }
    if result.objectives.len() >= 2 {
        write_front_summary(s, result);
    } else if let Some(b) = result.best.first() {
        if let Some(reason) = b.failure.as_ref().filter(|_| result.all_failed()) {
            let _ = writeln!(s, "no evaluation succeeded: every one failed, as this one did: {reason}");
            return;
        }
        let born = if b.id.is_imported() {
            "imported by --warm-start from an earlier run".to_string()
        } else {
            format!("born on island {}, worker {}, generation {}", b.id.island, b.id.worker, b.id.generation)
        };
        // With constraints, the best is infeasible only when no evaluation met them.
        let infeasible = if b.is_feasible() { "" } else { "; infeasible: no evaluation met the constraints yet" };
        // A pruned one is the best only when no evaluation ran to its end.
        let pruned = if b.pruned() { "; pruned: no evaluation ran to its end" } else { "" };
        let value = result.best_value().unwrap_or_default();
        let _ = writeln!(s, "best {value} ({born}){infeasible}{pruned}");
    }
}

/// The most front members the end-of-run table lists (front.csv has them all).
const FRONT_SHOWN: usize = 12;

/// The run's front in the end-of-run table: its size, then its members (evenly spread over it
/// when it is long), one column per objective.
fn write_front_summary(s: &mut String, result: &RunResult) {
    let front = &result.front;
    let names: Vec<String> =
        result.objectives.iter().map(|o| format!("{}({})", o.name, o.direction.as_str())).collect();
    let _ = writeln!(s, "Pareto front: {} trials ({}); {}", front.len(), OutputFile::Front.name(), names.join(", "));
    // An empty front says why: every evaluation failed, or none met the constraints.
    if front.is_empty()
        && let Some(b) = result.best.first()
    {
        match &b.failure {
            Some(reason) if result.all_failed() => {
                let _ = writeln!(s, "no evaluation succeeded: every one failed, as this one did: {reason}");
            }
            _ if !b.is_feasible() => {
                let _ = writeln!(s, "infeasible: no evaluation met the constraints yet (front.csv is empty)");
            }
            _ => {}
        }
    }
    let shown: Vec<&Individual> = if front.len() <= FRONT_SHOWN {
        front.iter().collect()
    } else {
        (0..FRONT_SHOWN).map(|k| &front[k * (front.len() - 1) / (FRONT_SHOWN - 1)]).collect()
    };
    for ind in shown {
        let values: Vec<String> = ind.objectives.iter().map(|v| format!("{v:<12.6}")).collect();
        let _ = writeln!(s, "  {}  {:<16}", values.join(" "), ind.id.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use propulate_core::space::Value;

    #[test]
    fn csv_quotes_and_names_columns() {
        let space =
            SearchSpace::builder().float("lr", 0.0, 1.0).categorical("act", &["re,lu", "tanh"]).build().unwrap();
        let mut i = Individual::new(vec![Value::Float(0.5), Value::Cat(0)]);
        i.failure = Some("the loss returned an error: \"boom\"".into());
        let csv = trials_csv(&space, &[], &[i]);
        let mut lines = csv.lines();
        assert_eq!(lines.next().unwrap(), "island,worker,generation,lr,act,loss,failure,start,duration_s");
        let row = lines.next().unwrap();
        assert!(row.starts_with("0,0,0,0.5,\"re,lu\",inf,\"the loss returned an error: \"\"boom\"\"\","), "{row}");
    }

    #[test]
    fn curves_add_pruned_and_last_step_columns_and_json_fields() {
        use propulate_core::early_stop::Curve;
        let space = SearchSpace::builder().float("lr", 0.0, 1.0).build().unwrap();
        let mut pruned = Individual::new(vec![Value::Float(0.5)]);
        pruned.curve = Some(Curve { points: vec![(0, 2.3), (1, 2.2)], pruned: true });
        let mut finished = Individual::new(vec![Value::Float(0.25)]);
        finished.curve = Some(Curve { points: vec![(0, 1.0), (5, 0.5)], pruned: false });
        let silent = Individual::new(vec![Value::Float(0.75)]);
        let csv = trials_csv(&space, &[], &[pruned.clone(), finished, silent.clone()]);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].ends_with(",duration_s,pruned,last_step"), "{}", lines[0]);
        assert!(lines[1].ends_with(",true,1") && lines[2].ends_with(",false,5"), "{csv}");
        assert!(lines[3].ends_with(",false,"), "{}", lines[3]);
        assert_eq!(individual_json(&space, &[], &pruned)["curve"], json!([[0, 2.3], [1, 2.2]]));
        assert_eq!(individual_json(&space, &[], &pruned)["pruned"], json!(true));
        assert!(individual_json(&space, &[], &silent).get("curve").is_none());
        assert!(!trials_csv(&space, &[], &[silent]).contains("pruned"), "no columns when nothing reported");
    }

    #[test]
    fn lineages_add_parent_and_step_columns_and_a_json_object() {
        use propulate_core::individual::IndividualId;
        use propulate_core::lineage::Lineage;
        let space = SearchSpace::builder().float("lr", 0.0, 1.0).build().unwrap();
        let mut fresh = Individual::new(vec![Value::Float(0.5)]);
        fresh.lineage = Some(Box::new(Lineage::fresh(2)));
        let mut exploit = Individual::new(vec![Value::Float(0.25)]);
        let parent = IndividualId { island: 1, worker: 3, generation: 4 };
        exploit.lineage = Some(Box::new(Lineage { parent: Some(parent), step: 10, steps: 2, exploited: true }));
        let csv = trials_csv(&space, &[], &[fresh.clone(), exploit.clone()]);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].ends_with(",duration_s,parent,step,steps,exploited"), "{}", lines[0]);
        assert!(lines[1].ends_with(",,0,2,false") && lines[2].ends_with(",1/3/4,10,2,true"), "{csv}");
        let j = individual_json(&space, &[], &exploit);
        assert_eq!(j["lineage"], json!({"parent": "1/3/4", "step": 10, "steps": 2, "exploited": true}));
        assert_eq!(individual_json(&space, &[], &fresh)["lineage"]["parent"], Json::Null);
        assert!(!trials_csv(&space, &[], &[Individual::new(vec![Value::Float(0.1)])]).contains("parent"));
    }

    #[test]
    fn metrics_get_a_column_each_and_stay_empty_where_missing() {
        let space = SearchSpace::builder().float("lr", 0.0, 1.0).build().unwrap();
        let mut a = Individual::new(vec![Value::Float(0.5)]);
        a.metrics.insert("accuracy".into(), 0.875);
        a.metrics.insert("epochs".into(), 7.0);
        let b = Individual::new(vec![Value::Float(0.25)]);
        let csv = trials_csv(&space, &[], &[a.clone(), b]);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].ends_with(",loss,failure,start,duration_s,accuracy,epochs"), "{}", lines[0]);
        assert!(lines[1].ends_with(",0.875,7"), "{}", lines[1]);
        assert!(lines[2].ends_with(",,"), "{}", lines[2]);
        assert_eq!(individual_json(&space, &[], &a)["metrics"]["accuracy"], json!(0.875));
        // A result file that echoes a parameter and a column of the table: every header once.
        let mut echo = Individual::new(vec![Value::Float(0.5)]);
        echo.metrics.insert("lr".into(), 7.0);
        echo.metrics.insert("duration_s".into(), 99.0);
        let csv = trials_csv(&space, &[], &[echo]);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        assert!(header.ends_with(&["duration_s", "metric_duration_s", "metric_lr"]), "{header:?}");
        assert_eq!(header.len(), header.iter().collect::<std::collections::HashSet<_>>().len(), "{header:?}");
    }

    #[test]
    fn a_parameter_named_as_a_column_of_the_tables_gets_a_prefix() {
        let space = SearchSpace::builder()
            .float("loss", 0.0, 1.0)
            .int("steps", 1, 9)
            .float("param_loss", 0.0, 1.0) // its own name: "loss" moves past it
            .float("acc", 0.0, 1.0)
            .float("constraint_2", 0.0, 1.0)
            .float("lr", 0.0, 1.0)
            .build()
            .unwrap();
        let header = trials_csv(&space, &[Objective::max("acc")], &[]);
        assert_eq!(
            header.trim_end(),
            "island,worker,generation,param_param_loss,param_steps,param_loss,param_acc,param_constraint_2,lr,\
             loss,acc,failure,start,duration_s"
        );
        assert!(front_csv(&space, &[], &[]).starts_with("island,worker,generation,param_param_loss,param_steps,"));
    }

    #[test]
    fn objectives_get_named_columns_and_a_front_file() {
        let space = SearchSpace::builder().float("lr", 0.0, 1.0).build().unwrap();
        let objectives = vec![Objective::min("val_loss"), Objective::max("accuracy")];
        let mut a = Individual::new(vec![Value::Float(0.5)]);
        a.objectives = vec![0.25, 0.875];
        a.loss = 0.25;
        a.metrics.insert("accuracy".into(), 0.875); // also a metric: one column, not two
        a.metrics.insert("epochs".into(), 3.0);
        let mut failed = Individual::new(vec![Value::Float(0.25)]);
        failed.failure = Some("boom".into());
        let csv = trials_csv(&space, &objectives, &[a.clone(), failed]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "island,worker,generation,lr,loss,val_loss,accuracy,failure,start,duration_s,epochs");
        assert!(lines[1].starts_with("0,0,0,0.5,0.25,0.25,0.875,,"), "{}", lines[1]);
        assert!(lines[2].starts_with("0,0,0,0.25,inf,,,boom,"), "{}", lines[2]);
        let front = front_csv(&space, &objectives, &[a.clone()]);
        assert_eq!(front, "island,worker,generation,lr,val_loss,accuracy\n0,0,0,0.5,0.25,0.875\n");
        assert_eq!(
            individual_json(&space, &objectives, &a)["objectives"],
            json!({"val_loss": 0.25, "accuracy": 0.875})
        );
    }

    #[test]
    fn the_end_table_says_islands_show_residents_and_where_each_was_born() {
        use propulate_core::individual::IndividualId;
        let space = SearchSpace::builder().float("lr", 0.0, 1.0).build().unwrap();
        let individual = |loss: f64, island: u32, worker: u32, generation: u64| {
            let mut i = Individual::new(vec![Value::Float(0.5)]);
            i.loss = loss;
            i.id = IndividualId { island, worker, generation };
            i
        };
        // Island 0 bred the run's best, which then emigrated to island 1.
        let emigrant = individual(0.83, 0, 1, 5);
        let result = RunResult {
            best: vec![emigrant.clone()],
            islands: vec![vec![individual(2.11, 0, 0, 2)], vec![emigrant]],
            consistent: true,
            ..RunResult::default()
        };
        let table = summary_table(&space, &result);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], ISLAND_TOPS_TITLE);
        assert_eq!(lines[1], "island  rank  loss           born (isl/wkr/gen) params");
        assert_eq!(lines[2], "0       1     2.110000e0     0/0/2              lr=0.5000");
        assert_eq!(lines[3], "1       1     8.300000e-1    0/1/5              lr=0.5000");
        assert!(table.contains("best loss 8.300000e-1 (born on island 0, worker 1, generation 5)"), "{table}");
    }

    /// A file that cannot be written (a full disk; here a directory in its temporary's place)
    /// leaves the earlier set whole and no temporary behind.
    #[test]
    fn outputs_are_replaced_all_together_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let space = SearchSpace::builder().float("lr", 0.0, 1.0).build().unwrap();
        let result = |evaluations| RunResult { evaluations, consistent: true, ..RunResult::default() };
        write_outputs(dir.path(), &space, &result(7), Map::new()).unwrap();
        let before = std::fs::read_to_string(dir.path().join("best.json")).unwrap();
        std::fs::create_dir(dir.path().join("trials.jsonl.tmp")).unwrap();
        assert!(write_outputs(dir.path(), &space, &result(9), Map::new()).is_err());
        assert_eq!(std::fs::read_to_string(dir.path().join("best.json")).unwrap(), before);
        assert!(!dir.path().join("best.json.tmp").exists() && !dir.path().join("trials.csv.tmp").exists());
    }

    #[test]
    fn the_last_lines_say_why_the_best_is_pruned_or_the_front_empty() {
        let space = SearchSpace::builder().float("lr", 0.0, 1.0).build().unwrap();
        let mut pruned = Individual::new(vec![Value::Float(0.5)]);
        pruned.loss = 0.25;
        pruned.curve = Some(propulate_core::curve::Curve { points: vec![(2, 0.25)], pruned: true });
        let result = RunResult { best: vec![pruned], islands: vec![vec![]], consistent: true, ..RunResult::default() };
        let table = summary_table(&space, &result);
        assert!(table.contains("; pruned: no evaluation ran to its end"), "{table}");

        let mut infeasible = Individual::new(vec![Value::Float(0.5)]);
        (infeasible.loss, infeasible.objectives, infeasible.constraints) = (0.5, vec![0.5, 0.5], vec![1.0]);
        let objectives = Objective::parse_list("a,b").unwrap();
        let result = RunResult {
            best: vec![infeasible],
            objectives,
            islands: vec![vec![]],
            consistent: true,
            ..RunResult::default()
        };
        let table = summary_table(&space, &result);
        assert!(table.contains("Pareto front: 0 trials"), "{table}");
        assert!(table.contains("infeasible: no evaluation met the constraints yet"), "{table}");
    }
}
