//! How emigrants, and with pollination the individuals they replace, are chosen from an island.

use serde::{Deserialize, Serialize};

use propulate_core::individual::{Individual, IndividualId};
use propulate_core::population::Population;
use propulate_core::propagator::{Propagator, SelectMax, SelectMin, SelectUniform};
use propulate_core::rng::PropRng;

/// How emigrants (or, with pollination, the individuals they replace) are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selection {
    /// The lowest losses.
    Best,
    /// The highest losses.
    Worst,
    /// Uniformly at random.
    Uniform,
}

impl Selection {
    /// Choose `n` of `population`'s active individuals that `keep` accepts, cloning only the
    /// chosen ones; `None` if fewer are accepted. Best and worst stop after `n` matches, so
    /// choosing from a long history costs little, and with several objectives best reads the
    /// island's front alone when it holds `n` of them ([`Population::best_where`]), not the whole
    /// order.
    pub fn choose(
        self,
        population: &Population,
        keep: impl Fn(&Individual) -> bool,
        n: usize,
        rng: &mut PropRng,
    ) -> Option<Vec<Individual>> {
        let chosen: Vec<Individual> = match self {
            Selection::Best => population.best_where(n, keep),
            Selection::Worst => population.iter_best().rev().filter(|i| keep(i)).take(n).cloned().collect(),
            Selection::Uniform => {
                let all: Vec<&Individual> = population.iter_best().filter(|i| keep(i)).collect();
                if all.len() < n {
                    return None;
                }
                rand::seq::index::sample(rng, all.len(), n).into_iter().map(|i| all[i].clone()).collect()
            }
        };
        (chosen.len() == n).then_some(chosen)
    }

    /// Up to `n` of the active individuals that worker `me` (an index among the island's workers)
    /// is responsible for, none of `exclude`: what [`Selection::choose`] picks with that filter
    /// (and `n` lowered to how many pass it), with the same draws. Best and worst read the worker's
    /// own loss order ([`Population::best_responsible`]) instead of filtering the island's, which
    /// went deeper every generation as the worker's best left: a long run's migration grew with
    /// its square. Uniform still filters the island's order (a sorted set has no rank to draw by).
    pub fn choose_responsible(
        self,
        population: &Population,
        me: u32,
        exclude: &[IndividualId],
        n: usize,
        rng: &mut PropRng,
    ) -> Vec<Individual> {
        let kept = |i: &Individual| !exclude.contains(&i.id);
        match self {
            Selection::Best => {
                population.best_responsible(me, n + exclude.len()).into_iter().filter(kept).take(n).collect()
            }
            Selection::Worst => {
                population.worst_responsible(me, n + exclude.len()).into_iter().filter(kept).take(n).collect()
            }
            Selection::Uniform => {
                let all: Vec<&Individual> =
                    population.iter_best().filter(|i| i.responsible_worker == me && kept(i)).collect();
                let n = n.min(all.len());
                rand::seq::index::sample(rng, all.len(), n).into_iter().map(|k| all[k].clone()).collect()
            }
        }
    }

    /// The selection propagator choosing `n` individuals.
    pub fn propagator(self, n: usize) -> Box<dyn Propagator> {
        match self {
            Selection::Best => Box::new(SelectMin(n)),
            Selection::Worst => Box::new(SelectMax(n)),
            Selection::Uniform => Box::new(SelectUniform(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use propulate_core::rng::worker_rng;
    use propulate_core::space::Value;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]
        /// A worker's choice from its own loss order is the one from a filtered pass over the
        /// island's, draws included, whatever the losses (ties, failures), the responsible workers
        /// and the individuals excluded.
        #[test]
        fn choosing_a_workers_own_is_choosing_from_the_filtered_island(
            inds in proptest::collection::vec((0u8..6, 0u32..3), 1..40),
            excluded in proptest::collection::vec(0u64..40, 0..4),
            n in 0usize..12,
            seed in 0u64..1000,
        ) {
            let mut p = Population::new();
            for (g, &(loss, responsible)) in inds.iter().enumerate() {
                let mut i = Individual::new(vec![Value::Float(f64::from(loss))]);
                i.id = IndividualId { island: 0, worker: 1, generation: g as u64 };
                i.loss = if loss == 5 { f64::INFINITY } else { f64::from(loss) };
                i.responsible_worker = responsible;
                p.insert(i);
            }
            let exclude: Vec<IndividualId> =
                excluded.iter().map(|&g| IndividualId { island: 0, worker: 1, generation: g }).collect();
            for selection in [Selection::Best, Selection::Worst, Selection::Uniform] {
                for me in 0..3 {
                    let keep = |i: &Individual| i.responsible_worker == me && !exclude.contains(&i.id);
                    let count = p.iter_best().filter(|i| keep(i)).count();
                    let (mut a, mut b) = (worker_rng(seed, 0), worker_rng(seed, 0));
                    let filtered = selection.choose(&p, keep, n.min(count), &mut a).expect("counted");
                    let own = selection.choose_responsible(&p, me, &exclude, n, &mut b);
                    let ids = |v: &[Individual]| v.iter().map(|i| i.id).collect::<Vec<_>>();
                    proptest::prop_assert_eq!(ids(&own), ids(&filtered), "{:?} for worker {}", selection, me);
                    proptest::prop_assert_eq!(a.get_word_pos(), b.get_word_pos());
                }
            }
        }
    }
}
