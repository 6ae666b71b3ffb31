//! What `report.html` shows, as the JSON its script draws from: the search space, the trials (all
//! of them up to [`MAX_SHOWN`], else the best and an even sample of the rest), each island's and
//! the whole run's best-so-far over all trials, totals and the run's settings; with several
//! objectives, their names and the run's Pareto front.

use serde_json::{Map, Value as Json, json};

use crate::result::RunResult;
use propulate_core::individual::Individual;
use propulate_core::space::SearchSpace;

/// Trials embedded at most: a browser draws this many points in every chart without stalling,
/// and a million-evaluation run's report stays a few megabytes.
pub const MAX_SHOWN: usize = 3000;

/// Of the trials shown when there are more than [`MAX_SHOWN`], this many are the best ones.
const BEST_SHOWN: usize = MAX_SHOWN / 3;

/// Seconds from the first evaluation's start to `t`'s end: the time axis of the report.
fn finished_at(t: &Individual, t0_us: i64) -> f64 {
    // Saturating: start times read back from a journal can be any 64-bit number.
    t.start_us.saturating_sub(t0_us) as f64 * 1e-6 + t.duration_s
}

/// The state the table and the charts give a trial.
fn state(t: &Individual) -> &'static str {
    if t.failure.is_some() {
        "failed"
    } else if t.pruned() {
        "pruned"
    } else {
        "complete"
    }
}

/// A best-so-far line: `(seconds, loss)` at each improvement, and at `end` the last best, so that
/// the line reaches the end of the run. `order` is sorted by time.
fn best_so_far<'a>(order: impl Iterator<Item = (f64, &'a Individual)>, end: f64) -> Vec<[f64; 2]> {
    let mut line: Vec<[f64; 2]> = Vec::new();
    let mut best = f64::INFINITY;
    for (t, ind) in order {
        if ind.loss.is_finite() && ind.is_feasible() && ind.loss < best {
            best = ind.loss;
            line.push([t, best]);
        }
    }
    if best.is_finite() {
        line.push([end, best]);
    }
    line
}

/// Which trials to embed: every one when they fit, else the [`BEST_SHOWN`] lowest losses and an
/// even sample, in time order, of the rest. Returns indices into `trials`, in time order.
fn shown(trials: &[Individual], by_time: &[usize]) -> Vec<usize> {
    if trials.len() <= MAX_SHOWN {
        return by_time.to_vec();
    }
    let mut by_loss: Vec<usize> = by_time.to_vec();
    by_loss.sort_by_key(|&a| trials[a].rank_key());
    let mut keep = vec![false; trials.len()];
    for &i in &by_loss[..BEST_SHOWN] {
        keep[i] = true;
    }
    let rest: Vec<usize> = by_time.iter().copied().filter(|&i| !keep[i]).collect();
    let room = MAX_SHOWN - BEST_SHOWN;
    for k in 0..room {
        keep[rest[k * rest.len() / room]] = true;
    }
    by_time.iter().copied().filter(|&i| keep[i]).collect()
}

/// One trial as the report's script reads it.
fn trial_json(space: &SearchSpace, t: &Individual, t0_us: i64) -> Json {
    let active = space.active(&t.values);
    let mut j = json!({
        "island": t.id.island,
        // An earlier run's evaluation (a warm start's) has no worker of this run.
        "worker": if t.id.is_imported() { Json::Null } else { json!(t.id.worker) },
        "generation": t.id.generation,
        "t": finished_at(t, t0_us),
        "duration_s": t.duration_s,
        "loss": if t.loss.is_finite() { json!(t.loss) } else { Json::Null },
        // An inactive conditional parameter: no value, shown as nothing.
        "values": t.values.iter().zip(&active).map(|(v, a)| a.then(|| v.as_f64())).collect::<Vec<_>>(),
        "shown": t.values.iter().enumerate().map(|(i, v)| if active[i] { space.render_short(i, *v) } else { String::new() }).collect::<Vec<_>>(),
        "state": state(t),
    });
    let o = j.as_object_mut().expect("object");
    if let Some(reason) = &t.failure {
        o.insert("reason".into(), json!(reason));
    }
    if let Some(curve) = &t.curve {
        o.insert("curve".into(), json!(curve.points));
    }
    if !t.metrics.is_empty() {
        o.insert("metrics".into(), json!(t.metrics));
    }
    if !t.objectives.is_empty() {
        o.insert("objectives".into(), json!(t.objectives));
    }
    if !t.constraints.is_empty() {
        o.insert("constraints".into(), json!(t.constraints));
        o.insert("feasible".into(), json!(t.is_feasible()));
    }
    if let Some(l) = &t.lineage {
        let parent = l.parent.map(|p| p.to_string());
        o.insert(
            "lineage".into(),
            json!({"parent": parent, "step": l.step, "steps": l.steps, "exploited": l.exploited}),
        );
    }
    j
}

