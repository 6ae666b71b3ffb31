//! Several objectives in the CLI: which ones a run declares (a task's own, as the ZDT and DTLZ
//! functions have, or `--objectives`), and the loss that reports them. Every task's loss returns
//! one value and records metrics; an objective is the loss itself (`loss`) or a metric of that
//! name, so one wrapper serves functions, command trials and the CNN alike.

use std::sync::Arc;

use propulate::{Error, Objective, ObjectivesResult, Params, Result, WorkerContext};

use super::args::RunArgs;
use super::task::{Loss, Task};

/// The objectives of the run `args` asks for with `task`: the task's own, or `--objectives`
/// (refused with a task that declares its own); none for one loss.
pub(crate) fn declared(args: &RunArgs, task: &dyn Task) -> Result<Vec<Objective>> {
    let own = task.objectives();
    match (&args.objectives, own.is_empty()) {
        (None, _) => Ok(own),
        (Some(text), true) => Ok(Objective::parse_list(text)?),
        (Some(_), false) => {
            let names: Vec<&str> = own.iter().map(|o| o.name.as_str()).collect();
            Err(Error::InvalidConfig(format!(
                "--objectives: {} declares its own objectives ({}); leave the flag out",
                task.name(),
                names.join(", ")
            )))
        }
    }
}

/// The values a run with `objectives` records, from `loss`: its one value without objectives;
/// with them, for each the loss (`loss`) or the metric of its name, taken out of the metrics. A
/// worker's other ranks return placeholders: the root's values are the ones recorded.
pub fn objective_values(
    loss: Loss,
    objectives: Vec<Objective>,
) -> impl Fn(Params<'_>, &mut WorkerContext<'_>) -> ObjectivesResult + Send + Sync + Clone + 'static {
    let objectives: Arc<[Objective]> = objectives.into();
    move |p, ctx| {
        let value = loss(p, ctx)?;
        if objectives.is_empty() {
            return Ok(vec![value]);
        }
        if ctx.worker_rank != 0 {
            return Ok(vec![0.0; objectives.len()]);
        }
        objectives
            .iter()
            .map(|o| match o.name.as_str() {
                "loss" => Ok(value),
                name => ctx.take_metric(name).ok_or_else(|| {
                    format!("the evaluation reported no finite '{name}' (an objective of this run)").into()
                }),
            })
            .collect()
    }
}
