//! Bayesian optimization with a Gaussian process (Jones et al. 1998, Snoek et al. 2012) as a
//! propagator: a process is fitted to the island's evaluated individuals, and the child is the
//! point with the highest expected improvement over the best loss. Unlike TPE, which models each
//! parameter alone, the process sees the parameters together: a learning rate that is good only
//! with a slow decay is found as such, and a loss that keeps falling towards a bound leads the
//! search to that bound.
//!
//! The model (crate::bayes): Optuna 5's GPSampler's. A Matérn-5/2 kernel
//! with a length scale per parameter, its parameters fitted by maximum a posteriori under Optuna's
//! priors; floats and ints on their unit interval (log floats in `ln`, ints at their bins'
//! centres), a categorical as its choice (distance 0 or 1). The acquisition is the logarithm of
//! expected improvement, maximized by local searches (L-BFGS on the floats, a discrete search on
//! ints and categoricals) from the best of many candidates, the island's best point and others
//! drawn by score. The evaluations the island's other workers are running enter the model as
//! fantasies (kriging believer: their predicted loss as if observed, the kernel unchanged), so
//! that the model is sure there and workers breeding at once spread out instead of proposing
//! near-twins. In a conditional space each group of evaluations whose parameters were active
//! together has its own process, and the groups compete for the child (gp/groups.rs). The model
//! before it (`matern: false`: a squared-exponential kernel through the
//! `friedrich` crate, plain expected improvement) was retired on 2026-11-28: at most the default
//! on 4 of 24 BBOB functions (docs/benchmarks/bbob-history.md); a configuration that asks for it
//! is refused, naming how to reuse such a run's evaluations.
//!
//! Losses are standardized and, by default (`warp`, crate::bayes::warp), warped by a power
//! transform fitted by maximum likelihood so that a few huge ones do not make the good ones look
//! alike (HEBO's step; Optuna's GPSampler only standardizes); a failed evaluation (infinite loss)
//! counts as the worst finite loss, so the model learns to avoid its region instead of forgetting
//! it. Candidates: half drawn
//! uniformly from the space, half near the best few individuals (Gaussian steps on the unit
//! interval, reflected at the bounds or, in a share of them, stopped there; a categorical
//! re-drawn now and then), so that the maximum of the acquisition is looked for both everywhere
//! and where it usually is, the boundary included (a uniform draw never lands on it).
//!
//! By default (`trust_region`, super::trust_region) the child is looked for only inside a box
//! around the island's best point that widens while the search improves and narrows while it
//! does not (TuRBO's), under a process fitted to the evaluations near that box alone.
//!
//! It keeps no state: a resumed run breeds from what its checkpoint holds, and workers breeding
//! from one island at once draw different candidates from their own random streams. Until the
//! pool holds `startup` evaluated individuals it samples uniformly. Fitting costs O(n^3) in the
//! individuals it sees, so it fits at most `max_points`: the best half and the latest half.

mod earlier;
mod groups;

pub(crate) use earlier::WhileEarlierAgrees;

use serde::{Deserialize, Serialize};

use super::gp_coordinates::ModelCoordinates;
use super::trust_region;
use crate::bayes::acquisition::{Acquisition, Bounds, CoordinateKind, Feasible, LogEi, grid_point, maximize};
use crate::bayes::matern::MaternGp;
use crate::bayes::stats::standardized;
use crate::bayes::trend::Trended;
use crate::bayes::warp::warped;
use crate::error::{Error, Result};
use crate::individual::{Individual, IndividualId, RankKey};
use crate::propagator::normalized::{ParamAxis, check_same_space, param_axes, reflect_into_unit};
use crate::propagator::{Arity, Pool, Propagator, cmaes};
use crate::rng::PropRng;
use crate::space::{SearchSpace, Value, standard_normal};
use rand::RngExt;

/// The knobs of [`Gp`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpConfig {
    /// Uniform random children until the pool holds this many evaluated individuals (at least 2:
    /// a process needs two points to fit a length scale).
    pub startup: usize,
    /// Candidates scored by expected improvement per child.
    pub candidates: usize,
    /// Improvement below the best loss (in standard deviations of the losses) a candidate must
    /// promise to count: larger explores more.
    pub xi: f64,
    /// Most evaluated individuals the process is fitted to.
    pub max_points: usize,
    /// Share of the local candidates whose steps stop at a bound instead of reflecting from it,
    /// so that a minimum on the boundary (a learning rate at its top) can be proposed exactly.
    /// Absent from a configuration saved before it existed: 0, every step reflected.
    #[serde(default)]
    pub at_bounds: f64,
    /// The Matérn-5/2 model with MAP priors, log EI, local searches and fantasies (the module's
    /// documentation), the only one since 2026-11-28. False: the squared-exponential model,
    /// retired then, which [`Gp::new`] refuses; what a configuration saved before this field
    /// existed reads as, so that a checkpoint bred with that model is refused rather than
    /// continued with another.
    #[serde(default)]
    pub matern: bool,
    /// Local searches of the acquisition per child. Absent from a
    /// configuration saved before it existed: 10.
    #[serde(default = "default_starts")]
    pub starts: usize,
    /// Share of the children bred by TPE (Optuna's default model and settings, its own 10 random
    /// first: [`TpeConfig::default`]) from the same island instead of the process: a portfolio of
    /// the two models, both modelling the island's evaluations, each child by one of them (a worker's k-th child by TPE when
    /// `floor((k + w + 1) s) > floor((k + w) s)`, w its index, so that workers alternate out of
    /// step). Absent from a configuration saved before it existed: 0, the process alone.
    #[serde(default)]
    pub tpe_share: f64,
    /// Warp the losses before the Matérn model fits them (crate::bayes::warp: a Yeo-Johnson power
    /// transform of the standardized losses fitted by maximum likelihood, as HEBO does), so that a
    /// few huge losses do not make the good ones look alike: the default since it measured better
    /// on BBOB. Absent from a configuration saved before it existed: false, the losses
    /// standardized only (Optuna's GPSampler), what those runs bred with.
    #[serde(default)]
    pub warp: bool,
    /// The loss expected improvement is measured from: the lowest loss the fitted process predicts
    /// at an evaluated point (true; "plug-in" EI, Picheny et al. 2013) instead of the lowest
    /// observed one. Where the fit calls part of the losses noise (a rugged loss, a noisy
    /// training), the lowest observed loss is a lucky draw below what the process predicts
    /// anywhere, and improving on it looks possible only where the process knows least: the
    /// corners. Where the fit finds no noise the two agree. Absent from a configuration saved
    /// before it existed: false, the observed loss.
    #[serde(default)]
    pub incumbent_mean: bool,
    /// Hand the island over to CMA-ES once it holds this many evaluations (0: never): the process
    /// breeds the first ones, where a model of every evaluation finds good regions with the fewest
    /// of them, and CMA-ES, started from their best tenth ([`Cmaes::taking_over_after`]), refines
    /// from there at a cost per child that does not grow with the history, as Optuna's
    /// AutoSampler hands its GPSampler's trials over to CmaEsSampler after 250. Int and float
    /// parameters only. Absent from a configuration saved before it existed: 0.
    #[serde(default)]
    pub cmaes_after: usize,
    /// The hand-over's [`CmaesConfig::model_share`]: the probability that its child is the lowest
    /// point of a quadratic model of the latest evaluations. Absent from a configuration saved
    /// before it existed: 0, the CMA-ES those runs handed over to.
    #[serde(default)]
    pub cmaes_model_share: f64,
    /// Probability that a child of the process is instead the lowest point of a quadratic model
    /// of the island's latest evaluations, where that model has just ranked the latest ones
    /// right: CMA-ES's model ([`CmaesConfig::model_share`]) in the frame of the warm start a
    /// hand-over would begin from (the best tenth's spread), so that an ill-conditioned basin the
    /// process's length scales cannot follow is descended at once. Int and float parameters
    /// only: ignored in a space with a categorical one. Absent from a configuration saved before
    /// it existed: 0.
    #[serde(default)]
    pub quadratic_share: f64,
    /// Probability that a child of the process is looked for only inside a trust region around
    /// the island's best point (super::trust_region: TuRBO's box, which widens while the search
    /// improves and narrows while it does not), under a process fitted to the evaluations near the
    /// region alone, instead of in the whole space under the process of all of them. Absent from
    /// a configuration saved before it existed: 0, the whole space.
    #[serde(default)]
    pub trust_region: f64,
    /// In a conditional space, a process per group of evaluations whose parameters were active
    /// together, the groups competing by expected improvement in common units (groups.rs), instead
    /// of one process of all of them whose kernel compares a parameter only where it is active.
    /// Not with constraints (their processes see every evaluation: the one process then).
    /// Absent from a configuration saved before it existed: false, the one process.
    #[serde(default)]
    pub groups: bool,
}

