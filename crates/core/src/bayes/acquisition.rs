//! Where to evaluate next: the point of the space with the highest log expected improvement under
//! the process (or another [`Acquisition`]), found as Optuna's GPSampler and BoTorch find it. Many candidates are scored (the
//! caller draws them: uniform and near the best points); a few of them become starts (the best
//! one, the caller's warm starts, and others drawn with probability growing with their score); from
//! each start a local search alternates L-BFGS on the continuous coordinates with a search over
//! each discrete one (every value of a small int range or of a categorical, a widening line search
//! on a larger int range) until a round gains nothing.

use rand::RngExt;

use super::lbfgs::{Stop, minimize};
use super::log_ei::{log_expected_improvement, log_normal_cdf};
use super::matern::MaternGp;
use super::trend::Trended;
use crate::rng::PropRng;

/// How one model coordinate may move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum CoordinateKind {
    /// Anywhere in [0, 1].
    Continuous,
    /// The centres of `n` equal bins of [0, 1] (an int parameter's values).
    Grid(usize),
    /// One of `n` choices, held as the choice's index.
    Choices(usize),
    /// Not searched: it keeps the start's value (PB2's training step, a parameter held fixed).
    Held,
}

/// A grid this small is searched whole; a larger one by a widening line search.
const EXHAUSTIVE_GRID: usize = 32;
/// Rounds of alternating continuous and discrete search per start.
const ROUNDS: usize = 5;
/// A round that gains less log EI than this ends the search.
const ROUND_GAIN: f64 = 1e-6;
const CLIMB: Stop = Stop { iterations: 100, gradient: 1e-7, relative_decrease: 1e-10 };
/// Points closer than this in every coordinate of the unit cube are one configuration: a ten-
/// millionth of a parameter's range (or of its log range), far below what a training tells apart
/// and below the steps that refine BBOB's optima to 1e-8.
const SAME_POINT: f64 = 1e-7;
/// A continuous coordinate this near 0 or 1 lies on a face of the space.
const FACE: f64 = 1e-3;
/// Smallest predictive variance used: the log of EI at a point the model is sure of stays finite.
const MIN_VARIANCE: f64 = 1e-18;

/// What the search maximizes, with its gradient by every coordinate (the discrete ones' entries
/// are not read).
pub(crate) trait Acquisition {
    fn value(&self, x: &[f64]) -> f64;
    fn value_and_gradient(&self, x: &[f64]) -> (f64, Vec<f64>);
    /// [`Acquisition::value`] at each of `xs` (the candidates: thousands per child).
    fn values(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        xs.iter().map(|x| self.value(x)).collect()
    }
}

/// Log expected improvement below `best` under a process.
pub(crate) struct LogEi<'a> {
    pub gp: &'a MaternGp,
    pub best: f64,
}

/// The lower confidence bound of a minimized output, negated so that the search maximizes it:
/// `kappa` standard deviations below the mean (GP-UCB, as PB2 uses it).
pub(crate) struct LowerConfidence<'a> {
    pub gp: &'a MaternGp,
    pub kappa: f64,
}

impl LowerConfidence<'_> {
    fn of(&self, (mean, variance): (f64, f64)) -> f64 {
        let v = -mean + self.kappa * variance.max(MIN_VARIANCE).sqrt();
        if v.is_nan() { f64::NEG_INFINITY } else { v }
    }
}

impl Acquisition for LowerConfidence<'_> {
    fn value(&self, x: &[f64]) -> f64 {
        self.of(self.gp.predict(x))
    }

    fn values(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        self.gp.predict_many(xs).into_iter().map(|p| self.of(p)).collect()
    }

    fn value_and_gradient(&self, x: &[f64]) -> (f64, Vec<f64>) {
        let b = self.gp.belief(x);
        let sd = b.variance.max(MIN_VARIANCE).sqrt();
        let held = b.variance <= MIN_VARIANCE;
        let grad = b
            .d_mean
            .iter()
            .zip(&b.d_variance)
            .map(|(dm, dv)| -dm + if held { 0.0 } else { self.kappa * dv / (2.0 * sd) })
            .collect();
        (-b.mean + self.kappa * sd, grad)
    }
}

