//! Pareto dominance for several objectives, all to be minimized (a maximized objective enters
//! negated): dominance, non-dominated ranks (rank 0 is the front), crowding distance within a rank
//! (NSGA-II's tie-break, which prefers the sparse parts of a front) and the exact hypervolume a
//! front dominates up to a reference point. Points with a NaN or infinite objective belong to no
//! front: callers leave them out (a failed evaluation never enters a front).

use std::cmp::Ordering;

/// True when `a` is no worse than `b` in every objective and better in at least one. A NaN
/// compares false everywhere, so a point with one neither dominates nor is dominated.
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let mut better = false;
    for (x, y) in a.iter().zip(b) {
        match x.partial_cmp(y) {
            Some(Ordering::Less) => better = true,
            Some(Ordering::Equal) => {}
            _ => return false,
        }
    }
    better
}

/// The non-dominated rank of every point: 0 for those no other point dominates, 1 for those only
/// rank-0 points dominate, and so on. Equal points share a rank. Two objectives take
/// O(n log n) (a sweep in lexicographic order); more take O(m n^2) at worst
/// (every point on one front), far less on the many fronts of a search's history.
pub fn non_dominated_ranks(points: &[&[f64]]) -> Vec<usize> {
    match points.first().map(|p| p.len()) {
        None => Vec::new(),
        Some(2) => ranks_two_objectives(points),
        Some(_) => ranks_by_sequential_search(points),
    }
}

fn ranks_two_objectives(points: &[&[f64]]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| points[a][0].total_cmp(&points[b][0]).then(points[a][1].total_cmp(&points[b][1])));
    // In this order, a front's last member has the lowest second objective of the front so far,
    // so it alone decides whether the front's members dominate the next point; and that is true
    // of fronts 0..k and false after, which a binary search finds.
    let mut last: Vec<usize> = Vec::new();
    let mut rank = vec![0; points.len()];
    for &i in &order {
        let p = points[i];
        let k = last.partition_point(|&j| dominates(points[j], p));
        if k == last.len() {
            last.push(i);
        } else {
            last[k] = i;
        }
        rank[i] = k;
    }
    rank
}

fn ranks_by_sequential_search(points: &[&[f64]]) -> Vec<usize> {
    // Efficient non-dominated sort with binary search (Zhang et al., 2015): in lexicographic
    // order a point can only be dominated by points before it; if a member of front k dominates
    // it, so does one of every front before k, so the first front none of whose members dominates
    // it is found by binary search. O(n) memory, where counting dominations kept O(n^2) lists.
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| {
        points[a].iter().zip(points[b]).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
    });
    let mut fronts: Vec<Vec<usize>> = Vec::new();
    let mut rank = vec![0; points.len()];
    for &i in &order {
        let p = points[i];
        // Members are checked latest first: the latest are the closest in lexicographic order.
        let k = fronts.partition_point(|front| front.iter().rev().any(|&j| dominates(points[j], p)));
        if k == fronts.len() {
            fronts.push(Vec::new());
        }
        fronts[k].push(i);
        rank[i] = k;
    }
    rank
}

/// Indices of the points no other point dominates (rank 0; equal points all), in index order.
pub fn non_dominated(points: &[&[f64]]) -> Vec<usize> {
    non_dominated_ranks(points).into_iter().enumerate().filter(|(_, r)| *r == 0).map(|(i, _)| i).collect()
}

/// Indices of `points` from best to worst as NSGA-II ranks them: by non-dominated rank, within a
/// rank by crowding distance (largest first), ties by index. What truncation selection on
/// several objectives takes the first k of.
pub fn pareto_order(points: &[&[f64]]) -> Vec<usize> {
    let ranks = non_dominated_ranks(points);
    let fronts = ranks.iter().max().map_or(0, |r| r + 1);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); fronts];
    for (i, &r) in ranks.iter().enumerate() {
        members[r].push(i);
    }
    let mut order = Vec::with_capacity(points.len());
    for front in members {
        let distance = crowding_distances(&front.iter().map(|&i| points[i]).collect::<Vec<_>>());
        let mut by_distance: Vec<(usize, f64)> = front.into_iter().zip(distance).collect();
        by_distance.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        order.extend(by_distance.into_iter().map(|(i, _)| i));
    }
    order
}