fn default_starts() -> usize {
    10
}

impl Default for GpConfig {
    fn default() -> Self {
        GpConfig {
            startup: 6,
            candidates: 2048,
            xi: 0.0,
            max_points: 200,
            at_bounds: 0.5,
            matern: true,
            starts: default_starts(),
            tpe_share: 0.0,
            warp: true,
            incumbent_mean: false,
            cmaes_after: 0,
            cmaes_model_share: cmaes::MODEL_SHARE,
            quadratic_share: QUADRATIC_SHARE,
            trust_region: TRUST_REGION,
            groups: GROUPS,
        }
    }
}

/// The default [`GpConfig::quadratic_share`].
const QUADRATIC_SHARE: f64 = 0.0;
/// The default [`GpConfig::trust_region`]: every child of the process is looked for in the region
/// (on BBOB in 5-D, counted per batch, at most the whole space's best on 20 of 24 functions over
/// two seeds, docs/benchmarks/bbob.md).
const TRUST_REGION: f64 = 1.0;

/// The default [`GpConfig::groups`]: on the conditional benchmark (three BBOB functions behind a
/// categorical, 24 runs) at most Optuna's grouped TPE on 21 runs, the one process on 12
/// (docs/benchmarks/spaces.md).
const GROUPS: bool = true;

/// A trust region's own process (`Gp::region_fit`): fitted to the evaluations near the region
/// (`kept`: their places among the island's), at `inputs`, with `outputs` standardized among them.
struct RegionFit {
    gp: MaternGp,
    inputs: Vec<Vec<f64>>,
    outputs: Vec<f64>,
    kept: Vec<usize>,
}

/// A point of the process's training set: its values, loss and constraint values.
type TrainingPoint = (Vec<Value>, f64, Vec<f64>);

/// Where a child of the process is looked for: how each coordinate may move (a conditional
/// space's group holds its switches and dormant parameters, groups.rs), and the running
/// evaluations (coded) that enter the process as fantasies.
struct Scope<'a> {
    kinds: &'a [CoordinateKind],
    running: Vec<Vec<f64>>,
}

/// Best individuals around which local candidates are drawn.
const LOCAL_CENTRES: usize = 5;
/// Widest local step, as a fraction of a unit interval; each candidate takes this, 0.3, 0.1 or 0.01
/// times it, so that neighbouring points are tried and a minimum can be refined.
const LOCAL_SIGMA: f64 = 0.15;
/// GP-EI Bayesian optimization over a search space.
#[derive(Debug, Clone)]
pub struct Gp {
    space: SearchSpace,
    axes: Vec<ParamAxis>,
    model: ModelCoordinates,
    config: GpConfig,
}

impl Gp {
    /// GP-EI for `space`, the process alone: the configuration's hand-over to CMA-ES, TPE share
    /// and quadratic model are compositions around it (`PropagatorSpec::build`). Refuses zero
    /// candidates, a negative or non-finite `xi`, an `at_bounds` outside [0, 1], and a
    /// `max_points` below the start or 2.
    pub fn new(space: &SearchSpace, config: GpConfig) -> Result<Self> {
        if config.candidates == 0 {
            return Err(Error::InvalidPropagator("the GP propagator needs at least one candidate".into()));
        }
        if !(config.xi >= 0.0 && config.xi.is_finite()) {
            return Err(Error::InvalidPropagator(format!(
                "the GP propagator's xi must be finite and >= 0, got {}",
                config.xi
            )));
        }
        if !(0.0..=1.0).contains(&config.at_bounds) {
            return Err(Error::InvalidPropagator(format!(
                "the GP propagator's share of steps stopping at bounds must be in [0, 1], got {}",
                config.at_bounds
            )));
        }
        // A process needs two points; a start of 0 or 1 was recorded as given and run as 2.
        if config.startup < 2 {
            return Err(Error::InvalidPropagator(format!(
                "the GP propagator's start must be at least 2 evaluations (a process needs two points), got {}",
                config.startup
            )));
        }
        if config.max_points < config.startup.max(2) {
            return Err(Error::InvalidPropagator(format!(
                "the GP propagator's max points ({}) must be at least its start ({}) and 2",
                config.max_points, config.startup
            )));
        }
        if !config.matern {
            return Err(Error::InvalidPropagator(
                "the GP's squared-exponential model (`--gp-model squared-exp`, and what GP runs recorded before \
                 2026-11-26) was retired on 2026-11-28: on BBOB the default was at most it on 21 of 24 functions \
                 (docs/benchmarks/bbob-history.md). A checkpoint bred with it cannot be resumed; a new run can \
                 start from its evaluations without evaluating them again: --warm-start DIR"
                    .into(),
            ));
        }
        if config.starts == 0 {
            return Err(Error::InvalidPropagator("the GP propagator needs at least one local search start".into()));
        }
        let axes = param_axes(space, "GP")?;
        let model = ModelCoordinates::new(space, &axes);
        crate::propagator::check_probability("the GP propagator's trust-region share", config.trust_region)?;
        Ok(Gp { space: space.clone(), axes, model, config })
    }

    /// A candidate near `centre`: every number moved by a Gaussian step on its unit interval
    /// (reflected at the bounds or, in `at_bounds` of the candidates, stopped there), each
    /// categorical re-drawn with probability 1 / parameters.
    fn near(&self, centre: &[Value], rng: &mut PropRng) -> Vec<Value> {
        let sigma = LOCAL_SIGMA * [1.0, 0.3, 0.1, 0.01][rng.random_range(0..4)];
        let clamp = rng.random::<f64>() < self.config.at_bounds;
        let redraw = 1.0 / self.axes.len() as f64;
        self.axes
            .iter()
            .zip(centre)
            .map(|(axis, v)| match axis {
                ParamAxis::Unit(unit) => {
                    let u = unit.to_unit(&[*v])[0] + sigma * standard_normal(rng);
                    unit.point_at(&[if clamp { u.clamp(0.0, 1.0) } else { reflect_into_unit(u) }])[0]
                }
                ParamAxis::Choices(n) if rng.random::<f64>() < redraw => Value::Cat(rng.random_range(0..*n as u32)),
                ParamAxis::Choices(_) => *v,
            })
            .collect()
    }

    /// The individuals the process is fitted to, with their losses (failures as the worst finite
    /// one) and constraint values (none for failures), or `None` while fewer than `startup`
    /// evaluations have a finite loss.
    fn training_set(&self, pool: &dyn Pool) -> Option<Vec<TrainingPoint>> {
        // One pass: how many finite losses, and the worst of them (what failures stand in with).
        let (finite, worst) = pool
            .iter_all()
            .map(|i| i.loss)
            .filter(|l| l.is_finite())
            .fold((0usize, f64::NEG_INFINITY), |(n, worst), l| (n + 1, worst.max(l)));
        if finite < self.config.startup.max(2) {
            return None;
        }
        let point =
            |i: &Individual| (i.values.clone(), if i.loss.is_finite() { i.loss } else { worst }, i.constraints.clone());
        if pool.size() <= self.config.max_points {
            return Some(pool.iter_all().map(point).collect());
        }
        // The best half of the cap, then the latest of the others, latest first.
        let best = pool.best(self.config.max_points / 2);
        let chosen: std::collections::HashSet<IndividualId> = best.iter().map(|i| i.id).collect();
        let keep = self.config.max_points - best.len();
        let latest = pool.iter_latest_bred().filter(|i| !chosen.contains(&i.id)).take(keep).map(point);
        Some(best.iter().map(point).chain(latest).collect())
    }
}

impl Propagator for Gp {
    fn name(&self) -> &'static str {
        "GP"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }
    fn models_running(&self) -> bool {
        true
    }
    fn propagate(&self, pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        check_same_space(&self.space, space, "GP")?;
        let Some(mut told) = self.training_set(pool) else {
            return Ok(vec![Individual::new(space.sample(rng))]);
        };
        // Best first: the local candidates are drawn around the head. With constraints, feasible
        // ones first, then by violation ([`Individual::rank_key`]).
        told.sort_by_key(|(_, loss, constraints)| RankKey::of(*loss, constraints));
        let constraints: Vec<Vec<f64>> = told.iter_mut().map(|t| std::mem::take(&mut t.2)).collect();
        let told: Vec<(Vec<Value>, f64)> = told.into_iter().map(|(v, l, _)| (v, l)).collect();
        let losses: Vec<f64> = told.iter().map(|(_, l)| *l).collect();
        let outputs = if self.config.warp { warped(&losses) } else { standardized(&losses) };
        let constrained = constraints.iter().any(|c| !c.is_empty());
        if self.config.groups
            && !constrained
            && let Some(child) = self.grouped_child(&told, pool, rng)
        {
            return Ok(vec![Individual::new(child)]);
        }
        let centres = &told[..told.len().min(LOCAL_CENTRES)];
        let candidates: Vec<Vec<Value>> = (0..self.config.candidates)
            .map(|k| {
                if k % 2 == 0 {
                    space.sample(rng)
                } else {
                    self.near(&centres[rng.random_range(0..centres.len())].0, rng)
                }
            })
            .collect();
        let running: Vec<Vec<f64>> = pool
            .iter_running()
            .filter(|i| self.space.contains(&i.values))
            .map(|i| self.model.encode(&i.values))
            .collect();
        let scope = Scope { kinds: self.model.kinds(), running };
        let child = self.matern_child(&scope, &told, &constraints, outputs, pool, &candidates, rng);
        // The model is refused only broken data (the losses are finite here): a uniform draw.
        Ok(vec![Individual::new(child.unwrap_or_else(|| space.sample(rng)))])
    }
}