impl LogEi<'_> {
    fn of(&self, (mean, variance): (f64, f64)) -> f64 {
        let v = log_expected_improvement(mean, variance.max(MIN_VARIANCE).sqrt(), self.best).0;
        if v.is_nan() { f64::NEG_INFINITY } else { v }
    }
}

impl Acquisition for LogEi<'_> {
    fn value(&self, x: &[f64]) -> f64 {
        self.of(self.gp.predict(x))
    }

    fn values(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        self.gp.predict_many(xs).into_iter().map(|p| self.of(p)).collect()
    }

    fn value_and_gradient(&self, x: &[f64]) -> (f64, Vec<f64>) {
        let b = self.gp.belief(x);
        let sd = b.variance.max(MIN_VARIANCE).sqrt();
        let (v, d_mean, d_sd) = log_expected_improvement(b.mean, sd, self.best);
        let held = b.variance <= MIN_VARIANCE;
        let grad = b
            .d_mean
            .iter()
            .zip(&b.d_variance)
            .map(|(dm, dv)| d_mean * dm + if held { 0.0 } else { d_sd * dv / (2.0 * sd) })
            .collect();
        (v, grad)
    }
}

/// An acquisition times the probability that every constraint holds, added in logs (Gardner et
/// al., ICML 2014; Optuna's GPSampler with constraints): each constraint modelled by a process of
/// its standardized values (around a plane where the values ask for one, `trend`), and held
/// where that process lies at most at its `threshold` (0 in the constraint's units). Without an objective (no feasible point yet) the probability alone: the
/// search first looks for where the constraints hold.
pub(crate) struct Feasible<'a, A> {
    pub objective: Option<A>,
    pub constraints: Vec<(&'a Trended, f64)>,
}

impl<A: Acquisition> Feasible<'_, A> {
    /// log P(constraint <= threshold) for a belief, with its derivatives by the mean and by the
    /// deviation.
    fn log_probability((mean, variance): (f64, f64), threshold: f64) -> (f64, f64, f64) {
        let sd = variance.max(MIN_VARIANCE).sqrt();
        let z = (threshold - mean) / sd;
        let (v, slope) = log_normal_cdf(z);
        // d z / d mean = -1 / sd; d z / d sd = -z / sd.
        (v, -slope / sd, -slope * z / sd)
    }
}

impl<A: Acquisition> Acquisition for Feasible<'_, A> {
    fn value(&self, x: &[f64]) -> f64 {
        let base = self.objective.as_ref().map_or(0.0, |a| a.value(x));
        let v = base + self.constraints.iter().map(|(gp, t)| Self::log_probability(gp.predict(x), *t).0).sum::<f64>();
        if v.is_nan() { f64::NEG_INFINITY } else { v }
    }

    fn values(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        let mut total = match &self.objective {
            Some(a) => a.values(xs),
            None => vec![0.0; xs.len()],
        };
        for (gp, t) in &self.constraints {
            for (v, belief) in total.iter_mut().zip(gp.predict_many(xs)) {
                *v += Self::log_probability(belief, *t).0;
            }
        }
        total.into_iter().map(|v| if v.is_nan() { f64::NEG_INFINITY } else { v }).collect()
    }

    fn value_and_gradient(&self, x: &[f64]) -> (f64, Vec<f64>) {
        let (mut v, mut grad) = match &self.objective {
            Some(a) => a.value_and_gradient(x),
            None => (0.0, vec![0.0; x.len()]),
        };
        for (gp, t) in &self.constraints {
            let b = gp.belief(x);
            let sd = b.variance.max(MIN_VARIANCE).sqrt();
            let (lp, d_mean, d_sd) = Self::log_probability((b.mean, b.variance), *t);
            let held = b.variance <= MIN_VARIANCE;
            v += lp;
            for (g, (dm, dv)) in grad.iter_mut().zip(b.d_mean.iter().zip(&b.d_variance)) {
                *g += d_mean * dm + if held { 0.0 } else { d_sd * dv / (2.0 * sd) };
            }
        }
        (v, grad)
    }
}

