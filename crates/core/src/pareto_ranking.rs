//! An island's order by several objectives, as [`Population`](crate::population::Population)
//! keeps it: NSGA-II's order (non-dominated rank, crowding distance within a rank, identity),
//! computed when first asked for after the active set changed, and beside it the front (rank 0),
//! kept up to date as individuals arrive.
//!
//! Why both: the whole order costs O(n log n) (two objectives) or up to O(n x front) (three) over
//! the island's history, and the genetic propagator asks at every breed for the best few only.
//! When the front holds at least that many, they are the front's members by crowding, and the
//! front changes cheaply: an arrival is checked against its members only (O(front)); a member that
//! leaves (migration) makes it unknown until next asked for.

use std::cell::OnceCell;

use crate::front::minimized;
use crate::individual::{Individual, IndividualId};
use crate::pareto::{crowding_distances, dominates, non_dominated, pareto_order};

/// Minimizing signs, the whole order and the front, each computed when first needed.
#[derive(Debug, Clone, Default)]
pub(crate) struct ParetoRanking {
    signs: Vec<f64>,
    order: OnceCell<Vec<IndividualId>>,
    /// The non-dominated usable active individuals with their minimized objectives.
    front: OnceCell<Vec<(IndividualId, Vec<f64>)>>,
}

impl ParetoRanking {
    pub fn new(signs: Vec<f64>) -> Self {
        ParetoRanking { signs, order: OnceCell::new(), front: OnceCell::new() }
    }

    /// `ind` became active.
    pub fn arrived(&mut self, ind: &Individual) {
        self.order.take();
        let Some(front) = self.front.get_mut() else { return };
        let Some(point) = minimized(ind, &self.signs) else { return };
        if front.iter().any(|(_, q)| dominates(q, &point)) {
            return;
        }
        front.retain(|(_, q)| !dominates(&point, q));
        front.push((ind.id, point));
    }

    /// `id` is no longer active.
    pub fn left(&mut self, id: IndividualId) {
        self.order.take();
        if self.front.get().is_some_and(|f| f.iter().any(|(member, _)| *member == id)) {
            self.front.take();
        }
    }

    /// The active set is the same, but something about it changed (a newer copy of one).
    pub fn changed(&mut self) {
        self.order.take();
    }

    /// Every active identity (`active`, whose individuals `get` returns) best first: rank, then
    /// crowding (largest first), then identity; then the infeasible ones by their violation
    /// (constrained domination); unusable ones (failed, a value missing) last.
    pub fn order<'s>(
        &'s self,
        active: &[IndividualId],
        get: &dyn Fn(&IndividualId) -> &'s Individual,
    ) -> &'s [IndividualId] {
        self.order.get_or_init(|| {
            // Sorted first, so that ties fall to identities whatever order the events came in.
            let mut ids = active.to_vec();
            ids.sort_unstable();
            let (mut usable, mut points, mut last) = (Vec::new(), Vec::new(), Vec::new());
            for id in ids {
                match minimized(get(&id), &self.signs) {
                    Some(point) => {
                        usable.push(id);
                        points.push(point);
                    }
                    None => last.push(id),
                }
            }
            let refs: Vec<&[f64]> = points.iter().map(Vec::as_slice).collect();
            let mut order: Vec<IndividualId> = pareto_order(&refs).into_iter().map(|k| usable[k]).collect();
            // A stable sort: ties stay in identity order. Failed ones rank after every infeasible one.
            last.sort_by_key(|id| get(id).rank_key());
            order.extend(last);
            order
        })
    }

    /// The first `k` of [`ParetoRanking::order`] that `keep` accepts (fewer if fewer are), from
    /// the front alone when it holds `k` of them: the whole order begins with the front, members
    /// by crowding, so its first `k` accepted are the front's when the front has that many.
    pub fn best_where<'s>(
        &'s self,
        k: usize,
        active: &[IndividualId],
        get: &dyn Fn(&IndividualId) -> &'s Individual,
        keep: &dyn Fn(&IndividualId) -> bool,
    ) -> Vec<IndividualId> {
        if self.order.get().is_none() {
            let chosen: Vec<IndividualId> =
                self.front_order(active, get).into_iter().filter(|id| keep(id)).take(k).collect();
            if chosen.len() == k {
                return chosen;
            }
        }
        self.order(active, get).iter().filter(|id| keep(id)).take(k).copied().collect()
    }

    /// The front's members as the whole order ranks them: by crowding, largest first.
    fn front_order<'s>(
        &'s self,
        active: &[IndividualId],
        get: &dyn Fn(&IndividualId) -> &'s Individual,
    ) -> Vec<IndividualId> {
        let front = self.front.get_or_init(|| {
            let usable: Vec<(IndividualId, Vec<f64>)> =
                active.iter().filter_map(|id| minimized(get(id), &self.signs).map(|p| (*id, p))).collect();
            let front = non_dominated(&usable.iter().map(|(_, p)| p.as_slice()).collect::<Vec<_>>());
            front.into_iter().map(|k| usable[k].clone()).collect()
        });
        // In identity order, as the whole order sees a front (crowding breaks ties by position).
        let mut members: Vec<&(IndividualId, Vec<f64>)> = front.iter().collect();
        members.sort_unstable_by_key(|(id, _)| *id);
        let distance = crowding_distances(&members.iter().map(|(_, p)| p.as_slice()).collect::<Vec<_>>());
        let mut by_distance: Vec<usize> = (0..members.len()).collect();
        by_distance.sort_by(|&a, &b| distance[b].total_cmp(&distance[a]).then(a.cmp(&b)));
        by_distance.into_iter().map(|i| members[i].0).collect()
    }
}
