//! The Parzen estimator of Optuna's TPE sampler (Falkner et al.'s BOHB and Optuna 5's
//! `_ParzenEstimator`, read for its rules, not its code): a mixture with one kernel per observation
//! over all the parameters it is given at once, plus a prior kernel spread over the whole space.
//! The multivariate model gives it every parameter, so that the good and the bad densities keep
//! the dependencies between parameters that independent per-parameter densities lose; the
//! univariate model one parameter at a time.
//!
//! Numeric parameters live on their unit interval (as [`crate::propagator::normalized`] maps them: log floats
//! in `ln`, ints in equal bins, so a kernel over `[0, 1]` is Optuna's kernel over `[lo - 0.5, hi +
//! 0.5]` for an int). Each observation's kernel is a normal truncated to `[0, 1]` at the
//! observation, on each parameter as wide as the observation's larger gap to its neighbours on that
//! parameter (Optuna 5's estimator, multivariate or not; older Optuna versions' multivariate one took
//! Scott's rule, one width for all), clipped to `[1/min(100, 1 + kernels), 1]` (Optuna's "magic
//! clip"); the prior kernel sits at 0.5 with width 1. A categorical kernel puts `prior / kernels` on every choice and one
//! more on the observed one, normalized; the prior kernel is uniform. The mixture weighs the
//! observations (older ones less, see [`observation_weights`]) and the prior with weight 1.

use rand::RngExt;

use crate::bayes::stats::normal_cdf;
use crate::rng::PropRng;

/// The prior kernel's weight in the mixture, as Optuna's `prior_weight`.
const PRIOR_WEIGHT: f64 = 1.0;
/// Draws from one kernel before a truncated normal gives up and takes its centre.
const MAX_REJECTIONS: usize = 64;

/// One observation: its unit coordinates (numeric parameters) and choices (categorical ones).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    pub numbers: Vec<f64>,
    pub choices: Vec<usize>,
}

/// The mixture of one group (the good or the bad evaluations).
#[derive(Debug, Clone)]
pub(crate) struct Parzen {
    /// Each kernel's log weight (observations, then the prior), normalized.
    log_weights: Vec<f64>,
    /// Per kernel: its centre on each numeric parameter.
    centres: Vec<Vec<f64>>,
    /// Per kernel: its width on each numeric parameter.
    widths: Vec<Vec<f64>>,
    /// Per kernel, per categorical parameter: the log probability of each choice.
    log_choice: Vec<Vec<Vec<f64>>>,
}

/// Optuna's default weights of `n` observations in the order they were made: 1 each while there
/// are fewer than 25; beyond, the newest 25 weigh 1 and the older ones a ramp from `1/n` up, so
/// that the density follows where the search went.
pub(crate) fn observation_weights(n: usize) -> Vec<f64> {
    const FLAT: usize = 25;
    if n < FLAT {
        return vec![1.0; n];
    }
    let ramp = n - FLAT;
    let start = 1.0 / n as f64;
    let step = if ramp > 1 { (1.0 - start) / (ramp - 1) as f64 } else { 0.0 };
    (0..ramp).map(|k| start + step * k as f64).chain(std::iter::repeat_n(1.0, FLAT)).collect()
}

/// Per numeric parameter `axis`, the widths of `points`' kernels, in their order: the larger gap
/// to its neighbours among the observations, the bounds 0 and 1 counting as neighbours except for
/// the outermost of two or more points, which take their inner gap (Optuna 5's estimator without
/// `consider_endpoints`; the prior's centre is no neighbour).
fn neighbour_widths(points: &[Point], axis: usize) -> Vec<f64> {
    let n = points.len();
    let at_index = |i: usize| points[i].numbers[axis];
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| at_index(a).total_cmp(&at_index(b)).then(a.cmp(&b)));
    let at = |k: usize| at_index(order[k]);
    let mut sorted: Vec<f64> = (0..n)
        .map(|k| {
            let below = if k == 0 { 0.0 } else { at(k - 1) };
            let above = if k + 1 == n { 1.0 } else { at(k + 1) };
            (at(k) - below).max(above - at(k))
        })
        .collect();
    if n >= 2 {
        sorted[0] = at(1) - at(0);
        sorted[n - 1] = at(n - 1) - at(n - 2);
    }
    let mut widths = vec![0.0; n];
    for (k, &i) in order.iter().enumerate() {
        widths[i] = sorted[k];
    }
    widths
}

