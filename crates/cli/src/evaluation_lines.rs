//! One line on stdout per finished evaluation, for tasks whose evaluations take seconds or more:
//! worker, parameters, loss, the metrics the loss recorded, seconds.

use std::io::Write;

use propulate::SearchSpace;
use propulate::observe::{Event, Observer, RankInfo};

pub(crate) struct EvaluationLines {
    space: SearchSpace,
    /// What the task's loss is ("validation loss" for the CNN).
    loss_name: &'static str,
}

impl EvaluationLines {
    pub fn new(space: SearchSpace, loss_name: &'static str) -> Self {
        EvaluationLines { space, loss_name }
    }
}

impl Observer for EvaluationLines {
    fn observe(&mut self, rank: &RankInfo, event: &Event<'_>) -> Result<(), String> {
        let Event::Evaluated { individual: ind, .. } = event else { return Ok(()) };
        let params: Vec<String> = self
            .space
            .params()
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{}={}", p.name, self.space.render_short(i, ind.values[i])))
            .collect();
        let outcome = match &ind.failure {
            Some(reason) => format!("failed: {reason}"),
            None => {
                let metrics: Vec<String> = ind
                    .metrics
                    .iter()
                    .map(|(k, v)| if v.fract() == 0.0 { format!("{k} {v}") } else { format!("{k} {v:.4}") })
                    .collect();
                let mut s = format!("{} {:.4}", self.loss_name, ind.loss);
                if !metrics.is_empty() {
                    s += &format!(", {}", metrics.join(", "));
                }
                if let Some(step) = ind.curve.as_ref().filter(|c| c.pruned).and_then(|c| c.last_step()) {
                    s += &format!(", pruned after step {step}");
                }
                s
            }
        };
        let line = format!(
            "worker {} (island {}) generation {}: {}: {outcome}, {:.1} s\n",
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
