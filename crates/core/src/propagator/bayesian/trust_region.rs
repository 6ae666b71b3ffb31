//! A trust region for the GP's acquisition (TuRBO, Eriksson et al. 2019): a box around the
//! island's best point, outside which the process's child is not looked for. A global process on a
//! rugged loss puts most of its uncertainty, and so its expected improvement, into the corners of
//! the space; a box that follows the search's successes keeps the children where the good losses
//! are, and widens again when they stop coming.
//!
//! The box's side (on the unit cube of the model's coordinates) starts at [`INITIAL`], doubles
//! after [`SUCCESSES`] batches in a row with an improvement (to at most [`MAX`]), halves after
//! `ceil(max(4, dims) / batch)` batches without one, and starts again at [`INITIAL`] once below
//! [`MIN`]; a batch is as many evaluations as the island breeds at once (its running ones and
//! this child), as TuRBO counts a batch of q parallel evaluations. It is replayed from the
//! island's evaluations in breeding order each time: no state, so a resumed run and workers
//! breeding at once see the same box. Each coordinate's share of the side follows its length
//! scale (a coordinate the loss barely depends on gets a longer edge), the edges' geometric mean
//! being the side. Ints are boxed as floats are (their values the bins in the box, at least the
//! centre's and its neighbours): with only the floats boxed, a space of mostly ints (COCO's
//! `bbob-mixint`, 4 ints and 1 float) was searched locally in one coordinate and globally in the
//! rest, and boxing the ints too was at most the search before on 20 of 24 functions
//! (docs/benchmarks/spaces.md). Categoricals keep their whole range.
//!
//! Inside the region the process is the region's own, as TuRBO's: fitted to the evaluations
//! within twice the box, their losses standardized among themselves (super::gp), so that huge
//! losses far away do not flatten the good ones near the best point.

use crate::bayes::acquisition::{Bounds, CoordinateKind};
use crate::individual::RankKey;

/// The side a region starts with (and restarts with once collapsed).
const INITIAL: f64 = 0.8;
/// The widest side.
const MAX: f64 = 1.6;
/// Below this side the region restarts at [`INITIAL`].
const MIN: f64 = 0.5 * 0.5 * 0.5 * 0.5 * 0.5 * 0.5 * 0.5;
/// Batches in a row with an improvement that double the side.
const SUCCESSES: usize = 3;
/// Improvement that counts, as a share of the best loss's magnitude (TuRBO's).
const GAIN: f64 = 1e-3;

/// The side after replaying `ranks` (in breeding order: losses, or [`RankKey`]s where the
/// evaluations measured constraints; a failure never improves), the first `startup` of them being
/// the uniform start, in a space of `dims` coordinates, with `batch` evaluations bred at once. With
/// constraints an improvement is one in the island's ranking, as SCBO (Eriksson and Poloczek 2021)
/// counts them: a lower loss among feasible points, a lower violation while none is feasible, or
/// the first feasible point. As TuRBO does for a batch of q evaluations, the schedule
/// counts batches, not evaluations: the losses after the start are taken `batch` at a time, a batch
/// with an improvement being a success, and `ceil(max(4, dims) / batch)` batches without one
/// halve the side. Counted one evaluation at a time, 8 asynchronous workers in 5-D halved it after
/// 5 evaluations and almost never doubled it (3 improvements in a row): the box collapsed 2-5
/// times in 200 evaluations on every BBOB function, the sphere included; per batch 0-3 times, and
/// the search found better points on 143 of 240 runs (docs/benchmarks/bbob.md).
pub(crate) fn side<K: Into<RankKey>>(
    ranks: impl IntoIterator<Item = K>,
    startup: usize,
    dims: usize,
    batch: usize,
) -> f64 {
    let batch = batch.max(1);
    let failures = dims.max(4).div_ceil(batch);
    // Worse than any evaluation's rank, failures' included.
    let (mut side, mut best) = (INITIAL, RankKey(u8::MAX, f64::INFINITY));
    let (mut won, mut lost) = (0, 0);
    // Whether the batch being replayed has improved, and how many of its evaluations are in.
    let (mut improved, mut seen) = (false, 0);
    for (k, rank) in ranks.into_iter().enumerate() {
        let rank: RankKey = rank.into();
        improved |= improves(rank, best);
        best = best.min(rank);
        if k < startup {
            improved = false;
            continue;
        }
        seen += 1;
        if seen < batch {
            continue;
        }
        if improved {
            won += 1;
            lost = 0;
        } else {
            lost += 1;
            won = 0;
        }
        (improved, seen) = (false, 0);
        if won == SUCCESSES {
            side = (2.0 * side).min(MAX);
            won = 0;
        } else if lost == failures {
            side /= 2.0;
            lost = 0;
        }
        if side < MIN {
            side = INITIAL;
        }
    }
    side
}

