//! A member's schedule in population-based training: the chain of evaluations whose training
//! states led to one evaluation, from the fresh member it started as, through every exploit, to
//! that evaluation. Its hyperparameters along the chain are the schedule PBT found: what
//! `best.json` shows for the best member and the report draws.

use std::collections::HashMap;

use crate::individual::{Individual, IndividualId};

/// The evaluations whose states led to `last` (`last` included), oldest first, as far as `trials`
/// holds them: a parent missing from `trials` ends the chain there. Empty when `last` has no
/// lineage (not population-based training).
pub fn lineage_chain<'a>(trials: &'a [Individual], last: &'a Individual) -> Vec<&'a Individual> {
    if last.lineage.is_none() {
        return Vec::new();
    }
    let by_id: HashMap<IndividualId, &Individual> = trials.iter().map(|t| (t.id, t)).collect();
    let mut chain = vec![last];
    let mut at = last;
    // Each parent trained fewer steps before it than its child: the chain ends.
    while let Some(parent) = at.lineage.as_ref().and_then(|l| l.parent).and_then(|p| by_id.get(&p).copied()) {
        if chain.len() > trials.len() {
            break;
        }
        chain.push(parent);
        at = parent;
    }
    chain.reverse();
    chain
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineage::Lineage;
    use crate::space::Value;

    fn ind(worker: u32, generation: u64, parent: Option<(u32, u64)>, step: u64) -> Individual {
        let mut i = Individual::new(vec![Value::Float(generation as f64)]);
        i.id = IndividualId { island: 0, worker, generation };
        let parent = parent.map(|(w, g)| IndividualId { island: 0, worker: w, generation: g });
        i.lineage =
            Some(Box::new(Lineage { parent, step, steps: 2, exploited: parent.is_some_and(|p| p.worker != worker) }));
        i
    }

    #[test]
    fn the_chain_follows_parents_across_exploits_to_the_fresh_member() {
        let trials = vec![
            ind(0, 0, None, 0),
            ind(1, 0, None, 0),
            ind(0, 1, Some((0, 0)), 2),
            ind(1, 1, Some((0, 1)), 4), // worker 1 exploited worker 0's member
            ind(1, 2, Some((1, 1)), 6),
        ];
        let ids = |c: Vec<&Individual>| c.iter().map(|i| (i.id.worker, i.id.generation)).collect::<Vec<_>>();
        assert_eq!(ids(lineage_chain(&trials, &trials[4])), [(0, 0), (0, 1), (1, 1), (1, 2)]);
        assert_eq!(ids(lineage_chain(&trials[2..], &trials[4])), [(0, 1), (1, 1), (1, 2)], "as far as known");
        assert!(lineage_chain(&trials, &Individual::new(vec![Value::Float(0.0)])).is_empty());
    }
}
