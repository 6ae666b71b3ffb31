//! One line on stdout per finished evaluation, for tasks whose evaluations take seconds or more:
//! worker, parameters, loss, the objectives (when the run has several), the metrics the loss
//! recorded, seconds; with population-based training, where its member's training stood and came
//! from (`steps 2-3, continued 0/3/1` or `exploited 0/1/4`, `fresh`).

use std::io::Write;

use propulate::observe::{Event, Observer, RankInfo};
use propulate::{Objective, SearchSpace};

pub(crate) struct EvaluationLines {
    space: SearchSpace,
    /// What the task's loss is ("validation loss" for the CNN).
    loss_name: &'static str,
    /// The run's objectives (none: one loss).
    objectives: Vec<Objective>,
}

impl EvaluationLines {
    pub fn new(space: SearchSpace, loss_name: &'static str, objectives: Vec<Objective>) -> Self {
        EvaluationLines { space, loss_name, objectives }
    }
}

/// `name value`, whole numbers without decimals.
fn named(name: &str, v: f64) -> String {
    if v.fract() == 0.0 { format!("{name} {v}") } else { format!("{name} {v:.4}") }
}

impl Observer for EvaluationLines {
    fn observe(&mut self, rank: &RankInfo, event: &Event<'_>) -> Result<(), String> {
        let Event::Evaluated { individual: ind, .. } = event else { return Ok(()) };
        let params: Vec<String> = self
            .space
            .active_values(&ind.values)
            .map(|(i, p, v)| format!("{}={}", p.name, self.space.render_short(i, v)))
            .collect();
        let outcome = match &ind.failure {
            Some(reason) => format!("failed: {reason}"),
            None => {
                // With declared objectives the loss is only their first, minimized: they say more.
                let mut parts: Vec<String> = if self.objectives.is_empty() {
                    vec![format!("{} {:.4}", self.loss_name, ind.loss)]
                } else {
                    self.objectives.iter().zip(&ind.objectives).map(|(o, v)| named(&o.name, *v)).collect()
                };
                parts.extend(ind.metrics.iter().map(|(k, v)| named(k, *v)));
                let mut s = parts.join(", ");
                if let Some(step) = ind.curve.as_ref().filter(|c| c.pruned).and_then(|c| c.last_step()) {
                    s += &format!(", pruned after step {step}");
                }
                s
            }
        };
        let lineage = match &ind.lineage {
            None => String::new(),
            Some(l) => {
                let from = match (l.parent, l.exploited) {
                    (None, _) => "fresh".to_string(),
                    (Some(p), true) => format!("exploited {p}"),
                    (Some(p), false) => format!("continued {p}"),
                };
                format!(" [steps {}-{}, {from}]", l.step, l.step_after())
            }
        };
        let line = format!(
            "worker {} (island {}) generation {}{lineage}: {}: {outcome}, {:.1} s\n",
            rank.worker,
            rank.island,
            ind.id.generation,
            params.join(" "),
            ind.duration_s
        );
        // One write per line, so that the lines of several processes do not interleave mid-line.
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
        Ok(())
    }
}