/// The box the continuous coordinates' local searches stay in: the unit cube, or a trust region
/// (crate::propagator's GP). Discrete coordinates always search their whole range.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bounds {
    pub lower: Vec<f64>,
    pub upper: Vec<f64>,
}

impl Bounds {
    pub(crate) fn unit(dims: usize) -> Self {
        Bounds { lower: vec![0.0; dims], upper: vec![1.0; dims] }
    }

    /// Whether the continuous and grid coordinates of `x` (by `kinds`) lie in the box.
    pub(crate) fn contains(&self, x: &[f64], kinds: &[CoordinateKind]) -> bool {
        (0..x.len())
            .all(|j| !matches!(kinds[j], CoordinateKind::Continuous | CoordinateKind::Grid(_)) || self.holds(j, x[j]))
    }

    /// Whether coordinate `j`'s value `v` lies within the box's edges (a bin centre computed apart
    /// from the edge may miss it by rounding).
    pub(crate) fn holds(&self, j: usize, v: f64) -> bool {
        self.lower[j] - 1e-12 <= v && v <= self.upper[j] + 1e-12
    }
}

/// The candidate with the highest acquisition after local searches from the best of `candidates`,
/// the `warm` starts and others drawn by score; `starts` local searches in all, their continuous
/// coordinates within `bounds` (the candidates and warm starts are the caller's to place there).
/// Never a point of `taken` (the evaluations the model was fitted to and those running) while
/// another is at hand: the next local search's end, else the best candidate apart from them. A
/// process that finds noise in the losses promises improvement at its best evaluated point itself
/// (its mean there is the best, its variance not 0), and where nothing else promises more, as
/// when the search has pressed into a corner of the space, every worker bred that point again:
/// 19 of 64 evaluations of one configuration on the DDP tutorial's conditional benchmark
/// (docs/benchmarks/spaces.md), whose training is deterministic: a repeat teaches nothing.
///
/// Nor a point on a face of the space (a continuous coordinate at 0 or 1) farther from every
/// taken point than the taken points' median distance to their nearest, while another is at hand:
/// the next climb's end, else the best candidate apart from them, else as above. Expected
/// improvement under a process fitted to few points is largest where it knows least, at the
/// faces, and the climbs ended there: on BBOB 5-D, whose optima lie inside the faces, 2,748 of
/// 9,200 evaluations of 46 runs sat on one, 1,510 since, and the runs' best was lower on 30 of 46
/// (docs/benchmarks/spaces.md, "Bounds"). Once something was measured near a face, the
/// search goes there as before (the DDP tutorial's Adadelta at its best rate, the top of `lr`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn maximize(
    acquisition: &impl Acquisition,
    kinds: &[CoordinateKind],
    bounds: &Bounds,
    candidates: &[Vec<f64>],
    warm: &[Vec<f64>],
    starts: usize,
    taken: &[Vec<f64>],
    rng: &mut PropRng,
) -> Vec<f64> {
    let scores = acquisition.values(candidates);
    let top = (0..candidates.len()).fold(0, |b, k| if scores[k] > scores[b] { k } else { b });
    let mut chosen: Vec<Vec<f64>> = vec![candidates[top].clone()];
    chosen.extend(warm.iter().take(starts.saturating_sub(1)).cloned());
    // Drawn without replacement with probability proportional to exp(score - top score): the
    // smallest of -ln(u) / weight (the exponential-race form of weighted sampling).
    let top_score = scores[top];
    let mut race: Vec<(f64, usize)> = (0..candidates.len())
        .filter(|&k| k != top && scores[k].is_finite())
        .map(|k| (-rng.random::<f64>().max(f64::MIN_POSITIVE).ln() / (scores[k] - top_score).exp().max(1e-300), k))
        .collect();
    race.sort_by(|a, b| a.0.total_cmp(&b.0));
    let room = starts.saturating_sub(chosen.len());
    chosen.extend(race.into_iter().take(room).map(|(_, k)| candidates[k].clone()));
    let mut found: Vec<(f64, Vec<f64>)> = vec![(scores[top], candidates[top].clone())];
    found.extend(chosen.into_iter().map(|start| local_search(acquisition, kinds, bounds, start)));
    // Stable: of equal values the earlier (the top candidate first), as a single best would be.
    let value = |v: f64| if v.is_nan() { f64::NEG_INFINITY } else { v };
    found.sort_by(|a, b| value(b.0).total_cmp(&value(a.0)));
    let is_new = |x: &Vec<f64>| !taken.iter().any(|t| same_point(t, x, kinds));
    // A point on a face of the space is bred only where something was measured near it (below).
    let reach2 = std::cell::OnceCell::new();
    let supported = |x: &Vec<f64>| {
        !on_a_face(x, kinds)
            || reach2
                .get_or_init(|| measured_reach2(taken, kinds))
                .is_none_or(|r2| taken.iter().any(|t| distance2(t, x, kinds) <= r2))
    };
    let fresh_and_supported = |x: &Vec<f64>| is_new(x) && supported(x);
    // Of equal scores the earlier candidate, as a stable sort would put first.
    let best_candidate = |keep: &Keep| {
        (0..candidates.len())
            .filter(|&k| keep(&candidates[k]))
            .min_by(|&a, &b| value(scores[b]).total_cmp(&value(scores[a])))
    };
    let keeps: [&Keep; 2] = [&fresh_and_supported, &is_new];
    for keep in keeps {
        if let Some((_, x)) = found.iter().find(|(_, x)| keep(x)) {
            return x.clone();
        }
        if let Some(k) = best_candidate(keep) {
            return candidates[k].clone();
        }
    }
    found.swap_remove(0).1
}