/// The report's data for `result` (its trials in any order) and the run's `settings`.
pub fn report_data(space: &SearchSpace, result: &RunResult, settings: &Map<String, Json>) -> Json {
    let trials = &result.trials;
    let t0 = trials.iter().map(|t| t.start_us).min().unwrap_or(0);
    let mut by_time: Vec<usize> = (0..trials.len()).collect();
    by_time.sort_by(|&a, &b| finished_at(&trials[a], t0).total_cmp(&finished_at(&trials[b], t0)));
    let end = by_time.last().map_or(0.0, |&i| finished_at(&trials[i], t0));
    let timed = || by_time.iter().map(|&i| (finished_at(&trials[i], t0), &trials[i]));
    let islands = result.islands.len().max(trials.iter().map(|t| t.id.island as usize + 1).max().unwrap_or(0));
    let island_best: Vec<_> =
        (0..islands).map(|isl| best_so_far(timed().filter(|(_, t)| t.id.island as usize == isl), end)).collect();
    let shown = shown(trials, &by_time);
    let pruned = trials.iter().filter(|t| t.pruned()).count();
    json!({
        "params": space.params(),
        "islands": islands,
        "evaluations": result.evaluations,
        "failed": result.failed,
        "pruned": pruned,
        "best_loss": result.best.first().map(|b| b.loss).filter(|l| l.is_finite()),
        "total": trials.len(),
        "start": trials.iter().find(|t| t.start_us == t0).map(|t| t.start_time().to_rfc3339()),
        "generated": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "best_so_far": best_so_far(timed(), end),
        "island_best_so_far": island_best,
        "trials": shown.iter().map(|&i| trial_json(space, &trials[i], t0)).collect::<Vec<_>>(),
        "settings": settings,
        // Several objectives: their names and directions, and the run's front whole (the trials
        // above may be a sample).
        "objectives": result.objectives,
        "front": result.front.iter().map(|t| trial_json(space, t, t0)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use propulate_core::individual::IndividualId;
    use propulate_core::space::Value;

    fn trial(island: u32, generation: u64, start_s: f64, loss: f64) -> Individual {
        let mut t = Individual::new(vec![Value::Float(loss)]);
        t.id = IndividualId { island, worker: island, generation };
        t.loss = loss;
        t.start_us = (start_s * 1e6) as i64;
        t.duration_s = 1.0;
        t
    }

    #[test]
    fn best_so_far_steps_at_improvements_and_reaches_the_end() {
        let ts = [trial(0, 0, 0.0, 5.0), trial(0, 1, 1.0, 7.0), trial(0, 2, 2.0, 3.0), trial(0, 3, 9.0, f64::INFINITY)];
        let line = best_so_far(ts.iter().map(|t| (finished_at(t, 0), t)), 10.0);
        assert_eq!(line, vec![[1.0, 5.0], [3.0, 3.0], [10.0, 3.0]]);
        assert!(best_so_far(ts[3..].iter().map(|t| (0.0, t)), 10.0).is_empty(), "no finite loss: no line");
    }

    #[test]
    fn a_large_run_shows_its_best_and_an_even_sample() {
        let n = 3 * MAX_SHOWN;
        // Losses fall then rise, so the best are in the middle of the run.
        let trials: Vec<Individual> =
            (0..n).map(|g| trial(0, g as u64, g as f64, ((g as f64) - n as f64 / 2.0).abs())).collect();
        let by_time: Vec<usize> = (0..n).collect();
        let s = shown(&trials, &by_time);
        assert_eq!(s.len(), MAX_SHOWN);
        assert!(s.windows(2).all(|w| w[0] < w[1]), "in time order, no repeats");
        let mut losses: Vec<f64> = trials.iter().map(|t| t.loss).collect();
        losses.sort_by(f64::total_cmp);
        let cutoff = losses[BEST_SHOWN - 1];
        assert_eq!(
            s.iter().filter(|&&i| trials[i].loss <= cutoff).count(),
            BEST_SHOWN + 1,
            "best, and one sampled tie"
        );
        assert!(s.contains(&0) && s.iter().any(|&i| i > n - 10), "the sample spans the run");
        let few = shown(&trials[..10], &by_time[..10]);
        assert_eq!(few, by_time[..10].to_vec(), "a small run: every trial");
    }

    #[test]
    fn data_carries_states_reasons_curves_and_island_lines() {
        let space = SearchSpace::builder().float("x", 0.0, 10.0).build().unwrap();
        let mut failed = trial(1, 0, 0.5, f64::INFINITY);
        failed.failure = Some("exit status 1".into());
        let ok = trial(0, 0, 0.0, 2.0);
        let result = RunResult {
            best: vec![ok.clone()],
            islands: vec![vec![ok.clone()], vec![]],
            trials: vec![failed, ok],
            evaluations: 2,
            failed: 1,
            wall_s: 2.0,
            consistent: true,
            active_per_island: vec![1, 0],
            emigrated: 0,
            resumed: 0,
            ..RunResult::default()
        };
        let mut settings = Map::new();
        settings.insert("islands".into(), json!(2));
        let d = report_data(&space, &result, &settings);
        assert_eq!(d["trials"][0]["state"], "complete", "time order: the finished-first trial first");
        assert_eq!(d["trials"][1]["state"], "failed");
        assert_eq!(d["trials"][1]["reason"], "exit status 1");
        assert_eq!(d["trials"][1]["loss"], Json::Null);
        assert_eq!(d["island_best_so_far"][0], json!([[1.0, 2.0], [1.5, 2.0]]));
        assert_eq!(d["island_best_so_far"][1], json!([]));
        assert_eq!(d["best_loss"], json!(2.0));
        assert_eq!(d["settings"]["islands"], 2);
        assert_eq!(d["params"][0]["name"], "x");
    }
}