/// NSGA-II's crowding distance of each point of one rank: the sum over objectives of the gap
/// between its two neighbours along that objective, divided by the objective's range; the
/// extremes of every objective get infinity, so that a front's ends are always kept.
pub fn crowding_distances(front: &[&[f64]]) -> Vec<f64> {
    let n = front.len();
    let mut distance = vec![0.0; n];
    if n <= 2 {
        return vec![f64::INFINITY; n];
    }
    let mut order: Vec<usize> = (0..n).collect();
    let objectives = front[0].len();
    // `m` picks a column of every point (front[i][m]), which clippy takes for indexing `front`.
    #[allow(clippy::needless_range_loop)]
    for m in 0..objectives {
        order.sort_by(|&a, &b| front[a][m].total_cmp(&front[b][m]));
        let (lo, hi) = (front[order[0]][m], front[order[n - 1]][m]);
        distance[order[0]] = f64::INFINITY;
        distance[order[n - 1]] = f64::INFINITY;
        if hi > lo {
            for k in 1..n - 1 {
                distance[order[k]] += (front[order[k + 1]][m] - front[order[k - 1]][m]) / (hi - lo);
            }
        }
    }
    distance
}

/// The volume of the region that `points` dominate and that `reference` bounds (the hypervolume
/// indicator); points not strictly better than the reference in every objective add nothing.
/// Exact, by slicing along the last objective: O(n log n) for two objectives, O(n^2 log n) for
/// three, meant for fronts of up to some thousands of points.
pub fn hypervolume(points: &[&[f64]], reference: &[f64]) -> f64 {
    let inside: Vec<&[f64]> = points.iter().copied().filter(|p| p.iter().zip(reference).all(|(x, r)| x < r)).collect();
    slice_volume(inside, reference)
}