/// Which points [`maximize`] may return, in order of preference.
type Keep<'a> = dyn Fn(&Vec<f64>) -> bool + 'a;

/// Whether a continuous coordinate of `x` lies on a face of the unit cube (within a thousandth of
/// its range, as `benches/at_bounds.py` counts).
fn on_a_face(x: &[f64], kinds: &[CoordinateKind]) -> bool {
    (0..kinds.len()).any(|j| kinds[j] == CoordinateKind::Continuous && (x[j] <= FACE || x[j] >= 1.0 - FACE))
}

/// Squared Euclidean distance over the continuous coordinates.
fn distance2(a: &[f64], b: &[f64], kinds: &[CoordinateKind]) -> f64 {
    (0..kinds.len()).filter(|&j| kinds[j] == CoordinateKind::Continuous).map(|j| (a[j] - b[j]).powi(2)).sum()
}

/// How near an evaluated point counts as measured: the median of the taken points' squared
/// distances to their nearest other. None with fewer than two: nothing to judge by (PB2 passes
/// none), and every point counts as measured near.
fn measured_reach2(taken: &[Vec<f64>], kinds: &[CoordinateKind]) -> Option<f64> {
    if taken.len() < 2 {
        return None;
    }
    let mut nearest: Vec<f64> = (0..taken.len())
        .map(|i| {
            (0..taken.len())
                .filter(|&k| k != i)
                .map(|k| distance2(&taken[i], &taken[k], kinds))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    nearest.sort_by(f64::total_cmp);
    Some(nearest[nearest.len() / 2])
}

/// Two model points no searched coordinate of which differs by more than [`SAME_POINT`]: a held
/// one (a conditional space's switch or dormant parameter in a group's search) is not the
/// configuration's.
fn same_point(a: &[f64], b: &[f64], kinds: &[CoordinateKind]) -> bool {
    (0..kinds.len()).all(|j| kinds[j] == CoordinateKind::Held || (a[j] - b[j]).abs() <= SAME_POINT)
}

/// Climb from `x`: alternate L-BFGS on the continuous coordinates with each discrete one's search.
fn local_search(
    acquisition: &impl Acquisition,
    kinds: &[CoordinateKind],
    bounds: &Bounds,
    mut x: Vec<f64>,
) -> (f64, Vec<f64>) {
    let continuous: Vec<usize> = (0..kinds.len()).filter(|&j| kinds[j] == CoordinateKind::Continuous).collect();
    let mut value = acquisition.value(&x);
    for _ in 0..ROUNDS {
        let before = value;
        if !continuous.is_empty() {
            let start: Vec<f64> = continuous.iter().map(|&j| x[j]).collect();
            let mut full = x.clone();
            let found = minimize(
                |c| {
                    for (&j, v) in continuous.iter().zip(c) {
                        full[j] = *v;
                    }
                    let (v, g) = acquisition.value_and_gradient(&full);
                    (-v, continuous.iter().map(|&j| -g[j]).collect())
                },
                &start,
                &continuous.iter().map(|&j| bounds.lower[j]).collect::<Vec<f64>>(),
                &continuous.iter().map(|&j| bounds.upper[j]).collect::<Vec<f64>>(),
                CLIMB,
            );
            if -found.value > value {
                for (&j, v) in continuous.iter().zip(&found.x) {
                    x[j] = *v;
                }
                value = -found.value;
            }
        }
        for (j, kind) in kinds.iter().enumerate() {
            let options: Vec<f64> = match *kind {
                CoordinateKind::Continuous | CoordinateKind::Held => continue,
                CoordinateKind::Choices(n) => (0..n).map(|c| c as f64).collect(),
                CoordinateKind::Grid(n) if n <= EXHAUSTIVE_GRID => (0..n).map(|i| grid_point(i, n)).collect(),
                CoordinateKind::Grid(n) => widening_neighbours(x[j], n),
            };
            let options =
                options.into_iter().filter(|&o| !matches!(kind, CoordinateKind::Grid(_)) || bounds.holds(j, o));
            for option in options {
                if option == x[j] {
                    continue;
                }
                let old = x[j];
                x[j] = option;
                let v = acquisition.value(&x);
                if v > value {
                    value = v;
                } else {
                    x[j] = old;
                }
            }
        }
        if value - before < ROUND_GAIN {
            break;
        }
    }
    (value, x)
}

/// The centre of bin `i` of `n`.
pub(crate) fn grid_point(i: usize, n: usize) -> f64 {
    (i as f64 + 0.5) / n as f64
}

/// The bins 1, 2, 4, 8, ... away from the one `x` lies in, on both sides, within the grid.
fn widening_neighbours(x: f64, n: usize) -> Vec<f64> {
    let at = ((x * n as f64).floor() as i64).clamp(0, n as i64 - 1);
    let mut out = Vec::new();
    let mut step = 1i64;
    while step < n as i64 {
        for i in [at - step, at + step] {
            if (0..n as i64).contains(&i) {
                out.push(grid_point(i as usize, n));
            }
        }
        step *= 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::matern::Coordinates;
    use super::*;
    use crate::rng::worker_rng;

    /// A process fitted to a bowl around 0.7 in coordinate 0, sampled densely (every 0.1, with
    /// every value of coordinate 1, which adds 0.3 unless it is 2), and the best loss seen.
    fn bowl(kind: CoordinateKind) -> (MaternGp, f64) {
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for k in 0..33 {
            let x1 = match kind {
                CoordinateKind::Choices(_) => (k % 3) as f64,
                _ => grid_point(k % 3, 3),
            };
            let x = vec![(k / 3) as f64 / 10.0, x1];
            let y = (x[0] - 0.7).powi(2) + if k % 3 == 2 { 0.0 } else { 0.3 };
            xs.push(x);
            ys.push(y * 4.0 - 1.0);
        }
        let best = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let coordinates = Coordinates::plain(vec![false, matches!(kind, CoordinateKind::Choices(_))]);
        (MaternGp::fit(coordinates, xs, ys).unwrap(), best)
    }

    #[test]
    fn the_search_finds_the_bowls_bottom_and_the_right_choice() {
        let (gp, best) = bowl(CoordinateKind::Choices(3));
        let acquisition = LogEi { gp: &gp, best };
        let kinds = [CoordinateKind::Continuous, CoordinateKind::Choices(3)];
        // From near the bottom, one local search gets there; from afar it may stop at a local
        // maximum (the variance between data points makes several), but it climbs.
        let (_, x) = local_search(&acquisition, &kinds, &Bounds::unit(2), vec![0.55, 0.0]);
        assert!((x[0] - 0.7).abs() < 0.05 && x[1] == 2.0, "{x:?}");
        let (value, x) = local_search(&acquisition, &kinds, &Bounds::unit(2), vec![0.1, 0.0]);
        assert!(value > acquisition.value(&[0.1, 0.0]) && (0.0..=1.0).contains(&x[0]), "{x:?}");
        // The whole maximization, from scattered candidates, gets there too, in the box, and
        // beats every candidate.
        let mut rng = worker_rng(1, 0);
        let candidates: Vec<Vec<f64>> = (0..200).map(|_| vec![rng.random(), rng.random_range(0..3) as f64]).collect();
        let x = maximize(&acquisition, &kinds, &Bounds::unit(kinds.len()), &candidates, &[], 5, &[], &mut rng);
        assert!((0.0..=1.0).contains(&x[0]) && (x[0] - 0.7).abs() < 0.1 && x[1] == 2.0, "{x:?}");
        let found = acquisition.value(&x);
        assert!(candidates.iter().all(|c| acquisition.value(c) <= found));
        // Held in a box that stops short of the bottom, the search ends at the box's edge.
        let boxed = Bounds { lower: vec![0.2, 0.0], upper: vec![0.5, 1.0] };
        let inside: Vec<Vec<f64>> = candidates.iter().map(|c| vec![0.2 + 0.3 * c[0], c[1]]).collect();
        let x = maximize(&acquisition, &kinds, &boxed, &inside, &[], 5, &[], &mut rng);
        assert!((x[0] - 0.5).abs() < 1e-6 && x[1] == 2.0, "{x:?}");
    }

    #[test]
    fn a_grid_coordinate_only_takes_its_bin_centres() {
        let (gp, best) = bowl(CoordinateKind::Grid(3));
        let acquisition = LogEi { gp: &gp, best };
        for n in [5, 1000] {
            // Coordinate 0 as a grid of n bins, coordinate 1 continuous.
            let kinds = [CoordinateKind::Grid(n), CoordinateKind::Continuous];
            let (_, x) = local_search(&acquisition, &kinds, &Bounds::unit(2), vec![grid_point(0, n), 0.5]);
            let bin = x[0] * n as f64 - 0.5;
            assert!((bin - bin.round()).abs() < 1e-9, "{n}: {x:?}");
            assert!((x[0] - 0.7).abs() < 0.15, "{n}: {x:?}");
            // In a box that ends short of the bottom, the grid's search stays in it.
            let boxed = Bounds { lower: vec![0.0, 0.0], upper: vec![0.45, 1.0] };
            let (_, x) = local_search(&acquisition, &kinds, &boxed, vec![grid_point(0, n), 0.5]);
            assert!(x[0] <= 0.45 && x[0] >= 0.29, "{n}: {x:?}");
        }
    }

    /// Highest at the corner (1, 1) of the square, whatever the second coordinate's kind.
    struct Corner;
    impl Acquisition for Corner {
        fn value(&self, x: &[f64]) -> f64 {
            x[0] + x[1]
        }
        fn value_and_gradient(&self, x: &[f64]) -> (f64, Vec<f64>) {
            (self.value(x), vec![1.0, 1.0])
        }
    }

    #[test]
    fn an_evaluated_or_running_point_is_not_bred_again_while_another_is_at_hand() {
        let mut rng = worker_rng(3, 0);
        let continuous = [CoordinateKind::Continuous; 2];
        let unit = Bounds::unit(2);
        let candidates: Vec<Vec<f64>> = (0..50).map(|_| vec![rng.random(), rng.random()]).collect();
        let corner = vec![1.0, 1.0];
        let x = maximize(&Corner, &continuous, &unit, &candidates, &[], 5, &[], &mut rng);
        assert_eq!(x, corner, "the climb ends in the corner");
        // Taken (as the island's best evaluation, also the warm start): a point apart from it.
        let taken = std::slice::from_ref(&corner);
        let x = maximize(&Corner, &continuous, &unit, &candidates, taken, 5, taken, &mut rng);
        assert!(x.iter().zip(&corner).any(|(a, b)| (a - b).abs() > SAME_POINT), "{x:?}");
        let best = candidates.iter().map(|c| Corner.value(c)).fold(f64::NEG_INFINITY, f64::max);
        assert!(Corner.value(&x) >= best, "no worse than the best candidate: {x:?}");
        // A held coordinate is not the configuration's: the corner with another held value is it.
        let held = [CoordinateKind::Continuous, CoordinateKind::Held];
        let x = maximize(&Corner, &held, &unit, &candidates, &[], 5, &[vec![1.0, 0.2]], &mut rng);
        assert!(x[0] < 1.0 - SAME_POINT, "{x:?}");
        // Every candidate and every climb's end taken: the best of them, as without the list.
        let few = vec![vec![0.2, 0.3], vec![0.9, 0.9]];
        let x = maximize(
            &Corner,
            &continuous,
            &unit,
            &few,
            &[],
            1,
            &[vec![0.2, 0.3], vec![0.9, 0.9], corner.clone()],
            &mut rng,
        );
        assert_eq!(x, corner);
    }

    /// The climbs end in the corner (1, 1); it is bred only once something was measured near it.
    #[test]
    fn a_face_is_bred_only_where_something_was_measured_near_it() {
        let mut rng = worker_rng(4, 0);
        let continuous = [CoordinateKind::Continuous; 2];
        let unit = Bounds::unit(2);
        let candidates: Vec<Vec<f64>> = (0..50).map(|_| vec![0.1 + 0.8 * rng.random::<f64>(), 0.5]).collect();
        // Measured: a grid every 0.05 around the centre (nearest neighbours 0.05 apart).
        let mut taken: Vec<Vec<f64>> =
            (0..25).map(|k| vec![0.4 + 0.05 * (k % 5) as f64, 0.4 + 0.05 * (k / 5) as f64]).collect();
        let x = maximize(&Corner, &continuous, &unit, &candidates, &[], 5, &taken, &mut rng);
        assert!(!on_a_face(&x, &continuous), "far from every measured point: {x:?}");
        let best = candidates.iter().map(|c| Corner.value(c)).fold(f64::NEG_INFINITY, f64::max);
        assert!(Corner.value(&x) >= best, "no worse than the best candidate: {x:?}");
        // One measured point 0.042 from the corner: the climb's end is bred.
        taken.push(vec![0.97, 0.97]);
        let x = maximize(&Corner, &continuous, &unit, &candidates, &[], 5, &taken, &mut rng);
        assert_eq!(x, vec![1.0, 1.0]);
        // Every candidate on a face and nothing measured near: the climb's end, as without the rule.
        let faces: Vec<Vec<f64>> = candidates.iter().map(|c| vec![c[0], 0.0]).collect();
        let x = maximize(&Corner, &continuous, &unit, &faces, &[], 5, &taken[..25], &mut rng);
        assert_eq!(x, vec![1.0, 1.0]);
    }

    #[test]
    fn widening_neighbours_stay_on_the_grid() {
        let n = 100;
        let near = widening_neighbours(grid_point(3, n), n);
        let bins: Vec<i64> = near.iter().map(|x| (x * n as f64).floor() as i64).collect();
        assert_eq!(bins, vec![2, 4, 1, 5, 7, 11, 19, 35, 67]);
    }
}
