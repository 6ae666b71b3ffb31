//! A run's result as JSON for the Python side: every individual as the result files write it
//! (`output::individual_json`), with its timing, so that `trials.jsonl` and `result.trials` agree.

use serde_json::{Value as Json, json};

use propulate::output::individual_json;
use propulate::{Individual, RunResult, SearchSpace};

/// One individual as a record: params, loss, island, worker, generation, failure, and what the
/// run had of objectives, metrics, curve and lineage; its start (microseconds since the epoch)
/// and duration in seconds.
pub fn record(space: &SearchSpace, result: &RunResult, ind: &Individual) -> Json {
    let mut j = individual_json(space, &result.objectives, ind);
    if let Some(o) = j.as_object_mut() {
        o.insert("start_us".into(), json!(ind.start_us));
        o.insert("duration_s".into(), json!(ind.duration_s));
    }
    j
}

/// The result: the best individuals, each island's, every trial (world rank 0's result holds
/// them; the Python side hands them to every rank), the front with several objectives, the totals
/// and the propagator the run bred with.
pub fn result_json(space: &SearchSpace, result: &RunResult) -> Json {
    let list = |inds: &[Individual]| inds.iter().map(|i| record(space, result, i)).collect::<Vec<_>>();
    json!({
        "best": list(&result.best),
        "islands": result.islands.iter().map(|island| list(island)).collect::<Vec<_>>(),
        "trials": list(&result.trials),
        "front": list(&result.front),
        "objectives": result.objectives.iter().map(|o| json!({"name": o.name, "direction": o.direction.as_str()})).collect::<Vec<_>>(),
        "evaluations": result.evaluations,
        "failed": result.failed,
        "pruned": result.pruned,
        "resumed": result.resumed,
        "emigrated": result.emigrated,
        "wall_s": result.wall_s,
        "consistent": result.consistent,
        "propagator": result.propagator.as_ref().map(|spec| {
            let mut settings = spec.settings();
            settings.insert("name".into(), spec.name().into());
            settings
        }),
    })
}