/// Whether `rank` improves on `best` by more than [`GAIN`] of its magnitude (a failure never does).
fn improves(rank: RankKey, best: RankKey) -> bool {
    !rank.failed() && (rank.0 < best.0 || (rank.0 == best.0 && rank.1 < best.1 - GAIN * best.1.abs()))
}

/// The box of `side` around `centre`, clipped to the unit cube: continuous and int (grid)
/// coordinates get edges proportional to their length scales (`1 / sqrt(inverse_squared_lengths)`)
/// with geometric mean `side`, an int's edge reaching at least the bins next to the centre's;
/// categoricals keep their whole range.
pub(crate) fn bounds(centre: &[f64], side: f64, inverse_squared_lengths: &[f64], kinds: &[CoordinateKind]) -> Bounds {
    let boxed: Vec<usize> = (0..kinds.len())
        .filter(|&j| matches!(kinds[j], CoordinateKind::Continuous | CoordinateKind::Grid(_)))
        .collect();
    // ln of each length is -ln(isl) / 2; their mean is the ln of the geometric mean.
    let ln_lengths: Vec<f64> = boxed.iter().map(|&j| -0.5 * inverse_squared_lengths[j].ln()).collect();
    let finite: Vec<f64> = ln_lengths.iter().copied().filter(|l| l.is_finite()).collect();
    let ln_mean = finite.iter().sum::<f64>() / finite.len().max(1) as f64;
    let Bounds { mut lower, mut upper } = Bounds::unit(kinds.len());
    for (&j, ln) in boxed.iter().zip(&ln_lengths) {
        let mut half = 0.5 * side * (ln - ln_mean).exp();
        if let CoordinateKind::Grid(n) = kinds[j] {
            // Bin centres lie 1/n apart: 1.5/n holds both neighbours whatever the rounding.
            half = half.max(1.5 / n as f64);
        }
        // A fit with a degenerate length (infinite or NaN) leaves the coordinate its whole range.
        if half.is_finite() {
            lower[j] = (centre[j] - half).max(0.0);
            upper[j] = (centre[j] + half).min(1.0);
        }
    }
    Bounds { lower, upper }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_side_doubles_on_successes_halves_on_failures_and_restarts() {
        // Six uniform starts (ignored), then three improvements: doubled.
        let start = [10.0, 9.0, 8.0, 7.0, 6.0, 5.0];
        let won: Vec<f64> = start.iter().copied().chain([4.0, 3.0, 2.0]).collect();
        assert_eq!(side(won.clone(), 6, 5, 1), 2.0 * INITIAL);
        // Two more improvements: still doubled once; a third: capped at MAX.
        assert_eq!(side(won.iter().copied().chain([1.0, 0.5]), 6, 5, 1), MAX);
        assert_eq!(side(won.iter().copied().chain([1.0, 0.5, 0.25]), 6, 5, 1), MAX);
        // Five evaluations without a gain in 5-D (or 4 in 2-D): halved.
        assert_eq!(side(start.iter().copied().chain([7.0; 5]), 6, 5, 1), INITIAL / 2.0);
        assert_eq!(side(start.iter().copied().chain([7.0; 4]), 6, 5, 1), INITIAL);
        assert_eq!(side(start.iter().copied().chain([7.0; 4]), 6, 2, 1), INITIAL / 2.0);
        // A failure (infinite loss) never improves; a gain below a thousandth of the best neither.
        assert_eq!(side(start.iter().copied().chain([f64::INFINITY, 4.999, 7.0, 7.0, 7.0]), 6, 5, 1), INITIAL / 2.0);
        // Seven halvings take 0.8 below MIN: the region starts again.
        let stalled: Vec<f64> = start.iter().copied().chain([7.0; 35]).collect();
        assert_eq!(side(stalled.iter().copied().take(6 + 30), 6, 5, 1), INITIAL / 64.0);
        assert_eq!(side(stalled, 6, 5, 1), INITIAL);
    }

    #[test]
    fn with_workers_breeding_at_once_the_side_counts_their_batches() {
        let start = [10.0, 9.0, 8.0, 7.0, 6.0, 5.0];
        // 8 at once in 5-D: one batch of 8 without a gain halves the side (ceil(5 / 8) = 1), 7 do not.
        assert_eq!(side(start.iter().copied().chain([7.0; 7]), 6, 5, 8), INITIAL);
        assert_eq!(side(start.iter().copied().chain([7.0; 8]), 6, 5, 8), INITIAL / 2.0);
        // 2 at once in 5-D: three batches (6 evaluations) without a gain, not two.
        assert_eq!(side(start.iter().copied().chain([7.0; 4]), 6, 5, 2), INITIAL);
        assert_eq!(side(start.iter().copied().chain([7.0; 6]), 6, 5, 2), INITIAL / 2.0);
        // Three batches of 8 with one improvement each double it, wherever the gain falls.
        let mut won: Vec<f64> = start.to_vec();
        for (b, gain) in [(0, 4.0), (5, 3.0), (7, 2.0)] {
            won.extend((0..8).map(|k| if k == b { gain } else { 7.0 }));
        }
        assert_eq!(side(won.clone(), 6, 5, 8), 2.0 * INITIAL);
        // A batch with no gain after the first halves the side and resets the count of successes.
        won.splice(6 + 8..6 + 8, [7.0; 8]);
        assert_eq!(side(won, 6, 5, 8), INITIAL / 2.0);
    }

    #[test]
    fn with_constraints_the_side_counts_gains_in_the_ranking() {
        let start = [10.0, 9.0, 8.0, 7.0, 6.0, 5.0].map(|l| RankKey::of(l, &[1.0]));
        let infeasible = |violation: f64| RankKey::of(0.0, &[violation]);
        let feasible = |loss: f64| RankKey::of(loss, &[-1.0]);
        // While none is feasible, a lower violation is a gain (a lower loss is not), and the first
        // feasible point is one whatever its loss: three in a row double the side.
        let won = start.into_iter().chain([infeasible(0.5), infeasible(0.2), feasible(100.0)]);
        assert_eq!(side(won, 6, 5, 1), 2.0 * INITIAL);
        // Lower losses that break a constraint are no gain once a point is feasible: halved.
        let lost = start.into_iter().chain([feasible(100.0)]).chain([RankKey::of(-1.0, &[0.1]); 5]);
        assert_eq!(side(lost, 6, 5, 1), INITIAL / 2.0);
        // Among the start's: the first feasible one counts from there on.
        let start = [RankKey::of(3.0, &[-1.0]), infeasible(2.0), infeasible(1.0)];
        assert_eq!(
            side(start.into_iter().chain([feasible(2.0), feasible(1.0), feasible(0.5)]), 3, 5, 1),
            2.0 * INITIAL
        );
    }

    #[test]
    fn the_box_follows_the_length_scales_and_stays_in_the_cube() {
        use CoordinateKind::{Choices, Continuous};
        // Lengths 0.5 and 2 (inverse squares 4 and 0.25): geometric mean 1, edges side/2 and 2 side.
        let kinds = [Continuous, Continuous, Choices(3)];
        let Bounds { lower, upper } = bounds(&[0.5, 0.9, 1.0], 0.2, &[4.0, 0.25, 1.0], &kinds);
        assert!((upper[0] - lower[0] - 0.1).abs() < 1e-12, "{lower:?} {upper:?}");
        assert!((lower[0] - 0.45).abs() < 1e-12);
        assert!((lower[1] - 0.7).abs() < 1e-12 && upper[1] == 1.0, "clipped at the top: {lower:?} {upper:?}");
        assert_eq!((lower[2], upper[2]), (0.0, 1.0), "a categorical keeps its range");
        // An int (a grid of bins) gets its edge too, reaching at least the bins next to the centre's.
        let kinds = [Continuous, CoordinateKind::Grid(16), CoordinateKind::Grid(4)];
        let centre = [0.5, (5.0 + 0.5) / 16.0, (1.0 + 0.5) / 4.0];
        let Bounds { lower, upper } = bounds(&centre, 0.02, &[1.0, 1.0, 1.0], &kinds);
        assert!((upper[1] - lower[1] - 3.0 / 16.0).abs() < 1e-12, "{lower:?} {upper:?}");
        assert_eq!((lower[2], upper[2]), (0.0, 0.75), "of four bins, the centre's (1) and both neighbours");
        let Bounds { lower, upper } = bounds(&centre, 0.4, &[1.0, 1.0, 1.0], &kinds);
        assert!((upper[1] - lower[1] - 0.4).abs() < 1e-12, "wider than the floor: the side");
        // A degenerate length leaves its coordinate whole.
        let Bounds { lower, upper } = bounds(&[0.5, 0.5], 0.2, &[0.0, 1.0], &[Continuous, Continuous]);
        assert_eq!((lower[0], upper[0]), (0.0, 1.0));
    }
}
