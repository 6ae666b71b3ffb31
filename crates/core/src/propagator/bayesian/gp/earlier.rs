//! Evaluations imported from an earlier run (`--warm-start`) in the process: prior knowledge
//! while they agree with this run's own, left out once they do not. An earlier run on the same
//! problem saves its evaluations' cost; one on a problem that differs where it matters (another
//! dataset, a changed network; in the benchmark, another BBOB instance, whose optimum lies
//! elsewhere) would otherwise keep the process trusting a landscape that is not there, and the
//! imported best keeps the search near the old optimum (docs/benchmarks/spaces.md#warm-start).
//! Agreement: once the island holds [`AGREEMENT_START`] evaluations of its own, the rank
//! correlation between their losses and what a process of the imported ones alone (their best
//! `max_points`) predicts at them must be at least [`MIN_AGREEMENT`]. Decided afresh for every
//! child, as the GP keeps no state: the more of its own the island holds, the surer.

use super::Gp;
use crate::bayes::matern::MaternGp;
use crate::bayes::stats::{rank_correlation, standardized};
use crate::bayes::warp::warped;
use crate::individual::Individual;
use crate::propagator::Pool;

/// Own evaluations the island holds before the imported ones are judged.
const AGREEMENT_START: usize = 10;
/// The least rank correlation at which the imported evaluations stay.
const MIN_AGREEMENT: f64 = 0.3;

impl Gp {
    /// Whether the island's imported evaluations belong in the process (the module's rule); true
    /// where it has none.
    pub(super) fn imported_agree(&self, pool: &dyn Pool) -> bool {
        let (imported, own): (Vec<&Individual>, Vec<&Individual>) =
            pool.iter_all().filter(|i| i.loss.is_finite()).partition(|i| i.id.is_imported());
        if imported.is_empty() || own.len() < AGREEMENT_START {
            return true;
        }
        let mut imported = imported;
        imported.sort_by_key(|i| i.rank_key());
        imported.truncate(self.config.max_points);
        let xs: Vec<Vec<f64>> = imported.iter().map(|i| self.model.encode(&i.values)).collect();
        let losses: Vec<f64> = imported.iter().map(|i| i.loss).collect();
        let ys = if self.config.warp { warped(&losses) } else { standardized(&losses) };
        // A process that cannot be fitted judges nothing: they stay.
        let Some(earlier) = MaternGp::fit(self.model.coordinates(), xs, ys) else {
            return true;
        };
        let measured: Vec<f64> = own.iter().map(|i| i.loss).collect();
        let coded: Vec<Vec<f64>> = own.iter().map(|i| self.model.encode(&i.values)).collect();
        let predicted: Vec<f64> = earlier.predict_many(&coded).into_iter().map(|(mean, _)| mean).collect();
        rank_correlation(&measured, &predicted) >= MIN_AGREEMENT
    }
}

#[cfg(test)]
mod tests {
    use super::super::GpConfig;
    use super::*;
    use crate::individual::IMPORTED;
    use crate::rng::{PropRng, worker_rng};
    use crate::space::{SearchSpace, Value};
    use rand::RngExt;

    /// A bowl in the unit square with its minimum at `centre`.
    fn bowl(values: &[Value], centre: f64) -> f64 {
        values.iter().map(|v| (v.as_f64() - centre).powi(2)).sum()
    }

    fn point(rng: &mut PropRng, around: Option<f64>) -> Vec<Value> {
        (0..2)
            .map(|_| {
                let u: f64 = rng.random();
                Value::Float(around.map_or(u, |c| (c + 0.2 * (u - 0.5)).clamp(0.0, 1.0)))
            })
            .collect()
    }

    /// An island of 50 imported evaluations of the bowl at `earlier` and `own` of its own of the
    /// bowl at `now`, drawn near the earlier run's optimum, as its model would propose them.
    fn island(earlier: f64, now: f64, own: u64) -> Vec<Individual> {
        let mut rng = worker_rng(8, 0);
        let mut pool: Vec<Individual> = (0..50)
            .map(|g| {
                let mut i = Individual::new(point(&mut rng, None));
                i.loss = bowl(&i.values, earlier);
                i.id.worker = IMPORTED;
                i.id.generation = g;
                i
            })
            .collect();
        pool.extend((0..own).map(|g| {
            let mut i = Individual::new(point(&mut rng, Some(earlier)));
            i.loss = bowl(&i.values, now);
            i.id.generation = 50 + g;
            i
        }));
        pool
    }

    #[test]
    fn imported_evaluations_stay_while_they_agree_and_leave_once_they_do_not() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        let gp = Gp::new(&space, GpConfig::default()).unwrap();
        // The same problem: they stay, and the process is fitted to all 62.
        let same = island(0.7, 0.7, 12);
        assert!(gp.imported_agree(&same));
        assert_eq!(gp.training_set(&same).unwrap().len(), 62);
        // The optimum moved: the island's own evaluations near the old one disagree with what
        // the earlier run measured there, and the process is fitted to the 12 own ones alone.
        let moved = island(0.7, 0.2, 12);
        assert!(!gp.imported_agree(&moved));
        let told = gp.training_set(&moved).unwrap();
        assert_eq!(told.len(), 12);
        // Too few of its own to judge by: they stay.
        assert!(gp.imported_agree(&island(0.7, 0.2, 9)));
    }
}