/// The log density of a normal of centre `mu` and width `sigma` truncated to `[0, 1]`, at `x`.
fn truncated_log_pdf(x: f64, mu: f64, sigma: f64) -> f64 {
    let z = (x - mu) / sigma;
    let mass = normal_cdf((1.0 - mu) / sigma) - normal_cdf(-mu / sigma);
    -0.5 * z * z - 0.5 * (2.0 * std::f64::consts::PI).ln() - sigma.ln() - mass.max(f64::MIN_POSITIVE).ln()
}

/// `ln(sum(exp(terms)))` without overflow.
fn log_sum_exp(terms: impl Iterator<Item = f64> + Clone) -> f64 {
    let top = terms.clone().fold(f64::NEG_INFINITY, f64::max);
    if top == f64::NEG_INFINITY {
        return top;
    }
    top + terms.map(|t| (t - top).exp()).sum::<f64>().ln()
}

impl Parzen {
    /// The mixture of `points` (in the order they were made) over `numbers` numeric parameters
    /// and categorical ones of `choices[c]` choices each.
    pub(crate) fn new(points: &[Point], numbers: usize, choices: &[usize]) -> Parzen {
        let n = points.len();
        let kernels = n + 1;
        let mut weights = observation_weights(n);
        weights.push(PRIOR_WEIGHT);
        let total: f64 = weights.iter().sum();
        let log_weights = weights.iter().map(|w| (w / total).ln()).collect();
        let min_width = 1.0 / (kernels as f64 + 1.0).min(100.0);
        let per_axis: Vec<Vec<f64>> = (0..numbers).map(|axis| neighbour_widths(points, axis)).collect();
        let mut widths: Vec<Vec<f64>> =
            (0..n).map(|i| per_axis.iter().map(|w| w[i].clamp(min_width, 1.0)).collect()).collect();
        widths.push(vec![1.0; numbers]);
        let mut centres: Vec<Vec<f64>> = points.iter().map(|p| p.numbers.clone()).collect();
        centres.push(vec![0.5; numbers]);
        let log_choice = (0..kernels)
            .map(|k| {
                choices
                    .iter()
                    .enumerate()
                    .map(|(c, &m)| {
                        let mut p = vec![PRIOR_WEIGHT / kernels as f64; m];
                        if let Some(point) = points.get(k) {
                            p[point.choices[c]] += 1.0;
                        }
                        let sum: f64 = p.iter().sum();
                        p.iter().map(|q| (q / sum).ln()).collect()
                    })
                    .collect()
            })
            .collect();
        Parzen { log_weights, centres, widths, log_choice }
    }

    /// A draw: a kernel by its weight, then each parameter from it.
    pub(crate) fn sample(&self, rng: &mut PropRng) -> Point {
        let mut u: f64 = rng.random();
        let mut k = self.log_weights.len() - 1;
        for (j, lw) in self.log_weights.iter().enumerate() {
            u -= lw.exp();
            if u < 0.0 {
                k = j;
                break;
            }
        }
        let numbers = self.centres[k]
            .iter()
            .zip(&self.widths[k])
            .map(|(&mu, &sigma)| {
                (0..MAX_REJECTIONS)
                    .map(|_| mu + sigma * crate::space::standard_normal(rng))
                    .find(|x| (0.0..=1.0).contains(x))
                    .unwrap_or(mu)
            })
            .collect();
        let choices = self.log_choice[k]
            .iter()
            .map(|log_p| {
                let mut u: f64 = rng.random();
                log_p
                    .iter()
                    .position(|lp| {
                        u -= lp.exp();
                        u < 0.0
                    })
                    .unwrap_or(log_p.len() - 1)
            })
            .collect();
        Point { numbers, choices }
    }

