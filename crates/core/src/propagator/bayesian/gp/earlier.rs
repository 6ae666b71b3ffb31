//! Evaluations imported from an earlier run (`--warm-start`) in the GP's composition: prior
//! knowledge while they agree with this run's own, left out once they do not. An earlier run on
//! the same problem saves its evaluations' cost; one on a problem that differs where it matters
//! (another dataset, a changed network; in the benchmark, another BBOB instance, whose optimum lies
//! elsewhere) would otherwise keep the process trusting a landscape that is not there, the trust
//! region shrinking for every evaluation that fails to beat an imported best measured on another
//! problem, and the hand-over to CMA-ES (counted with the imported ones) starting from their best
//! tenth, at the old optimum (docs/benchmarks/spaces.md#warm-start).
//!
//! Agreement: once the island holds [`AGREEMENT_START`] evaluations of its own, the rank
//! correlation between their losses and what a process of the imported ones alone (their best
//! `max_points`) predicts at them must be at least [`MIN_AGREEMENT`]. Where it is not, the whole
//! composition (process, trust region, hand-over, portfolio) breeds from the island's own
//! evaluations alone, as a run without the warm start would. Decided afresh for every child (the
//! GP keeps no state): the more of its own the island holds, the surer.

use super::Gp;
use crate::bayes::matern::MaternGp;
use crate::bayes::ranks::rank_correlation;
use crate::bayes::stats::standardized;
use crate::bayes::warp::warped;
use crate::error::Result;
use crate::individual::Individual;
use crate::propagator::WithPeers;
use crate::propagator::combinators::{breeding_through_run, call};
use crate::propagator::{Arity, Breeder, Pool, Propagator};
use crate::rng::PropRng;
use crate::space::SearchSpace;

/// Own evaluations the island holds before the imported ones are judged.
const AGREEMENT_START: usize = 10;
/// The least rank correlation at which the imported evaluations stay.
const MIN_AGREEMENT: f64 = 0.3;

impl Gp {
    /// Whether the island's imported evaluations agree with its own (the module's rule); true
    /// where it has none, or too few of its own to judge by.
    pub(crate) fn imported_agree(&self, pool: &dyn Pool) -> bool {
        let (mut imported, own): (Vec<&Individual>, Vec<&Individual>) =
            pool.iter_all().filter(|i| i.loss.is_finite()).partition(|i| i.id.is_imported());
        if imported.is_empty() || own.len() < AGREEMENT_START {
            return true;
        }
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

/// The GP's composition, bred from the island's own evaluations alone where the imported ones
/// disagree with them ([`Gp::imported_agree`], `judge` holding the space's coordinates).
#[derive(Debug)]
pub(crate) struct WhileEarlierAgrees {
    judge: Gp,
    inner: Box<dyn Propagator>,
}

impl WhileEarlierAgrees {
    pub(crate) fn new(judge: Gp, inner: Box<dyn Propagator>) -> Self {
        WhileEarlierAgrees { judge, inner }
    }

    /// The island as `inner` should see it: whole (`None`), or its own evaluations and what its
    /// workers are running (lent as a pool by [`WithPeers`]).
    fn judged(&self, pool: &dyn Pool) -> Option<(Vec<Individual>, Vec<Individual>)> {
        (!self.judge.imported_agree(pool)).then(|| {
            let own = pool.iter_all().filter(|i| !i.id.is_imported()).cloned().collect();
            (own, pool.iter_running().cloned().collect())
        })
    }

    fn run(
        &self,
        breeder: Option<Breeder>,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        match self.judged(pool) {
            Some((own, running)) => {
                call(self.inner.as_ref(), breeder, &WithPeers { pool: &own, peers: &running }, space, rng)
            }
            None => call(self.inner.as_ref(), breeder, pool, space, rng),
        }
    }
}

impl Propagator for WhileEarlierAgrees {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn parents(&self) -> Arity {
        self.inner.parents()
    }
    fn offspring(&self) -> usize {
        self.inner.offspring()
    }
    fn models_running(&self) -> bool {
        self.inner.models_running()
    }
    breeding_through_run!();
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
        let judged = WhileEarlierAgrees::new(gp.clone(), Box::new(gp.clone()));
        // The same problem: they stay, and the composition sees the whole island.
        let same = island(0.7, 0.7, 12);
        assert!(gp.imported_agree(&same));
        assert!(judged.judged(&same).is_none());
        // The optimum moved: the island's own evaluations near the old one disagree with what
        // the earlier run predicts there, and the composition sees the 12 own ones alone.
        let moved = island(0.7, 0.2, 12);
        assert!(!gp.imported_agree(&moved));
        let (own, _) = judged.judged(&moved).expect("the imported ones left out");
        assert_eq!(own.len(), 12);
        assert!(own.iter().all(|i| !i.id.is_imported()));
        let child = judged.propagate(&moved, &space, &mut worker_rng(3, 0)).unwrap();
        assert!(space.contains(&child[0].values));
        // Too few of its own to judge by: they stay.
        assert!(gp.imported_agree(&island(0.7, 0.2, 9)));
    }
}