impl Gp {
    /// The trust region of this child, with `trust_region`'s probability: its box around `centre`
    /// and the box twice its side (whose evaluations the region's process is fitted to); the side
    /// replayed from the island's evaluations in breeding order, the edges shaped by `fitted`'s
    /// length scales.
    fn trust_region(
        &self,
        kinds: &[CoordinateKind],
        pool: &dyn Pool,
        centre: &[f64],
        fitted: &MaternGp,
        rng: &mut PropRng,
    ) -> Option<(Bounds, Bounds)> {
        let share = self.config.trust_region;
        if !(share > 0.0 && (share >= 1.0 || rng.random::<f64>() < share)) {
            return None;
        }
        // Ranked as the island ranks them: with constraints, feasibility first (SCBO's successes).
        let latest: Vec<RankKey> = pool.iter_latest_bred().map(Individual::rank_key).collect();
        // The island's workers breed a batch at a time: this child and the evaluations running.
        let batch = pool.iter_running().count() + 1;
        let side = trust_region::side(latest.into_iter().rev(), self.config.startup, kinds.len(), batch);
        let lengths = &fitted.hyper().inverse_squared_lengths;
        Some((
            trust_region::bounds(centre, side, lengths, kinds),
            trust_region::bounds(centre, 2.0 * side, lengths, kinds),
        ))
    }

    /// TuRBO's model is the region's own: the process of the evaluations in `near` (`told`'s,
    /// coded as `inputs`), their losses standardized among themselves, so that the spread of the
    /// losses far away does not make the good ones the region holds look alike (the global warp
    /// flattened them, measured on BBOB's f6). Not warped: near the best point the losses have no
    /// long tail to pull in, and a local warp measured worse on BBOB (docs/benchmarks/bbob.md).
    /// Also which of `inputs` those are. `None` (the process of all of them stays) when `near`
    /// holds fewer than twice the coordinates or the start's count, or all of them.
    fn region_fit(
        &self,
        kinds: &[CoordinateKind],
        told: &[(Vec<Value>, f64)],
        inputs: &[Vec<f64>],
        near: &Bounds,
        global: &MaternGp,
    ) -> Option<RegionFit> {
        let local: Vec<usize> = (0..inputs.len()).filter(|&k| near.contains(&inputs[k], kinds)).collect();
        if local.len() < (2 * kinds.len()).max(self.config.startup) || local.len() == inputs.len() {
            return None;
        }
        let outputs = standardized(&local.iter().map(|&k| told[k].1).collect::<Vec<f64>>());
        let inputs: Vec<Vec<f64>> = local.iter().map(|&k| inputs[k].clone()).collect();
        // From the whole island's kernel: the region's is a refinement of it (fewer steps).
        let fitted = MaternGp::fit_from(self.model.coordinates(), inputs.clone(), outputs.clone(), global.hyper())?;
        Some(RegionFit { gp: fitted, inputs, outputs, kept: local })
    }

    /// The point with the highest log expected improvement under the Matérn model, with the
    /// island's running evaluations as fantasies.
    #[allow(clippy::too_many_arguments)]
    fn matern_child(
        &self,
        scope: &Scope,
        told: &[(Vec<Value>, f64)],
        constraints: &[Vec<f64>],
        mut outputs: Vec<f64>,
        pool: &dyn Pool,
        candidates: &[Vec<Value>],
        rng: &mut PropRng,
    ) -> Option<Vec<Value>> {
        let mut inputs: Vec<Vec<f64>> = told.iter().map(|(v, _)| self.model.encode(v)).collect();
        // Not bred again: what was evaluated and what is running (acquisition::maximize).
        let taken: Vec<Vec<f64>> = inputs.iter().chain(&scope.running).cloned().collect();
        // Fitted to all the losses even in a trust region: its length scales shape the region.
        let mut fitted = MaternGp::fit(self.model.coordinates(), inputs.clone(), outputs.clone())?;
        let kinds = scope.kinds;
        // Constraints the evaluations measured: a process per constraint, and the trust region
        // stays, as SCBO's. In a conditional space the region stays too: leaving it out measured
        // no better (docs/benchmarks/spaces.md).
        let constrained = constraints.iter().any(|c| !c.is_empty());
        let mut constraints = constraints.to_vec();
        // told is sorted best first (feasible first): the region's centre is the island's best
        // point, the least violating one while none is feasible (SCBO's centre).
        let region = self.trust_region(kinds, pool, &inputs[0], &fitted, rng);
        if let Some((_, near)) = &region
            && let Some(local) = self.region_fit(kinds, told, &inputs, near, &fitted)
        {
            constraints = local.kept.iter().map(|&k| std::mem::take(&mut constraints[k])).collect();
            (fitted, inputs, outputs) = (local.gp, local.inputs, local.outputs);
        }
        // The constraints' processes are the region's too, as the loss's: fitted to the whole
        // island, a constraint of values from -1e5 to 2 was modelled too coarsely to tell the
        // sides of its bound apart near the best point (children hugged it from outside).
        let feasibility = if constrained { self.constraint_models(&inputs, &constraints) } else { Vec::new() };
        let feasible: Vec<bool> = constraints.iter().map(|c| c.iter().all(|v| *v <= 0.0)).collect();
        let running = scope.running.clone();
        let best = outputs.iter().copied().fold(f64::INFINITY, f64::min);
        // What improvement is measured from (the fantasies below are capped at the observed best);
        // with constraints, the best feasible output (infinite while there is none).
        let incumbent = if constrained {
            outputs.iter().zip(&feasible).filter(|(_, f)| **f).map(|(o, _)| *o).fold(f64::INFINITY, f64::min)
        } else if self.config.incumbent_mean {
            fitted.means_at_points().into_iter().fold(f64::INFINITY, f64::min)
        } else {
            best
        };
        let gp = if running.is_empty() {
            fitted
        } else {
            // Kriging believer, capped: each running point as if it had returned the loss predicted
            // there, but none better than the island's best. The model is then sure of it and sees
            // nothing to gain there or right beside it (so workers breeding at once do not propose
            // near-twins), while the incumbent stays what was observed (lowering it to a predicted
            // improvement sent the search to the corners, measured on BBOB).
            let believed = running.iter().map(|x| fitted.predict(x).0.max(best));
            outputs.extend(believed);
            inputs.extend(running);
            MaternGp::with_hyper(self.model.coordinates(), fitted.hyper().clone(), inputs, outputs)?
        };
        let best = incumbent - self.config.xi;
        let mut coded: Vec<Vec<f64>> = candidates.iter().map(|c| self.model.encode(c)).collect();
        // The island's best point starts a local search too (told is sorted best first).
        let warm = [gp.points()[0].clone()];
        let bounds = match region {
            Some((bounds, _)) => {
                in_region(&mut coded, &bounds, kinds);
                bounds
            }
            None => Bounds::unit(kinds.len()),
        };
        let acquisition = LogEi { gp: &gp, best };
        Some(if constrained {
            // Expected improvement over the best feasible point times the probability that the
            // constraints hold; before any point is feasible, that probability alone.
            let objective = incumbent.is_finite().then_some(acquisition);
            let feasible = Feasible { objective, constraints: feasibility.iter().map(|(m, t)| (m, *t)).collect() };
            let x = maximize(&feasible, kinds, &bounds, &coded, &warm, self.config.starts, &taken, rng);
            self.new_configuration(&x, &feasible, &coded, told, pool)
        } else {
            let x = maximize(&acquisition, kinds, &bounds, &coded, &warm, self.config.starts, &taken, rng);
            self.new_configuration(&x, &acquisition, &coded, told, pool)
        })
    }