fn slice_volume(mut points: Vec<&[f64]>, reference: &[f64]) -> f64 {
    let d = reference.len();
    if points.is_empty() {
        return 0.0;
    }
    if d == 1 {
        let best = points.iter().map(|p| p[0]).fold(f64::INFINITY, f64::min);
        return reference[0] - best;
    }
    points.sort_by(|a, b| a[d - 1].total_cmp(&b[d - 1]));
    if d == 2 {
        // Sweep up the second objective; each step adds the strip the best first objective so
        // far covers.
        let mut volume = 0.0;
        let mut best = f64::INFINITY;
        for (k, p) in points.iter().enumerate() {
            best = best.min(p[0]);
            let top = points.get(k + 1).map_or(reference[1], |q| q[1]);
            volume += (reference[0] - best) * (top - p[1]);
        }
        return volume;
    }
    // Between two consecutive values of the last objective, the points below form a slab whose
    // cross-section is the (d-1)-dimensional volume of their projections.
    let mut volume = 0.0;
    for k in 0..points.len() {
        let top = points.get(k + 1).map_or(reference[d - 1], |q| q[d - 1]);
        let height = top - points[k][d - 1];
        if height > 0.0 {
            let below: Vec<&[f64]> = points[..=k].iter().map(|p| &p[..d - 1]).collect();
            volume += height * slice_volume(below, &reference[..d - 1]);
        }
    }
    volume
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Deb's fast non-dominated sort: the reference the faster sorts are checked against.
    fn ranks_by_counting(points: &[&[f64]]) -> Vec<usize> {
        let n = points.len();
        let mut dominated_by = vec![0usize; n];
        let mut dominating: Vec<Vec<usize>> = vec![Vec::new(); n];
        for i in 0..n {
            for j in i + 1..n {
                if dominates(points[i], points[j]) {
                    dominating[i].push(j);
                    dominated_by[j] += 1;
                } else if dominates(points[j], points[i]) {
                    dominating[j].push(i);
                    dominated_by[i] += 1;
                }
            }
        }
        let mut rank = vec![0; n];
        let mut current: Vec<usize> = (0..n).filter(|&i| dominated_by[i] == 0).collect();
        let mut r = 0;
        while !current.is_empty() {
            let mut next = Vec::new();
            for &i in &current {
                rank[i] = r;
                for &j in &dominating[i] {
                    dominated_by[j] -= 1;
                    if dominated_by[j] == 0 {
                        next.push(j);
                    }
                }
            }
            current = next;
            r += 1;
        }
        rank
    }

    fn refs(points: &[Vec<f64>]) -> Vec<&[f64]> {
        points.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn dominance_by_hand() {
        assert!(dominates(&[1.0, 2.0], &[2.0, 2.0]));
        assert!(!dominates(&[1.0, 2.0], &[1.0, 2.0]), "equal points do not dominate");
        assert!(!dominates(&[1.0, 3.0], &[2.0, 2.0]), "a trade-off");
        assert!(!dominates(&[f64::NAN, 0.0], &[1.0, 1.0]) && !dominates(&[1.0, 1.0], &[f64::NAN, 2.0]));
        assert!(dominates(&[0.0, 0.0, 0.0], &[0.0, 0.0, 1.0]));
    }

    #[test]
    fn ranks_by_hand() {
        // (1,4) (2,2) (4,1) are the front; (3,3) only (2,2) dominates; (4,4) is behind (3,3);
        // the duplicate (2,2) shares rank 0.
        let p = vec![vec![3.0, 3.0], vec![1.0, 4.0], vec![4.0, 4.0], vec![2.0, 2.0], vec![4.0, 1.0], vec![2.0, 2.0]];
        assert_eq!(non_dominated_ranks(&refs(&p)), vec![1, 0, 2, 0, 0, 0]);
        let p3: Vec<Vec<f64>> = p.iter().map(|v| vec![v[0], v[1], 0.0]).collect();
        assert_eq!(non_dominated_ranks(&refs(&p3)), vec![1, 0, 2, 0, 0, 0], "the general sort agrees");
        assert!(non_dominated_ranks(&[]).is_empty());
    }

    #[test]
    fn crowding_by_hand() {
        // On the line f2 = 4 - f1: ends infinite; (1,3): (2-0)/4 + (4-2)/4 = 1; (2,2): 1; (3,1): 1.
        let p = vec![vec![0.0, 4.0], vec![1.0, 3.0], vec![2.0, 2.0], vec![3.0, 1.0], vec![4.0, 0.0]];
        let d = crowding_distances(&refs(&p));
        assert_eq!(d[0], f64::INFINITY);
        assert_eq!(d[4], f64::INFINITY);
        assert_eq!(&d[1..4], &[1.0, 1.0, 1.0]);
        // A crowded point in the middle: (1.9, 2.1) sits between (1,3) and (2,2).
        let p = vec![vec![0.0, 4.0], vec![1.0, 3.0], vec![1.9, 2.1], vec![2.0, 2.0], vec![4.0, 0.0]];
        let d = crowding_distances(&refs(&p));
        assert!(d[2] < d[1] && d[2] < d[3], "{d:?}");
        assert_eq!(crowding_distances(&refs(&p[..2])), vec![f64::INFINITY; 2]);
    }

    #[test]
    fn the_order_by_hand() {
        // Front (0,4) (1,3) (1.9,2.1) (2,2) (4,0): the ends first (index order), then (2,2)
        // (2.1/4 + 2.1/4 = 1.05), (1,3) (1.9/4 + 1.9/4 = 0.95) and the crowded (1.9,2.1)
        // (1/4 + 1/4); then the rank-1 point (3,3).
        let p = vec![vec![3.0, 3.0], vec![0.0, 4.0], vec![1.0, 3.0], vec![1.9, 2.1], vec![2.0, 2.0], vec![4.0, 0.0]];
        assert_eq!(pareto_order(&refs(&p)), vec![1, 5, 4, 2, 3, 0]);
        assert!(pareto_order(&[]).is_empty());
    }

    #[test]
    fn hypervolume_by_hand() {
        let p = vec![vec![1.0, 2.0], vec![2.0, 1.0]];
        assert_eq!(hypervolume(&refs(&p), &[3.0, 3.0]), 3.0);
        // A dominated point and one outside the reference add nothing.
        let p = vec![vec![1.0, 2.0], vec![2.0, 1.0], vec![2.5, 2.5], vec![0.0, 3.0]];
        assert_eq!(hypervolume(&refs(&p), &[3.0, 3.0]), 3.0);
        let p = vec![vec![1.0, 1.0, 1.0]];
        assert_eq!(hypervolume(&refs(&p), &[2.0, 2.0, 2.0]), 1.0);
        let p = vec![vec![0.0, 1.0, 1.0], vec![1.0, 0.0, 1.0]];
        assert_eq!(hypervolume(&refs(&p), &[2.0, 2.0, 2.0]), 3.0);
        assert_eq!(hypervolume(&[], &[1.0, 1.0]), 0.0);
    }

    #[test]
    fn hypervolume_of_zdt1s_front_approaches_two_thirds() {
        // f2 = 1 - sqrt(f1) on [0, 1]: with reference (1, 1) the area above the curve is 1/3 of
        // the square, so the front dominates 2/3.
        let front: Vec<Vec<f64>> = (0..=2000).map(|k| k as f64 / 2000.0).map(|f1| vec![f1, 1.0 - f1.sqrt()]).collect();
        let hv = hypervolume(&refs(&front), &[1.0 + 1e-12, 1.0 + 1e-12]);
        assert!((hv - 2.0 / 3.0).abs() < 2e-3, "{hv}");
    }

    /// A point cloud on a coarse grid, so that ties and duplicates are common.
    fn grid_points(dims: usize) -> impl Strategy<Value = Vec<Vec<f64>>> {
        prop::collection::vec(prop::collection::vec((0..6u8).prop_map(f64::from), dims), 0..40)
    }

    proptest! {
        #[test]
        fn the_two_objective_sweep_agrees_with_counting(p in grid_points(2)) {
            prop_assert_eq!(ranks_two_objectives(&refs(&p)), ranks_by_counting(&refs(&p)));
        }

        #[test]
        fn the_sequential_search_agrees_with_counting(p in grid_points(3)) {
            prop_assert_eq!(ranks_by_sequential_search(&refs(&p)), ranks_by_counting(&refs(&p)));
        }

        #[test]
        fn the_order_is_by_rank_then_crowding(p in grid_points(2)) {
            let order = pareto_order(&refs(&p));
            let ranks = non_dominated_ranks(&refs(&p));
            let mut sorted = order.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..p.len()).collect::<Vec<_>>());
            for w in order.windows(2) {
                prop_assert!(ranks[w[0]] <= ranks[w[1]]);
            }
        }

        #[test]
        fn ranks_are_consistent_with_dominance(p in grid_points(3)) {
            let r = non_dominated_ranks(&refs(&p));
            for i in 0..p.len() {
                for j in 0..p.len() {
                    if dominates(&p[i], &p[j]) {
                        prop_assert!(r[i] < r[j]);
                    }
                }
                // A point of rank k > 0 is dominated by one of rank k - 1.
                if r[i] > 0 {
                    prop_assert!((0..p.len()).any(|j| r[j] == r[i] - 1 && dominates(&p[j], &p[i])));
                }
            }
        }

        #[test]
        fn hypervolume_matches_counting_grid_cells(p in grid_points(3)) {
            // Every point is on the grid 0..6, so the dominated region is a union of unit cells:
            // count the cells that some point dominates (weakly, below the reference 6).
            let reference = [6.0, 6.0, 6.0];
            let mut cells = 0;
            for x in 0..6 {
                for y in 0..6 {
                    for z in 0..6 {
                        let c = [x as f64, y as f64, z as f64];
                        if p.iter().any(|q| q.iter().zip(&c).all(|(a, b)| a <= b)) {
                            cells += 1;
                        }
                    }
                }
            }
            prop_assert_eq!(hypervolume(&refs(&p), &reference), cells as f64);
            let flat: Vec<Vec<f64>> = p.iter().map(|q| q[..2].to_vec()).collect();
            let squares = (0..36).filter(|k| {
                let c = [(k / 6) as f64, (k % 6) as f64];
                flat.iter().any(|q| q[0] <= c[0] && q[1] <= c[1])
            }).count();
            prop_assert_eq!(hypervolume(&refs(&flat), &reference[..2]), squares as f64);
        }
    }
}
