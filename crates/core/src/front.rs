//! Individuals on a Pareto front: the objective values a run minimizes, and the non-dominated
//! evaluations among a set, which is what a multi-objective run reports per island and overall.

use std::collections::BTreeMap;

use crate::individual::{Individual, IndividualId};
use crate::pareto::non_dominated;

/// `ind`'s objectives as minimized (each multiplied by its sign), or `None` when it cannot be on
/// a front: failed, another number of objectives than `signs` declares, a value not finite, or
/// infeasible (constrained domination, as NSGA-II's: a feasible evaluation dominates every
/// infeasible one, which rank by their violation after the feasible ones).
pub fn minimized(ind: &Individual, signs: &[f64]) -> Option<Vec<f64>> {
    let usable = ind.failure.is_none()
        && ind.is_feasible()
        && ind.objectives.len() == signs.len()
        && ind.objectives.iter().all(|v| v.is_finite());
    usable.then(|| ind.objectives.iter().zip(signs).map(|(v, s)| v * s).collect())
}

/// The non-dominated individuals among `inds` (copies of one identity count once), ordered by the
/// first objective as minimized, then identity. Failed evaluations never enter it.
pub fn pareto_front<'a>(inds: impl IntoIterator<Item = &'a Individual>, signs: &[f64]) -> Vec<Individual> {
    let mut unique: BTreeMap<IndividualId, (&Individual, Vec<f64>)> = BTreeMap::new();
    for ind in inds {
        if let Some(point) = minimized(ind, signs) {
            unique.entry(ind.id).or_insert((ind, point));
        }
    }
    let entries: Vec<(&Individual, Vec<f64>)> = unique.into_values().collect();
    let points: Vec<&[f64]> = entries.iter().map(|(_, p)| p.as_slice()).collect();
    let mut front: Vec<(&Individual, &Vec<f64>)> =
        non_dominated(&points).into_iter().map(|k| (entries[k].0, &entries[k].1)).collect();
    front.sort_by(|a, b| a.1[0].total_cmp(&b.1[0]).then(a.0.id.cmp(&b.0.id)));
    front.into_iter().map(|(i, _)| i.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::Value;

    fn ind(generation: u64, objectives: &[f64]) -> Individual {
        let mut i = Individual::new(vec![Value::Float(0.0)]);
        i.id.generation = generation;
        i.objectives = objectives.to_vec();
        i.loss = objectives.first().copied().unwrap_or(f64::INFINITY);
        i
    }

    #[test]
    fn the_front_by_hand_with_a_maximized_objective_and_failures() {
        // Minimize loss, maximize accuracy: (0.2, 0.9) and (0.1, 0.8) trade off; (0.3, 0.85) is
        // behind (0.2, 0.9); a failure and a NaN never enter, however good they look.
        let mut failed = ind(3, &[0.0, 1.0]);
        failed.failure = Some("boom".into());
        let inds = [ind(0, &[0.2, 0.9]), ind(1, &[0.1, 0.8]), ind(2, &[0.3, 0.85]), failed, ind(4, &[f64::NAN, 1.0])];
        let front = pareto_front(&inds, &[1.0, -1.0]);
        let gens: Vec<u64> = front.iter().map(|i| i.id.generation).collect();
        assert_eq!(gens, vec![1, 0]);
        // A copy (pollination) counts once.
        let twice = [ind(0, &[0.2, 0.9]), ind(0, &[0.2, 0.9])];
        assert_eq!(pareto_front(&twice, &[1.0, -1.0]).len(), 1);
        assert!(minimized(&ind(5, &[1.0]), &[1.0, 1.0]).is_none(), "a wrong count is unusable");
    }
}