    /// The configuration `x` stands for, or, where that configuration was evaluated or is running,
    /// the candidate of `coded` of the highest `acquisition` whose configuration is new. Points
    /// apart in the model's coordinates can be one configuration (an int's bin, a parameter
    /// inactive there): with constraints, in a conditional space with its optimum in a corner,
    /// the search bred one configuration 15 times in 40 (a deterministic training learns nothing
    /// from a repeat).
    fn new_configuration(
        &self,
        x: &[f64],
        acquisition: &impl Acquisition,
        coded: &[Vec<f64>],
        told: &[(Vec<Value>, f64)],
        pool: &dyn Pool,
    ) -> Vec<Value> {
        let child = self.model.decode(x);
        let space = &self.space;
        let seen = |v: &[Value]| {
            let same =
                |t: &[Value]| space.active_values(t).map(|(_, _, a)| a).eq(space.active_values(v).map(|(_, _, b)| b));
            told.iter().any(|(t, _)| same(t)) || pool.iter_running().any(|r| same(&r.values))
        };
        if !seen(&child) {
            return child;
        }
        let scores: Vec<f64> =
            acquisition.values(coded).into_iter().map(|v| if v.is_nan() { f64::NEG_INFINITY } else { v }).collect();
        let mut order: Vec<usize> = (0..coded.len()).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        order.into_iter().map(|k| self.model.decode(&coded[k])).find(|v| !seen(v)).unwrap_or(child)
    }

    /// One process per constraint, fitted to its values standardized at the `inputs` that
    /// measured every constraint, with the bound 0 in the same units: (process, bound). Around a
    /// plane where the values' evidence asks for one (`bayes::trend`): near its bound a
    /// constraint is close to a plane, which places the bound from a few points (bbob-constrained
    /// instance 1: at most the better of Optuna's GP and TPE on 26 of 29 functions, against 21
    /// with a constant mean; docs/benchmarks/spaces.md).
    fn constraint_models(&self, inputs: &[Vec<f64>], constraints: &[Vec<f64>]) -> Vec<(Trended, f64)> {
        let count = constraints.iter().map(Vec::len).max().unwrap_or(0);
        let rows: Vec<usize> = (0..constraints.len()).filter(|&i| constraints[i].len() == count).collect();
        if rows.len() < 2 {
            return Vec::new();
        }
        (0..count)
            .filter_map(|k| {
                // The bound goes through the same standardization as the values.
                let mut values: Vec<f64> = rows.iter().map(|&i| constraints[i][k]).collect();
                values.push(0.0);
                let mut scaled = standardized(&values);
                let bound = scaled.pop().expect("the bound was pushed");
                let xs = rows.iter().map(|&i| inputs[i].clone()).collect();
                Trended::fit(self.model.coordinates(), xs, scaled).map(|gp| (gp, bound))
            })
            .collect()
    }
}