    /// The mixture's log density at `x`.
    pub(crate) fn log_pdf(&self, x: &Point) -> f64 {
        let per_kernel = (0..self.log_weights.len()).map(|k| {
            let numbers: f64 = x
                .numbers
                .iter()
                .zip(self.centres[k].iter().zip(&self.widths[k]))
                .map(|(&xi, (&mu, &sigma))| truncated_log_pdf(xi, mu, sigma))
                .sum();
            let choices: f64 = x.choices.iter().zip(&self.log_choice[k]).map(|(&c, log_p)| log_p[c]).sum();
            self.log_weights[k] + numbers + choices
        });
        log_sum_exp(per_kernel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;

    #[test]
    fn weights_are_flat_below_25_then_ramp_up_to_the_newest() {
        assert_eq!(observation_weights(3), vec![1.0; 3]);
        let w = observation_weights(30);
        assert_eq!(w.len(), 30);
        assert!((w[0] - 1.0 / 30.0).abs() < 1e-12 && (w[4] - 1.0).abs() < 1e-12, "{w:?}");
        assert!(w.windows(2).all(|p| p[0] <= p[1]) && w[5..].iter().all(|&x| x == 1.0));
    }

    #[test]
    fn a_truncated_normal_integrates_to_one_on_the_unit_interval() {
        for (mu, sigma) in [(0.5, 1.0), (0.0, 0.05), (0.93, 0.2), (1.0, 0.01)] {
            let steps = 20_000;
            let integral: f64 = (0..steps)
                .map(|i| truncated_log_pdf((i as f64 + 0.5) / steps as f64, mu, sigma).exp() / steps as f64)
                .sum();
            assert!((integral - 1.0).abs() < 1e-3, "mu {mu} sigma {sigma}: {integral}");
        }
    }

    /// Two parameters that only matter together (good where x and y agree): the joint kernels
    /// keep that, so draws from the good points' mixture lie near the diagonal, far more than
    /// independent draws of x and y from the same points would.
    #[test]
    fn the_mixture_keeps_what_parameters_do_together_and_its_density_says_where_it_draws() {
        let good: Vec<Point> = (0..20)
            .map(|k| {
                let t = (k as f64 + 0.5) / 20.0;
                Point { numbers: vec![t, t], choices: vec![k % 2] }
            })
            .collect();
        let parzen = Parzen::new(&good, 2, &[3]);
        let mut rng = worker_rng(3, 0);
        let draws: Vec<Point> = (0..2000).map(|_| parzen.sample(&mut rng)).collect();
        assert!(draws.iter().all(|p| p.numbers.iter().all(|x| (0.0..=1.0).contains(x)) && p.choices[0] < 3));
        let near = draws.iter().filter(|p| (p.numbers[0] - p.numbers[1]).abs() < 0.15).count();
        // x of one draw with y of another: what independent densities of x and y would give.
        let apart = draws.windows(2).filter(|p| (p[0].numbers[0] - p[1].numbers[1]).abs() < 0.15).count();
        assert!(near > 1000 && near > apart * 3 / 2, "{near} of 2000 draws near the diagonal, {apart} independent");
        let third = draws.iter().filter(|p| p.choices[0] == 2).count();
        assert!(third < 200, "the unobserved choice drawn {third} times of 2000");
        let on = parzen.log_pdf(&Point { numbers: vec![0.3, 0.3], choices: vec![0] });
        let off = parzen.log_pdf(&Point { numbers: vec![0.3, 0.8], choices: vec![0] });
        assert!(on > off + 2.0, "density on the diagonal {on:.2}, off it {off:.2}");
    }

    #[test]
    fn neighbour_widths_are_the_larger_gap_and_the_outermost_take_their_inner_one() {
        // Second axis: 0.1, 0.2, 0.6, 0.9 between the bounds 0 and 1. First axis: 0.5, 0.45,
        // 0.05, 1.0 (a point on the bound), laid out otherwise.
        let points: Vec<Point> = [(0.5, 0.6), (0.45, 0.1), (0.05, 0.2), (1.0, 0.9)]
            .iter()
            .map(|&(x, y)| Point { numbers: vec![x, y], choices: vec![] })
            .collect();
        let close = |w: &[f64], expected: [f64; 4]| w.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-12);
        let w = neighbour_widths(&points, 1);
        assert!(close(&w, [0.4, 0.1, 0.4, 0.3]), "{w:?}");
        let w = neighbour_widths(&points, 0);
        assert!(close(&w, [0.5, 0.4, 0.4, 0.5]), "{w:?}");
        // A lone point: the larger gap to the bounds.
        let one = neighbour_widths(&points[2..3], 1);
        assert!((one[0] - 0.8).abs() < 1e-12, "{one:?}");
    }

    /// The mixture of five observations of two floats whose kernels are of other widths on x than
    /// on y.
    fn five_in_2d() -> Parzen {
        let observed = [[0.1, 0.7], [0.35, 0.2], [0.8, 0.85], [0.5, 0.5], [0.12, 0.9]];
        let points: Vec<Point> = observed.iter().map(|o| Point { numbers: o.to_vec(), choices: vec![] }).collect();
        Parzen::new(&points, 2, &[])
    }

    /// Five observations in 2-D: the mixture's log density at three points is what Optuna 5.0.0's
    /// `_ParzenEstimator(...).log_pdf` gives on the same observations of two floats in [0, 1]
    /// (prior weight 1, magic clip, no endpoints, its default weights; computed with it on
    /// 2026-11-27), and each axis keeps its own widths.
    #[test]
    fn the_density_is_optuna_5s() {
        let parzen = five_in_2d();
        for (x, optuna) in [([0.2, 0.3], -0.09720668), ([0.9, 0.1], -1.406184), ([0.5, 0.55], -0.12895276)] {
            let ours = parzen.log_pdf(&Point { numbers: x.to_vec(), choices: vec![] });
            assert!((ours - optuna).abs() < 1e-6, "at {x:?}: ours {ours}, Optuna's {optuna}");
        }
        // The first observation: its larger gap on x is to 0.12 (clipped up to 1/7), on y to 0.5.
        assert!((parzen.widths[0][0] - 1.0 / 7.0).abs() < 1e-12 && (parzen.widths[0][1] - 0.2).abs() < 1e-12);
    }

    /// Draws follow the density: on the five observations above, whose kernels are of other
    /// widths on x than on y, the share of draws in a box is the density's mass there.
    #[test]
    fn draws_follow_the_density_axis_by_axis() {
        let parzen = five_in_2d();
        // The upper 0.3 in y: 0.458 of the mass; 0.383 if the draws took x's widths on y and y's on
        // x (what Optuna's mixture gives either way, computed with SciPy's truncated normals).
        let (xs, ys) = ((0.0, 1.0), (0.7, 1.0));
        let steps = 200;
        let cell = (xs.1 - xs.0) * (ys.1 - ys.0) / (steps * steps) as f64;
        let mass: f64 = (0..steps * steps)
            .map(|c| {
                let x = xs.0 + (xs.1 - xs.0) * ((c % steps) as f64 + 0.5) / steps as f64;
                let y = ys.0 + (ys.1 - ys.0) * ((c / steps) as f64 + 0.5) / steps as f64;
                parzen.log_pdf(&Point { numbers: vec![x, y], choices: vec![] }).exp() * cell
            })
            .sum();
        let mut rng = worker_rng(6, 2);
        let n = 20_000;
        let inside = (0..n)
            .map(|_| parzen.sample(&mut rng))
            .filter(|p| (xs.0..xs.1).contains(&p.numbers[0]) && (ys.0..ys.1).contains(&p.numbers[1]))
            .count();
        let share = inside as f64 / n as f64;
        assert!((share - mass).abs() < 0.012, "{share:.4} of the draws in the box, mass {mass:.4}");
    }

    #[test]
    fn with_no_observations_the_prior_alone_is_nearly_uniform() {
        let parzen = Parzen::new(&[], 1, &[]);
        let mut rng = worker_rng(5, 1);
        let mean = (0..4000).map(|_| parzen.sample(&mut rng).numbers[0]).sum::<f64>();
        assert!((mean / 4000.0 - 0.5).abs() < 0.05);
    }
}