/// The candidates' continuous and int coordinates (by `kinds`) moved into `bounds`: the uniform
/// candidates (even indices) spread over the box as they were over the cube, the local ones (odd,
/// drawn near the best points, the box's centre among them) stopped at its edges; an int's value
/// then the nearest bin centre in the box.
fn in_region(coded: &mut [Vec<f64>], bounds: &Bounds, kinds: &[CoordinateKind]) {
    for (k, x) in coded.iter_mut().enumerate() {
        for (j, v) in x.iter_mut().enumerate() {
            let (lo, hi) = (bounds.lower[j], bounds.upper[j]);
            let moved = if k % 2 == 0 { lo + *v * (hi - lo) } else { v.clamp(lo, hi) };
            match kinds[j] {
                CoordinateKind::Continuous => *v = moved,
                CoordinateKind::Grid(n) => {
                    // The bins whose centres lie in the box (the centre's always does).
                    let first = (lo * n as f64 - 0.5 - 1e-9).ceil().max(0.0);
                    let last = (hi * n as f64 - 0.5 + 1e-9).floor().min(n as f64 - 1.0);
                    let bin = (moved * n as f64 - 0.5).round().clamp(first, last.max(first));
                    *v = grid_point(bin as usize, n);
                }
                CoordinateKind::Choices(_) | CoordinateKind::Held => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propagator::WithPeers;
    use crate::propagator::{Breeder, Cmaes, CmaesConfig, Portfolio, PropagatorSpec, Tpe, TpeConfig};
    use crate::rng::worker_rng;

    /// The GP `config` composes (its hand-over, portfolio and quadratic model around the process).
    fn composed(s: &SearchSpace, config: GpConfig) -> Box<dyn Propagator> {
        PropagatorSpec::Gp(config).build(s).unwrap()
    }

    fn with_loss(values: Vec<Value>, loss: f64) -> Individual {
        let mut i = Individual::new(values);
        i.loss = loss;
        i
    }

    /// An evaluation at (x, y) = `v` of `loss` with one constraint, `g` its place in breeding
    /// order.
    fn measured(
        v: &[Value],
        g: u64,
        loss: impl Fn(f64, f64) -> f64,
        constraint: impl Fn(f64, f64) -> f64,
    ) -> Individual {
        let (x, y) = (v[0].as_f64(), v[1].as_f64());
        let mut i = with_loss(v.to_vec(), loss(x, y));
        i.constraints = vec![constraint(x, y)];
        i.id.generation = g;
        i
    }

    /// `n` uniform draws from `s` evaluated by `loss` (which may draw noise from the same stream),
    /// each a generation later than the one before: a pool in breeding order.
    fn sampled_in_order(
        s: &SearchSpace,
        n: u64,
        rng: &mut PropRng,
        mut loss: impl FnMut(&[Value], &mut PropRng) -> f64,
    ) -> Vec<Individual> {
        (0..n)
            .map(|g| {
                let v = s.sample(rng);
                let l = loss(&v, rng);
                let mut i = with_loss(v, l);
                i.id.generation = g;
                i
            })
            .collect()
    }

    fn space() -> SearchSpace {
        SearchSpace::builder()
            .log_float("lr", 1e-4, 1e-2)
            .float("gamma", 0.5, 0.999)
            .int("layers", 2, 10)
            .categorical("act", &["relu", "sigmoid", "tanh"])
            .build()
            .unwrap()
    }

    /// The CNN search's shape: chance (2.3) almost everywhere, falling only where the learning rate
    /// nears its upper bound, more so with a slow decay, few layers and tanh.
    fn loss(v: &[Value]) -> f64 {
        let lr = (v[0].as_f64().log10() + 4.0) / 2.0; // 0 .. 1
        let steps = lr.powi(4) * (1.0 + v[1].as_f64());
        let depth = (v[2].as_f64() - 2.0) / 8.0;
        let act = if v[3] == Value::Cat(2) { 0.0 } else { 0.3 };
        2.3 - 0.8 * steps * (1.0 - 0.5 * depth) + act * steps
    }

    #[test]
    fn samples_uniformly_until_the_start_is_evaluated() {
        let s = space();
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let mut rng = worker_rng(3, 0);
        let evaluated = |rng: &mut PropRng| {
            let v = s.sample(rng);
            let l = loss(&v);
            with_loss(v, l)
        };
        // Five finite losses and a failure: below the start of 6, so no model and uniform draws.
        let mut pool: Vec<Individual> = (0..5).map(|_| evaluated(&mut rng)).collect();
        pool.push(with_loss(s.sample(&mut rng), f64::INFINITY));
        assert!(gp.training_set(&pool).is_none());
        let mut six = pool.clone();
        six.push(evaluated(&mut rng));
        assert_eq!(gp.training_set(&six).map(|t| t.len()), Some(7), "six finite and the failure");
        let lrs: Vec<f64> =
            (0..200).map(|_| gp.propagate(&pool, &s, &mut rng).unwrap()[0].values[0].as_f64()).collect();
        let high = lrs.iter().filter(|&&lr| lr > 1e-3).count();
        assert!((70..=130).contains(&high), "{high} of 200 uniform draws above the middle of the log range");
    }

    #[test]
    fn finds_the_corner_a_flat_loss_hides_and_its_children_beat_random_ones() {
        let s = space();
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let mut rng = worker_rng(11, 0);
        // A sequential search of 30 evaluations, as one worker would run it.
        let mut pool: Vec<Individual> = Vec::new();
        for _ in 0..30 {
            let child = gp.propagate(&pool, &s, &mut rng).unwrap().remove(0);
            assert!(s.contains(&child.values));
            let l = loss(&child.values);
            pool.push(with_loss(child.values, l));
        }
        let best = pool.iter().map(|i| i.loss).fold(f64::INFINITY, f64::min);
        // Random search's best of 30 on this loss: measured over 200 seeds, median 1.92.
        let random_best = |seed: u64| {
            let mut r = worker_rng(seed, 0);
            (0..30).map(|_| loss(&s.sample(&mut r))).fold(f64::INFINITY, f64::min)
        };
        let mut randoms: Vec<f64> = (0..51).map(random_best).collect();
        randoms.sort_by(f64::total_cmp);
        assert!(best < randoms[25] - 0.2, "GP best {best:.3}, random median best {:.3}", randoms[25]);
        // The optimum: lr at its bound, gamma near its bound, 2 layers, tanh (loss 0.70).
        assert!(best < 1.2, "GP best {best:.3}");
    }

    /// With constraints, in a conditional space whose optimum lies in a corner (the top of `lr`,
    /// no momentum, one layer), a child that repeats an evaluated configuration is replaced by a new
    /// one: it bred the corner 15 times in 40.
    #[test]
    fn a_constrained_conditional_search_breeds_each_configuration_once() {
        let s = SearchSpace::builder()
            .categorical("optimizer", &["sgd", "adam", "adadelta"])
            .log_float("lr", 1e-4, 1e-1)
            .float("momentum", 0.0, 0.99)
            .when("optimizer", &["sgd"])
            .categorical("betas", &["default", "custom"])
            .when("optimizer", &["adam"])
            .float("beta2", 0.9, 0.9999)
            .when("betas", &["custom"])
            .int("layers", 1, 5)
            .build()
            .unwrap();
        let loss = |v: &[Value]| {
            let momentum = if v[0] == Value::Cat(0) { v[2].as_f64() } else { 0.5 };
            v[1].as_f64().log10().powi(2) + v[5].as_f64() + momentum
        };
        let gp = composed(&s, GpConfig::default());
        let mut rng = worker_rng(0, 0);
        let mut pool: Vec<Individual> = Vec::new();
        let active = |v: &[Value]| s.active_values(v).map(|(i, _, x)| (i, x)).collect::<Vec<_>>();
        for g in 0..40 {
            let child = gp.propagate(&pool, &s, &mut rng).unwrap().remove(0);
            assert!(!pool.iter().any(|i| active(&i.values) == active(&child.values)), "child {g}: {:?}", child.values);
            let mut ind = with_loss(child.values.clone(), loss(&child.values));
            ind.constraints = vec![child.values[5].as_f64() - 3.0];
            pool.push(ind);
        }
    }

    /// With the optimum in a corner of the space (every coordinate at a bound), the search
    /// presses into it and, the process finding some noise, promised improvement at its best point
    /// itself: it bred that configuration again and again. Now each child is new.
    #[test]
    fn a_search_pressed_into_a_corner_never_breeds_an_evaluated_configuration_again() {
        let s = space();
        let gp = composed(&s, GpConfig::default());
        let mut rng = worker_rng(4, 0);
        let mut pool: Vec<Individual> = Vec::new();
        for g in 0..60 {
            let child = gp.propagate(&pool, &s, &mut rng).unwrap().remove(0);
            assert!(!pool.iter().any(|i| i.values == child.values), "child {g} repeats {:?}", child.values);
            let l = loss(&child.values);
            pool.push(with_loss(child.values, l));
        }
        let best = pool.iter().map(|i| i.loss).fold(f64::INFINITY, f64::min);
        assert!(best < 1.0, "still finds the corner: {best:.3}");
    }

    #[test]
    fn an_ints_candidates_move_into_the_box_at_its_bins() {
        let kinds = [CoordinateKind::Grid(16), CoordinateKind::Continuous];
        // Bins 4 to 7 of 16 (centres 4.5/16 .. 7.5/16) lie in [0.25, 0.5].
        let bounds = Bounds { lower: vec![0.25, 0.2], upper: vec![0.5, 0.4] };
        let mut rng = worker_rng(2, 0);
        let mut coded: Vec<Vec<f64>> =
            (0..200).map(|_| vec![grid_point(rng.random_range(0..16), 16), rng.random()]).collect();
        in_region(&mut coded, &bounds, &kinds);
        let mut bins = std::collections::BTreeSet::new();
        for x in &coded {
            let bin = x[0] * 16.0 - 0.5;
            assert!((bin - bin.round()).abs() < 1e-9 && bounds.contains(x, &kinds), "{x:?}");
            bins.insert(bin.round() as i64);
        }
        assert_eq!(bins.into_iter().collect::<Vec<_>>(), vec![4, 5, 6, 7], "every bin of the box, none beyond");
    }

    #[test]
    fn local_steps_stop_at_the_bounds_in_their_share_and_reflect_otherwise() {
        let s = space();
        let top = vec![Value::Float(1e-2), Value::Float(0.999), Value::Int(10), Value::Cat(0)];
        let at_top = |share: f64| {
            let gp = Gp::new(&s, GpConfig { at_bounds: share, ..GpConfig::default() }).unwrap();
            let mut rng = worker_rng(4, 0);
            (0..2000).filter(|_| gp.near(&top, &mut rng)[0] == Value::Float(1e-2)).count()
        };
        // From the top, half the steps go up: stopped there in the share asked for (plus the
        // smallest steps, which round back), reflected below it otherwise.
        let (none, half, all) = (at_top(0.0), at_top(0.5), at_top(1.0));
        assert!(none < 20, "{none} of 2000 at the bound without stopping");
        assert!((400..=600).contains(&half), "{half} of 2000 at the bound with half stopping");
        assert!((900..=1100).contains(&all), "{all} of 2000 at the bound with all stopping");
    }

    #[test]
    fn failed_evaluations_count_as_the_worst_and_large_pools_are_capped() {
        let s = space();
        let gp = Gp::new(&s, GpConfig { max_points: 20, ..GpConfig::default() }).unwrap();
        let mut rng = worker_rng(5, 0);
        let mut pool: Vec<Individual> = (0..40)
            .map(|_| {
                let v = s.sample(&mut rng);
                let l = loss(&v);
                with_loss(v, l)
            })
            .collect();
        pool.push(with_loss(s.sample(&mut rng), f64::INFINITY));
        // Each breeds after the one before: the latest are the last ones pushed.
        for (k, i) in pool.iter_mut().enumerate() {
            i.id.generation = k as u64;
        }
        let told = gp.training_set(&pool).unwrap();
        assert_eq!(told.len(), 20);
        assert!(told.iter().all(|(_, l, _)| l.is_finite()));
        // The failure, bred last, is among the latest and counts as the worst finite loss.
        let worst = pool.iter().map(|i| i.loss).filter(|l| l.is_finite()).fold(f64::MIN, f64::max);
        let failed = &pool.last().unwrap().values;
        assert_eq!(told.iter().find(|(v, _, _)| v == failed).map(|(_, l, _)| *l), Some(worst));
        // The latest 10 (the failure and the 9 bred before it) are in, whatever their losses.
        for i in &pool[31..] {
            assert!(told.iter().any(|(v, _, _)| *v == i.values), "a latest individual is missing");
        }
        // The best 10 of the pool are all in it.
        let mut losses: Vec<f64> = pool.iter().map(|i| i.loss).collect();
        losses.sort_by(f64::total_cmp);
        for l in &losses[..10] {
            assert!(told.iter().any(|(_, t, _)| t == l), "best loss {l} missing");
        }
        let child = gp.propagate(&pool, &s, &mut rng).unwrap().remove(0);
        assert!(s.contains(&child.values));
    }

    #[test]
    fn the_child_does_not_depend_on_the_losses_scale_up_to_the_largest_floats() {
        let s = space();
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let mut rng = worker_rng(21, 0);
        let pool: Vec<Individual> = (0..12)
            .map(|_| {
                let v = s.sample(&mut rng);
                let l = loss(&v);
                with_loss(v, l)
            })
            .collect();
        let scaled = |factor: f64| -> Vec<Individual> {
            pool.iter().map(|i| with_loss(i.values.clone(), i.loss * factor)).collect()
        };
        let child = |pool: &Vec<Individual>| gp.propagate(pool, &s, &mut worker_rng(22, 0)).unwrap().remove(0).values;
        let plain = child(&pool);
        // Losses near 1e300 (their squares overflow): the same model up to rounding, so the same
        // child from the same random stream (the local searches may end a rounding apart); a
        // uniform draw would differ.
        let coded = |v: &[Value]| gp.model.encode(v);
        for factor in [1e300 / 2.3, 1e-300] {
            let scaled_child = child(&scaled(factor));
            let apart = coded(&scaled_child).iter().zip(coded(&plain)).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(apart < 1e-6, "{scaled_child:?} against {plain:?}");
        }
        assert_ne!(s.sample(&mut worker_rng(22, 0)), plain, "the child is not the stream's first uniform draw");
    }

    #[test]
    fn degenerate_losses_still_give_a_child_in_the_space() {
        let s = space();
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let mut rng = worker_rng(9, 0);
        let same_point = s.sample(&mut rng);
        let pools: [Vec<Individual>; 4] = [
            // All equal: no spread to standardize by.
            (0..10).map(|_| with_loss(s.sample(&mut rng), 1.0)).collect(),
            // Near the largest float: the spread overflows.
            (0..10).map(|k| with_loss(s.sample(&mut rng), f64::MAX / (k + 1) as f64)).collect(),
            // One point evaluated over and over.
            (0..10).map(|k| with_loss(same_point.clone(), k as f64)).collect(),
            // Mostly failures, two finite.
            (0..10).map(|k| with_loss(s.sample(&mut rng), if k < 8 { f64::INFINITY } else { k as f64 })).collect(),
        ];
        for pool in &pools {
            let child = gp.propagate(pool, &s, &mut rng).unwrap().remove(0);
            assert!(s.contains(&child.values), "{child:?}");
        }
    }

    #[test]
    fn a_configuration_saved_before_the_matern_model_reads_as_it_ran_and_is_refused() {
        let old = r#"{"startup": 6, "candidates": 1000, "xi": 0.01, "max_points": 200}"#;
        let config: GpConfig = serde_json::from_str(old).unwrap();
        let legacy = GpConfig {
            startup: 6,
            candidates: 1000,
            xi: 0.01,
            max_points: 200,
            at_bounds: 0.0,
            matern: false,
            starts: 10,
            tpe_share: 0.0,
            warp: false,
            incumbent_mean: false,
            cmaes_after: 0,
            cmaes_model_share: 0.0,
            quadratic_share: 0.0,
            trust_region: 0.0,
            groups: false,
        };
        assert_eq!(config, legacy);
        // Its model is retired: refused, naming the way to reuse the run's evaluations.
        let e = Gp::new(&space(), config).unwrap_err().to_string();
        assert!(e.contains("retired") && e.contains("--warm-start"), "{e}");
        // A setting of the retired kernel in an old configuration is read and left aside.
        let kernel =
            r#"{"startup": 6, "candidates": 1000, "xi": 0.01, "max_points": 200, "per_axis": true, "matern": true}"#;
        assert!(Gp::new(&space(), serde_json::from_str(kernel).unwrap()).is_ok());
        let now = serde_json::to_string(&GpConfig::default()).unwrap();
        assert_eq!(serde_json::from_str::<GpConfig>(&now).unwrap(), GpConfig::default());
    }

    #[test]
    fn a_trusted_quadratic_model_proposes_an_ill_conditioned_basins_minimum() {
        // A 5-D ellipsoid of condition 1e4 along the diagonal directions, minimum at 0.3 in
        // every coordinate, off the centre: what per-axis length scales follow badly.
        let s = (0..5).fold(SearchSpace::builder(), |b, i| b.float(&format!("x{i}"), 0.0, 1.0)).build().unwrap();
        let loss = |x: &[f64]| -> f64 {
            let d: Vec<f64> = x.iter().map(|v| v - 0.3).collect();
            let along: f64 = d.iter().sum::<f64>() / 5f64.sqrt();
            let across: f64 = d.iter().map(|v| v * v).sum::<f64>() - along * along;
            1e4 * along * along + across
        };
        let pool = sampled_in_order(&s, 60, &mut worker_rng(8, 0), |v, _| {
            loss(&v.iter().map(|v| v.as_f64()).collect::<Vec<_>>())
        });
        let best = pool.iter().map(|i| i.loss).fold(f64::INFINITY, f64::min);
        let always = GpConfig { quadratic_share: 1.0, ..GpConfig::default() };
        let child = composed(&s, always).propagate(&pool, &s, &mut worker_rng(9, 0)).unwrap().remove(0);
        let modelled = loss(&child.values.iter().map(|v| v.as_f64()).collect::<Vec<_>>());
        // The quadratic is exact here: the child is the minimum, or as near it as the trust
        // region around the best tenth reaches; far below the island's best either way.
        assert!(modelled < best * 1e-3, "{modelled} against the best {best}");
        // A categorical parameter turns the model off without an error: the process alone breeds
        // (and draws nothing for the model); a share outside [0, 1] is refused.
        let mixed = space();
        let pool = sampled_in_order(&mixed, 20, &mut worker_rng(8, 0), |v, _| self::loss(v));
        let breed = |config: GpConfig| {
            composed(&mixed, config).propagate(&pool, &mixed, &mut worker_rng(9, 0)).unwrap().remove(0).values
        };
        assert_eq!(breed(GpConfig { quadratic_share: 1.0, ..GpConfig::default() }), breed(GpConfig::default()));
        let e = PropagatorSpec::Gp(GpConfig { quadratic_share: 1.5, ..GpConfig::default() })
            .build(&s)
            .unwrap_err()
            .to_string();
        assert!(e.contains("quadratic share"), "{e}");
    }

    #[test]
    fn the_fits_incumbent_keeps_a_noisy_search_near_its_good_region() {
        // A bowl centred in the square, each evaluation off it by up to 0.4 at random: the fit
        // calls that noise, and the lowest observed loss is a lucky draw below the bowl.
        let s = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        let pool = sampled_in_order(&s, 40, &mut worker_rng(21, 0), |v, rng| {
            let (x, y) = (v[0].as_f64(), v[1].as_f64());
            let jitter = 0.8 * (rng.random::<f64>() - 0.5);
            2.0 * ((x - 0.5).powi(2) + (y - 0.5).powi(2)) + jitter
        });
        // In the whole space: a trust region would keep both near the best point.
        let from_centre = |incumbent_mean: bool| -> Vec<f64> {
            let gp = Gp::new(&s, GpConfig { incumbent_mean, trust_region: 0.0, ..GpConfig::default() }).unwrap();
            (0..6)
                .map(|seed| {
                    let child = gp.propagate(&pool, &s, &mut worker_rng(seed, 1)).unwrap().remove(0);
                    ((child.values[0].as_f64() - 0.5).powi(2) + (child.values[1].as_f64() - 0.5).powi(2)).sqrt()
                })
                .collect()
        };
        let (observed, mean) = (from_centre(false), from_centre(true));
        let near = |d: &[f64]| d.iter().filter(|&&r| r < 0.3).count();
        // Improving on the lucky draw looks possible only where the fit knows least, at the edges;
        // on the fit's own best, near the bowl's bottom.
        assert!(near(&mean) >= 5, "the fit's incumbent: distances {mean:?}");
        assert!(near(&observed) <= 2, "the observed incumbent: distances {observed:?}");
    }

    #[test]
    fn hands_the_island_over_to_cmaes_at_its_count_and_refuses_what_cmaes_cannot_search() {
        let s = SearchSpace::builder().float("x", 0.0, 1.0).int("n", 1, 8).build().unwrap();
        // Without the quadratic model, whose child both may propose.
        let config = GpConfig { cmaes_after: 30, quadratic_share: 0.0, ..GpConfig::default() };
        let gp = composed(&s, config.clone());
        let cmaes = Cmaes::new(&s, CmaesConfig::default()).unwrap().taking_over_after(30);
        let pool =
            sampled_in_order(&s, 40, &mut worker_rng(4, 0), |v, _| (v[0].as_f64() - 0.2).abs() + v[1].as_f64() / 8.0);
        let child = |p: &dyn Propagator, pool: &[Individual]| {
            p.propagate(&pool.to_vec(), &s, &mut worker_rng(5, 1)).unwrap().remove(0)
        };
        // Below the count the process breeds; from it on, CMA-ES started from those evaluations.
        assert_ne!(child(gp.as_ref(), &pool[..29]).values, child(&cmaes, &pool[..29]).values);
        for n in [30, 40] {
            assert_eq!(child(gp.as_ref(), &pool[..n]).values, child(&cmaes, &pool[..n]).values, "{n}");
        }
        // A categorical parameter, or a hand-over before the process starts, is refused.
        let cat = SearchSpace::builder().float("x", 0.0, 1.0).categorical("c", &["a", "b"]).build().unwrap();
        let e = PropagatorSpec::Gp(config).build(&cat).unwrap_err().to_string();
        assert!(e.contains("CMA-ES") && e.contains("'c'"), "{e}");
        let e =
            PropagatorSpec::Gp(GpConfig { cmaes_after: 3, ..GpConfig::default() }).build(&s).unwrap_err().to_string();
        assert!(e.contains("after 3 evaluations"), "{e}");
    }

    #[test]
    fn running_evaluations_push_the_next_child_away_and_the_same_seed_breeds_the_same_child() {
        let s = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        let bowl = |v: &[Value]| (v[0].as_f64() - 0.3).powi(2) + (v[1].as_f64() - 0.6).powi(2);
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let mut rng = worker_rng(8, 0);
        let done: Vec<Individual> = (0..12)
            .map(|_| {
                let v = s.sample(&mut rng);
                let l = bowl(&v);
                with_loss(v, l)
            })
            .collect();
        let breed = |pool: &dyn Pool| gp.propagate(pool, &s, &mut worker_rng(9, 0)).unwrap().remove(0).values;
        let alone = breed(&WithPeers { pool: &done, peers: &[] });
        assert_eq!(breed(&WithPeers { pool: &done, peers: &[] }), alone, "same seed, same child");
        assert!(s.contains(&alone));
        // Another worker is evaluating that very child: the model is sure of it now, and the next
        // child, from the same random stream, goes elsewhere.
        let running = [Individual::new(alone.clone())];
        let next = breed(&WithPeers { pool: &done, peers: &running });
        let apart =
            ((next[0].as_f64() - alone[0].as_f64()).powi(2) + (next[1].as_f64() - alone[1].as_f64()).powi(2)).sqrt();
        assert!(apart > 0.02, "{next:?} next to the running {alone:?}");
        // Running children outside the space (a mismatched message) are ignored, not modelled.
        let stray = [Individual::new(vec![Value::Float(7.0), Value::Float(0.5)])];
        assert_eq!(breed(&WithPeers { pool: &done, peers: &stray }), alone);
    }

    /// With a constraint the loss cannot see (x + y >= 1, the unconstrained minimum at the origin
    /// infeasible), the children come from where it holds, near the constrained minimum
    /// (0.5, 0.5); before any evaluation is feasible, towards where the constraint's process says
    /// it will hold.
    #[test]
    fn constraints_steer_the_children_to_the_feasible_side() {
        let s = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        let evaluate = |v: &[Value], g: u64| measured(v, g, |x, y| x * x + y * y, |x, y| 1.0 - x - y);
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let mut rng = worker_rng(11, 0);
        let mut pool: Vec<Individual> = (0..12).map(|g| evaluate(&s.sample(&mut rng), g)).collect();
        for g in 12..30 {
            let child = gp.propagate(&pool, &s, &mut rng).unwrap().remove(0).values;
            pool.push(evaluate(&child, g));
        }
        let bred = &pool[12..];
        // The minimum lies on the boundary: children on it may miss it by a rounding.
        let near = bred.iter().filter(|i| i.constraints[0] <= 0.01).count();
        assert!(near >= 16, "{near} of 18 children feasible or within 0.01 of it");
        let best = pool.best(1).remove(0);
        assert!(best.is_feasible() && best.loss < 0.52, "{best:?}");
        // No feasible point yet: the probability of feasibility alone leads to the feasible side.
        let far: Vec<Individual> = (0..10)
            .map(|g| {
                let (x, y) = (0.05 * (g % 5) as f64, 0.08 * (g / 5) as f64);
                evaluate(&[Value::Float(x), Value::Float(y)], g)
            })
            .collect();
        assert!(far.iter().all(|i| !i.is_feasible()));
        let children: Vec<Individual> = (0..5).map(|_| gp.propagate(&far, &s, &mut rng).unwrap().remove(0)).collect();
        let sums: Vec<f64> = children.iter().map(|c| c.values[0].as_f64() + c.values[1].as_f64()).collect();
        assert!(sums.iter().filter(|s| **s >= 0.9).count() >= 4, "{sums:?}");
    }

    /// Sixteen evaluations of a rugged bowl in one coordinate whose lowest evaluated point is 0.3:
    /// six starts, then ten without a gain, so that the trust region's side is 0.2, its box
    /// [0.2, 0.4]. With `breaks_from`, a constraint `x - breaks_from` that the evaluations from
    /// 0.58 on break, with the lowest losses of all (-1).
    fn stalled_bowl(breaks_from: Option<f64>) -> Vec<Individual> {
        let xs = [0.0, 0.3, 0.5, 0.6, 0.45, 0.15, 0.05, 0.55, 0.35, 0.25, 0.5, 0.4, 0.1, 0.2, 0.58, 0.02];
        let evaluate = |(g, &x): (usize, &f64)| {
            let bowl = if x == 0.3 { 0.0 } else { 0.5 + (x - 0.3f64).abs() + 0.2 * (40.0 * x).sin() };
            let broken = breaks_from.is_some() && x >= 0.58;
            let mut i = with_loss(vec![Value::Float(x)], if broken { -1.0 } else { bowl });
            i.constraints = breaks_from.map(|bound| vec![x - bound]).unwrap_or_default();
            i.id.generation = g as u64;
            i
        };
        xs.iter().enumerate().map(evaluate).collect()
    }

    /// Whether twelve children of `pool` in [0, 1] (a trust region's share `share`) all lie in
    /// [0.2, 0.4], with the children.
    fn all_in_the_box(pool: &Vec<Individual>, share: f64) -> (bool, Vec<f64>) {
        let s = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        let gp = Gp::new(&s, GpConfig { trust_region: share, ..GpConfig::default() }).unwrap();
        let children: Vec<f64> =
            (0..12).map(|k| gp.propagate(pool, &s, &mut worker_rng(k, 0)).unwrap()[0].values[0].as_f64()).collect();
        (children.iter().all(|x| (0.2 - 1e-9..=0.4 + 1e-9).contains(x)), children)
    }

    /// With constraints the trust region stays (SCBO's): its box is around the best feasible point,
    /// not around a lower loss that breaks a constraint, and its side counts the island's ranking.
    #[test]
    fn with_constraints_the_trust_region_boxes_the_best_feasible_point() {
        let pool = stalled_bowl(Some(0.56));
        let (boxed, children) = all_in_the_box(&pool, 1.0);
        assert!(boxed, "{children:?}");
        let (boxed, children) = all_in_the_box(&pool, 0.0);
        assert!(!boxed, "the whole space's search leaves the box: {children:?}");
    }

    /// A constraint whose values far from its bound dwarf those near it (from -1 to 22,000): inside
    /// the trust region its process is the region's, fitted to the values near the best point, so
    /// the children close in on the bound from its feasible side.
    #[test]
    fn a_constraint_of_huge_values_far_away_is_told_apart_near_its_bound() {
        let s = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        let evaluate =
            |v: &[Value], g: u64| measured(v, g, |x, y| x + (y - 0.5).powi(2), |x, _| (20.0 * (0.5 - x)).exp() - 1.0);
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let mut rng = worker_rng(5, 0);
        let mut pool: Vec<Individual> = (0..10).map(|g| evaluate(&s.sample(&mut rng), g)).collect();
        for g in 10..50 {
            let child = gp.propagate(&pool, &s, &mut rng).unwrap().remove(0).values;
            pool.push(evaluate(&child, g));
        }
        let best = pool.best(1).remove(0);
        // With the processes fitted to the whole island: 0.53 (the bound at x = 0.5).
        assert!(best.is_feasible() && best.loss < 0.5 + 1e-4, "{best:?}");
    }

    /// A constraint of a plane (x + y >= 0.6) that no evaluation has broken yet, the loss falling
    /// towards it: its process around a plane places the bound from the evaluations' slope, and
    /// the children land on it within 0.003 from its feasible side (a process with a constant
    /// mean, which bends back to that mean past the evaluations: 0.008 from it).
    #[test]
    fn a_plane_constraint_is_met_closely_before_it_is_broken() {
        let s = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        let evaluate = |(x, y): (f64, f64), g: u64| {
            measured(&[Value::Float(x), Value::Float(y)], g, |x, y| x + y, |x, y| 0.6 - x - y)
        };
        // Fourteen feasible evaluations, x + y from 0.8 to 1.6.
        let pool: Vec<Individual> = (0..14)
            .map(|g| evaluate((0.4 + 0.05 * (g % 7) as f64, 0.4 + 0.1 * (g / 7) as f64 + 0.02 * g as f64), g))
            .collect();
        assert!(pool.iter().all(Individual::is_feasible));
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let sums: Vec<f64> = (0..8)
            .map(|k| {
                let child = gp.propagate(&pool, &s, &mut worker_rng(k, 0)).unwrap().remove(0).values;
                child[0].as_f64() + child[1].as_f64()
            })
            .collect();
        assert!(sums.iter().all(|s| (0.6..0.603).contains(s)), "children off the bound: {sums:?}");
    }

    /// In a conditional space the kernel compares a parameter only where it is active: a dormant
    /// value moves no prediction, an active one does, and the GP breeds in the better branch
    /// near its best value.
    #[test]
    fn a_conditional_space_is_modelled_without_its_dormant_values() {
        let s = crate::propagator::test_pools::two_branches();
        let loss = |v: &[Value]| match v[0] {
            Value::Cat(0) => 1.0 + v[1].as_f64(),
            _ => (v[2].as_f64() - 0.3).powi(2),
        };
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let mut rng = worker_rng(5, 0);
        let pool: Vec<Individual> = (0..30)
            .map(|_| {
                let v = s.sample(&mut rng);
                with_loss(v.clone(), loss(&v))
            })
            .collect();
        let inputs: Vec<Vec<f64>> = pool.iter().map(|i| gp.model.encode(&i.values)).collect();
        let outputs = standardized(&pool.iter().map(|i| i.loss).collect::<Vec<_>>());
        let fitted = MaternGp::fit(gp.model.coordinates(), inputs, outputs).unwrap();
        let at = |v: [Value; 3]| fitted.predict(&gp.model.encode(&v));
        let b = at([Value::Cat(1), Value::Float(0.1), Value::Float(0.3)]);
        assert_eq!(b, at([Value::Cat(1), Value::Float(0.9), Value::Float(0.3)]), "xa is dormant in branch b");
        assert_ne!(b, at([Value::Cat(1), Value::Float(0.1), Value::Float(0.8)]), "xb is active");
        for _ in 0..5 {
            let child = gp.propagate(&pool, &s, &mut rng).unwrap().remove(0).values;
            assert_eq!(child[0], Value::Cat(1), "{child:?}");
            assert!((child[2].as_f64() - 0.3).abs() < 0.2, "{child:?}");
        }
    }

    #[test]
    fn refuses_bad_settings_and_another_space() {
        let s = space();
        for config in [
            GpConfig { candidates: 0, ..GpConfig::default() },
            GpConfig { xi: -0.1, ..GpConfig::default() },
            GpConfig { xi: f64::NAN, ..GpConfig::default() },
            GpConfig { at_bounds: 1.5, ..GpConfig::default() },
            GpConfig { at_bounds: f64::NAN, ..GpConfig::default() },
            GpConfig { max_points: 1, startup: 0, ..GpConfig::default() },
            GpConfig { max_points: 5, startup: 6, ..GpConfig::default() },
            GpConfig { startup: 1, ..GpConfig::default() },
            GpConfig { tpe_share: 1.5, ..GpConfig::default() },
            GpConfig { tpe_share: f64::NAN, ..GpConfig::default() },
        ] {
            assert!(matches!(PropagatorSpec::Gp(config).build(&s), Err(Error::InvalidPropagator(_))));
        }
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let other = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        let err = gp.propagate(&Vec::<Individual>::new(), &other, &mut worker_rng(0, 0)).unwrap_err();
        assert!(err.to_string().contains("different search space"), "{err}");
    }

    /// The portfolio: TPE breeds its share of each worker's children, workers out of step, and a
    /// child is the very one the chosen model breeds alone.
    #[test]
    fn the_tpe_share_breeds_that_share_by_tpe_and_workers_alternate() {
        let s = space();
        let at = |share: f64| {
            let gp = Gp::new(&s, GpConfig::default()).unwrap();
            Portfolio::new(Box::new(gp), Box::new(Tpe::new(&s, TpeConfig::default()).unwrap()), share).unwrap()
        };
        let by_tpe = |p: &Portfolio, worker: u32, generations: u64| {
            (0..generations).filter(|&g| p.by_other(Breeder { island: 0, worker, generation: g, since: 0 })).count()
        };
        assert_eq!(by_tpe(&at(0.5), 0, 100), 50);
        assert_eq!(by_tpe(&at(0.25), 3, 100), 25);
        assert_eq!(by_tpe(&at(1.0), 1, 10), 10);
        assert_eq!(by_tpe(&at(0.0), 1, 10), 0, "no share, no TPE");
        let half = composed(&s, GpConfig { tpe_share: 0.5, ..GpConfig::default() });
        let first = |w| at(0.5).by_other(Breeder { island: 0, worker: w, generation: 0, since: 0 });
        assert_ne!(first(0), first(1), "neighbouring workers use different models at once");

        let mut rng = worker_rng(3, 0);
        let done: Vec<Individual> = (0..20)
            .map(|_| {
                let v = s.sample(&mut rng);
                let l = loss(&v);
                with_loss(v, l)
            })
            .collect();
        let pool = WithPeers { pool: &done, peers: &[] };
        let breed = |p: &dyn Propagator, generation| {
            let breeder = Breeder { island: 0, worker: 0, generation, since: 0 };
            p.propagate_as(breeder, &pool, &s, &mut worker_rng(4, 0)).unwrap().remove(0).values
        };
        let tpe = Tpe::new(&s, TpeConfig::default()).unwrap();
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let (g_tpe, g_gp) = if first(0) { (0, 1) } else { (1, 0) };
        assert_eq!(breed(half.as_ref(), g_tpe), breed(&tpe, g_tpe));
        assert_eq!(breed(half.as_ref(), g_gp), breed(&gp, g_gp));
        assert_ne!(breed(&tpe, 0), breed(&gp, 0), "the two models breed different children here");
    }

    #[test]
    fn a_trust_region_keeps_the_children_in_its_box_around_the_best_point() {
        // One coordinate: its edge is the whole side. Six starts with the best at 0.3, then ten
        // evaluations without a gain: the side halved twice, 0.2, so the box is [0.2, 0.4].
        let s = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        let pool = stalled_bowl(None);
        let (boxed, children) = all_in_the_box(&pool, 1.0);
        assert!(boxed, "{children:?}");
        // The whole space's search goes to the unexplored top of the interval at least once.
        let (boxed, children) = all_in_the_box(&pool, 0.0);
        assert!(!boxed, "{children:?}");
        let e = Gp::new(&s, GpConfig { trust_region: 1.5, ..GpConfig::default() }).unwrap_err().to_string();
        assert!(e.contains("trust-region"), "{e}");
        // With nine evaluations running elsewhere, the island breeds ten at once: the ten without a
        // gain are one batch, and the side halved once (0.4) makes the box [0.1, 0.5].
        let gp = Gp::new(&s, GpConfig::default()).unwrap();
        let region = |running: usize| {
            let far: Vec<Individual> = (0..running).map(|_| Individual::new(vec![Value::Float(0.9)])).collect();
            let inputs = pool.iter().map(|i| gp.model.encode(&i.values)).collect();
            let outputs = standardized(&pool.iter().map(|i| i.loss).collect::<Vec<f64>>());
            let pool = WithPeers { pool: &pool, peers: &far };
            let fitted = MaternGp::fit(gp.model.coordinates(), inputs, outputs).unwrap();
            let (inner, _) = gp.trust_region(gp.model.kinds(), &pool, &[0.3], &fitted, &mut worker_rng(0, 0)).unwrap();
            (inner.lower[0], inner.upper[0])
        };
        let close = |(a, b): (f64, f64), (c, d): (f64, f64)| (a - c).abs() < 1e-9 && (b - d).abs() < 1e-9;
        assert!(close(region(0), (0.2, 0.4)), "{:?}", region(0));
        assert!(close(region(9), (0.1, 0.5)), "{:?}", region(9));
    }

    #[test]
    fn the_trust_regions_model_tells_apart_the_good_losses_that_a_wall_of_huge_ones_flattens() {
        // A bowl at (0.25, 0.35) beside a wall of losses a million times larger (x > 0.6): among
        // all the losses the bowl's are alike, among those near the best point they are a bowl.
        let s = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
        let loss = |v: &[Value]| {
            let (x, y) = (v[0].as_f64(), v[1].as_f64());
            if x > 0.6 { 1e6 * (1.0 + x) } else { (x - 0.25).powi(2) + (y - 0.35).powi(2) }
        };
        let mut rng = worker_rng(30, 0);
        let mut pool = sampled_in_order(&s, 30, &mut rng, |v, _| loss(v));
        // Then twelve evaluations around the bowl, as a search that found it would have made.
        for g in 30..42u64 {
            let v = vec![Value::Float(0.5 * rng.random::<f64>()), Value::Float(0.1 + 0.5 * rng.random::<f64>())];
            let l = loss(&v);
            let mut i = with_loss(v, l);
            i.id.generation = g;
            pool.push(i);
        }
        let gp = Gp::new(&s, GpConfig { trust_region: 1.0, ..GpConfig::default() }).unwrap();
        let losses: Vec<f64> =
            (0..6).map(|seed| loss(&gp.propagate(&pool, &s, &mut worker_rng(seed, 2)).unwrap()[0].values)).collect();
        // Each child lies below the island's best; with the model of all the losses (the bowl
        // flattened) the children went to the box's edge, at 0.46.
        let best = pool.iter().map(|i| i.loss).fold(f64::INFINITY, f64::min);
        assert!(losses.iter().all(|&l| l < best), "children {losses:?} against the best {best}");
    }
}
