//! Population-based training (Jaderberg et al. 2017), asynchronous, on an island: each worker
//! trains one member, an interval of training steps per evaluation, and when an evaluation ends it
//! decides the member's next one from the island's current members, without waiting for anyone.
//!
//! The island's current members are, per worker, the latest finished evaluation the island holds
//! (its own workers' and immigrants': migration and pollination carry members between islands),
//! the breeding worker's own last evaluation always among them. They are ranked by the loss each
//! had at the breeding member's step (failed ones last, ties by identity): a member that is ahead
//! of it in training is ranked by the loss its state had where the breeding member's ended (its
//! lineage walked back, through the donor where it exploited one), so that a fast worker's member
//! does not look better only for having trained longer; whether the
//! breeding member is among the worst compares it with each member behind it at that member's
//! step (its own lineage walked back), so that one behind does not look worse only for having
//! trained less. With `k = ceil(quantile * n)`, at most half of the `n` members:
//!
//! - a member among the `k` worst exploits one of the `k` best, drawn uniformly among those with
//!   steps left: the child copies its hyperparameters and continues its training state, then
//!   explores: each float and int is resampled from the space with probability `resample_prob`,
//!   else multiplied by 0.8 or 1.2 (either at random; an int moves at least one step) and clipped
//!   to its bounds; a categorical, which has no order to move along, is resampled with
//!   `resample_prob`, else kept; the parameters named `fixed` (a network's shape, which the
//!   state it continues was saved with) are copied unchanged; with `explore = pb2` the floats and
//!   ints are then picked by PB2's model of what the island's intervals gained (pb2.rs), once it
//!   has data;
//! - any other member continues: same hyperparameters, its own last state;
//! - a member whose last evaluation failed with no member to exploit trains that interval again
//!   from the state it continued (its own previous one, still saved), once;
//! - a worker without an evaluation yet, or whose retry failed too, starts a fresh member: a
//!   uniformly random point, trained from scratch.
//!
//! The child's [`Lineage`] names the state it continues, its step and the steps it trains (the
//! interval, or what is left of the budget when that is less); the driver gives the
//! evaluation that state and a directory to save its own into. A member whose state reached
//! `steps` (the budget per member) is finished: its worker breeds no more
//! ([`Propagator::worker_finished`]), and nobody exploits it any longer (its state has no steps
//! left to train). A worker whose last [`FAILURES_IN_A_ROW`] evaluations failed breeds no more
//! either.
//!
//! Differences from Ray Tune's scheduler: asynchronous against the island's current members, each
//! ranked at the breeding member's step (Ray's `synch=False` ranks the trials' last results,
//! whatever step each reached); categoricals are resampled or kept,
//! not moved to a neighbouring choice (their order means nothing here); an int always moves.

mod excluding;

pub use excluding::Excluding;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::individual::{Individual, IndividualId, RankKey};
use crate::lineage::Lineage;
use crate::propagator::bayesian::pb2::Pb2;
use crate::propagator::{Arity, Breeder, Pool, Propagator, check_probability};
use crate::rng::PropRng;
use crate::space::{Domain, SearchSpace, Value};

/// The settings of [`Pbt`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PbtConfig {
    /// Training steps per evaluation (epochs for the CNN, the program's own steps for command
    /// trials).
    pub interval: u64,
    /// The share of the island's members that exploits (the worst) and is exploited (the best).
    pub quantile: f64,
    /// The probability that exploring resamples a parameter from the space instead of perturbing it.
    pub resample_prob: f64,
    /// Training steps per member: a member whose state reached them is finished. `None`: members
    /// train until the run's generations end.
    pub steps: Option<u64>,
    /// Parameters exploring copies unchanged (the shape of a network, which its saved state
    /// needs); they differ between members only as fresh members draw them.
    #[serde(default)]
    pub fixed: Vec<String>,
    /// Seconds a worker keeps a state of its own after its member moved on (and nothing else
    /// needs it), before it deletes it: workers learn of each other's evaluations by messages that
    /// can lag, and one that bred from the state meanwhile must still find it.
    #[serde(default = "default_keep_s")]
    pub keep_s: f64,
    /// How an exploiting member's floats and ints move from the donor's.
    #[serde(default)]
    pub explore: PbtExplore,
}

/// How [`Pbt`] explores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PbtExplore {
    /// Multiplied by 0.8 or 1.2, or resampled (the paper's and Ray Tune's PBT).
    #[default]
    Perturb,
    /// Picked by PB2's model of the island's gains per interval (Ray Tune's PB2), perturbed while
    /// it has fewer than four continuations to model.
    Pb2,
}

impl PbtExplore {
    /// Every way by the name specs and `--pbt-explore` give it.
    pub const NAMES: [&'static str; 2] = ["perturb", "pb2"];
}

fn default_keep_s() -> f64 {
    10.0
}

impl Default for PbtConfig {
    fn default() -> Self {
        PbtConfig {
            interval: 1,
            quantile: 0.25,
            resample_prob: 0.25,
            steps: None,
            fixed: Vec::new(),
            keep_s: default_keep_s(),
            explore: PbtExplore::Perturb,
        }
    }
}

/// The factors exploring multiplies a float or an int by (Ray Tune's and the paper's).
const FACTORS: [f64; 2] = [0.8, 1.2];

/// Population-based training as a propagator (see the module documentation).
#[derive(Debug, Clone)]
pub struct Pbt {
    config: PbtConfig,
    /// Per parameter of the space, whether exploring keeps it (`fixed`).
    kept: Vec<bool>,
    /// The model that picks explored values (`explore = pb2`).
    pb2: Option<Pb2>,
}

impl Pbt {
    /// Checks the settings against `space`: an interval of at least one step, a quantile in
    /// `(0, 0.5]`, a probability, a budget of at least one interval, fixed parameters of the space.
    pub fn new(space: &SearchSpace, config: PbtConfig) -> Result<Self> {
        crate::propagator::refuse_conditional(space, "population-based training")?;
        let bad = |what: String| Err(Error::InvalidPropagator(what));
        if config.interval == 0 {
            return bad("pbt interval must be at least 1 training step".into());
        }
        if !(config.quantile > 0.0 && config.quantile <= 0.5) {
            return bad(format!(
                "pbt quantile must be in (0, 0.5] (the share of members that exploit, and as many exploited), got {}",
                config.quantile
            ));
        }
        check_probability("pbt resample probability", config.resample_prob)?;
        if let Some(steps) = config.steps
            && steps < config.interval
        {
            return bad(format!(
                "pbt steps per member ({steps}) must be at least one interval ({} steps)",
                config.interval
            ));
        }
        // At most a few centuries: a longer time is no duration the clock can add (it was a panic
        // at the third evaluation), and 1e10 s keeps every state of any run.
        if !(0.0..=1e10).contains(&config.keep_s) {
            return bad(format!(
                "pbt keep seconds must be a number of seconds from 0 to 1e10 (which keeps every state), got {}",
                config.keep_s
            ));
        }
        if let Some(unknown) = config.fixed.iter().find(|name| space.index_of(name).is_none()) {
            let known: Vec<&str> = space.params().iter().map(|p| p.name.as_str()).collect();
            return bad(format!(
                "pbt fixed parameter '{unknown}' is not in the search space; known: {}",
                known.join(", ")
            ));
        }
        let kept: Vec<bool> = space.params().iter().map(|p| config.fixed.contains(&p.name)).collect();
        let pb2 = match config.explore {
            PbtExplore::Perturb => None,
            PbtExplore::Pb2 => Some(Pb2::new(space, &kept)?),
        };
        Ok(Pbt { config, kept, pb2 })
    }

    /// The settings.
    pub fn config(&self) -> &PbtConfig {
        &self.config
    }

    /// Whether the member whose last evaluation is `ind` has trained its budget.
    fn finished(&self, ind: &Individual) -> bool {
        match (self.config.steps, &ind.lineage) {
            (Some(budget), Some(l)) => ind.failure.is_none() && l.step_after() >= budget,
            _ => false,
        }
    }

    /// The steps an evaluation starting at `step` trains: the interval, or what is left of the
    /// budget when that is less (a budget that is no multiple of the interval is not overshot).
    fn steps_from(&self, step: u64) -> u64 {
        match self.config.steps {
            Some(budget) => self.config.interval.min(budget.saturating_sub(step)).max(1),
            None => self.config.interval,
        }
    }

    /// A fresh member at a random point.
    fn fresh(&self, space: &SearchSpace, rng: &mut PropRng) -> Individual {
        let mut child = Individual::new(space.sample(rng));
        child.lineage = Some(Box::new(Lineage::fresh(self.config.interval)));
        child
    }

    /// `values` explored: perturbed or resampled parameter by parameter.
    fn explore(&self, values: &[Value], space: &SearchSpace, rng: &mut PropRng) -> Vec<Value> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                if self.kept.get(i).copied().unwrap_or(false) {
                    return v;
                }
                if rng.random_bool(self.config.resample_prob) {
                    return space.sample_param(i, rng);
                }
                let factor = FACTORS[usize::from(rng.random_bool(0.5))];
                match (&space.params()[i].domain, v) {
                    (Domain::Float { lo, hi, .. }, Value::Float(x)) => Value::Float((x * factor).clamp(*lo, *hi)),
                    (Domain::Int { lo, hi }, Value::Int(n)) => {
                        let mut m = (n as f64 * factor).round() as i64;
                        if m == n {
                            // 0.8 or 1.2 times a small int rounds back to it: move one step the same way.
                            m = if (factor > 1.0) == (n >= 0) { n.saturating_add(1) } else { n.saturating_sub(1) };
                        }
                        Value::Int(m.clamp(*lo, *hi))
                    }
                    _ => v,
                }
            })
            .collect()
    }
}

/// The island's current members: per worker, the latest finished evaluation `pool` holds, with
/// `own` in place of the breeding worker's, and the loss it is ranked by; ranked best first
/// (failed last, ties by identity) by the loss each had at `own`'s step: a member ahead of it in
/// training by what its state had at that step ([`loss_at`], its lineage walked back), else by its
/// latest loss (a member behind, a failed one, or one whose lineage leaves the pool).
///
/// Why not by the latest losses: workers run at different speeds (a slow node, an oversubscribed
/// one, a larger batch), and a member that is ahead has trained longer. Ranked by the latest
/// losses, a member with a mediocre rate that raced ahead looks better than one with a good rate
/// that is behind, and the good one exploits it and is lost (seen in CI: a rate of 0.064 raced
/// ten intervals ahead, the members with 0.126 took its state, and the best member ended at
/// 0.096 instead of about 0.002). Why the lineage and not the worker's own earlier evaluation: a
/// worker that exploited since continues another state, and its earlier evaluation was its old,
/// worse member's.
fn current_members<'a>(pool: &'a dyn Pool, own: &'a Individual) -> Vec<(&'a Individual, f64)> {
    let reached = own.lineage.as_deref().map_or(0, Lineage::step_after);
    let mut latest: std::collections::HashMap<u32, &Individual> =
        std::collections::HashMap::from([(own.id.worker, own)]);
    for ind in pool.iter_latest_bred().filter(|ind| ind.lineage.is_some()) {
        latest.entry(ind.id.worker).or_insert(ind);
    }
    let mut members: Vec<(&Individual, f64)> = latest
        .into_values()
        .map(|member| {
            let ahead = member.lineage.as_deref().is_some_and(|l| l.step_after() > reached);
            let loss = if ahead && member.failure.is_none() { loss_at(pool, member, reached) } else { None };
            (member, loss.unwrap_or(member.loss))
        })
        .collect();
    // Feasible members first (a member's latest constraints), as every ranking of the engine.
    members.sort_by(|a, b| standing(a.0, a.1).cmp(&standing(b.0, b.1)).then(a.0.id.cmp(&b.0.id)));
    members
}

/// Where `member` stands with `loss` (at the step it is compared at): feasible ones by the loss,
/// then infeasible ones by their violation (its latest constraints), then failed ones. Without
/// constraints, the loss's own order.
fn standing(member: &Individual, loss: f64) -> RankKey {
    RankKey::of(loss, &member.constraints)
}

/// How many of the island's current `members` (from [`current_members`]) rank below `own`, each
/// compared with it at the step both reached: one ahead by its loss at `own`'s step, one behind
/// by its latest loss against the loss `own`'s state had at that member's step (its lineage
/// walked back). Failed members rank below, ties by identity.
///
/// Why not by the one ranking at `own`'s step: a member behind would then be judged by an older,
/// higher loss against `own`'s newer one, and look worse only for having trained less. Two members
/// of equal losses at equal steps (two that exploited one donor with the same perturbation) then
/// shield each other: whichever decides sees the other behind and worse, and neither ever exploits
/// (seen in the PBT benchmark: two such twins trained 7 intervals at a tenth of the useful rate
/// while the island's best ended at 0.85 instead of 0.63).
fn ranked_below(pool: &dyn Pool, own: &Individual, members: &[(&Individual, f64)]) -> usize {
    let reached = own.lineage.as_deref().map_or(0, Lineage::step_after);
    members
        .iter()
        .filter(|(member, loss)| {
            if member.id == own.id {
                return false;
            }
            if member.failure.is_some() {
                return true;
            }
            let step = member.lineage.as_deref().map_or(0, Lineage::step_after);
            let own_loss = if step < reached { loss_at(pool, own, step).unwrap_or(own.loss) } else { own.loss };
            standing(member, *loss).cmp(&standing(own, own_loss)).then(member.id.cmp(&own.id)).is_gt()
        })
        .count()
}

/// The loss that the state `ind` continues had after training to `step`: `ind`'s own, or its
/// lineage's latest evaluation that ended at or before `step`; `None` where the lineage leaves
/// the pool (an immigrant's parent) or failed.
fn loss_at(pool: &dyn Pool, ind: &Individual, step: u64) -> Option<f64> {
    let mut current = ind.clone();
    loop {
        let lineage = *current.lineage.as_deref()?;
        if lineage.step_after() <= step {
            return current.failure.is_none().then_some(current.loss);
        }
        current = pool.stored(lineage.parent.as_ref()?)?;
    }
}

impl Propagator for Pbt {
    fn name(&self) -> &'static str {
        "pbt"
    }
    fn parents(&self) -> Arity {
        Arity::Any
    }
    fn offspring(&self) -> usize {
        1
    }
    /// The island's peers learn of each child as it starts: a state it continues is then known to
    /// be in use, and its owner keeps it.
    fn models_running(&self) -> bool {
        true
    }
    /// Without a breeder every child is a fresh member.
    fn propagate(&self, _pool: &dyn Pool, space: &SearchSpace, rng: &mut PropRng) -> Result<Vec<Individual>> {
        Ok(vec![self.fresh(space, rng)])
    }
    fn propagate_as(
        &self,
        breeder: Breeder,
        pool: &dyn Pool,
        space: &SearchSpace,
        rng: &mut PropRng,
    ) -> Result<Vec<Individual>> {
        let Some(own) = last_evaluation(breeder, pool) else {
            return Ok(vec![self.fresh(space, rng)]);
        };
        let members = current_members(pool, &own);
        let n = members.len();
        let k = ((self.config.quantile * n as f64).ceil() as usize).min(n / 2);
        let among_worst = own.failure.is_some() || (k > 0 && ranked_below(pool, &own, &members) < k);
        if among_worst {
            // A failed member exploits even where the island is too small for a quantile.
            let best: Vec<&Individual> = members[..k.max(1).min(n)]
                .iter()
                .map(|&(member, _)| member)
                .filter(|m| m.id != own.id && m.failure.is_none() && !self.finished(m))
                .collect();
            if !best.is_empty() {
                let donor = best[rng.random_range(0..best.len())];
                let donor_lineage = donor.lineage.as_deref().copied().expect("members have a lineage");
                let explored = self.explore(&donor.values, space, rng);
                let values = match &self.pb2 {
                    Some(pb2) => pb2
                        .pick(&explored, donor_lineage.step_after(), self.config.steps, pool, rng)
                        .unwrap_or(explored),
                    None => explored,
                };
                let mut child = Individual::new(values);
                child.lineage = Some(Box::new(Lineage {
                    parent: Some(donor.id),
                    step: donor_lineage.step_after(),
                    steps: self.steps_from(donor_lineage.step_after()),
                    exploited: true,
                }));
                return Ok(vec![child]);
            }
        }
        match (&own.failure, own.lineage.as_deref().copied()) {
            (None, Some(lineage)) => {
                let mut child = own.child();
                child.lineage = Some(Box::new(Lineage {
                    parent: Some(own.id),
                    step: lineage.step_after(),
                    steps: self.steps_from(lineage.step_after()),
                    exploited: false,
                }));
                Ok(vec![child])
            }
            // A failed evaluation that continued the member's previous one: that state is still
            // saved (a worker's two latest always are), so the interval is trained again from it
            // instead of from scratch. Near the end, when every other member has finished and none
            // can be exploited, one transient failure (an out-of-memory, a node's hiccup) cost the
            // member its whole training. Once: a retry that fails too (the state itself may be
            // what fails) starts a fresh member.
            (Some(_), Some(lineage))
                if lineage.parent
                    == own.id.generation.checked_sub(1).map(|generation| IndividualId { generation, ..own.id }) =>
            {
                let mut child = own.child();
                child.lineage = Some(Box::new(Lineage { exploited: false, ..lineage }));
                Ok(vec![child])
            }
            // Its state is lost (failed twice) or it never had one (bred by another propagator).
            _ => Ok(vec![self.fresh(space, rng)]),
        }
    }
    fn training_state_keep_s(&self) -> Option<f64> {
        Some(self.config.keep_s)
    }
    fn worker_finished(&self, breeder: Breeder, pool: &dyn Pool) -> bool {
        last_evaluation(breeder, pool).is_some_and(|own| self.finished(&own)) || failing(breeder, pool)
    }
}

/// Failed evaluations in a row after which a worker's member is given up: a failure is retried
/// once from the state it continued, then starts a fresh member, and where every training fails (a configuration the program refuses, a GPU
/// that NCCL cannot share) a run ended by its members' budget would start them for ever.
pub const FAILURES_IN_A_ROW: u64 = 3;

/// Whether the breeding worker's last [`FAILURES_IN_A_ROW`] evaluations all failed in this start
/// of the run (a resume gives a worker that gave up before another chance: its cause, a missing
/// module, a full disk, may have been fixed).
fn failing(breeder: Breeder, pool: &dyn Pool) -> bool {
    breeder.generation >= breeder.since + FAILURES_IN_A_ROW
        && (1..=FAILURES_IN_A_ROW).all(|back| {
            let id =
                IndividualId { island: breeder.island, worker: breeder.worker, generation: breeder.generation - back };
            pool.stored(&id).is_some_and(|i| i.failure.is_some())
        })
}

/// The breeding worker's evaluation of the generation before, if the pool holds it (active or
/// emigrated): its member's latest state.
fn last_evaluation(breeder: Breeder, pool: &dyn Pool) -> Option<Individual> {
    let generation = breeder.generation.checked_sub(1)?;
    pool.stored(&IndividualId { island: breeder.island, worker: breeder.worker, generation })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::population::Population;
    use crate::rng::worker_rng;

    fn space() -> SearchSpace {
        SearchSpace::builder()
            .log_float("lr", 1e-4, 1.0)
            .float("momentum", 0.0, 0.99)
            .int("batch", 1, 512)
            .categorical("act", &["relu", "tanh", "gelu"])
            .build()
            .unwrap()
    }

    fn config() -> PbtConfig {
        PbtConfig { steps: Some(10), interval: 2, ..PbtConfig::default() }
    }

    fn make(config: PbtConfig) -> Pbt {
        Pbt::new(&space(), config).unwrap()
    }

    /// Worker `w`'s evaluation of generation `g` with `loss`, at `step`, continuing its own line.
    fn evaluated(w: u32, g: u64, loss: f64, step: u64, values: Vec<Value>) -> Individual {
        let mut ind = Individual::new(values);
        ind.id = IndividualId { island: 0, worker: w, generation: g };
        ind.loss = loss;
        ind.lineage = Some(Box::new(Lineage {
            parent: g.checked_sub(1).map(|p| IndividualId { generation: p, ..ind.id }),
            step,
            steps: 2,
            exploited: false,
        }));
        ind
    }

    fn values(lr: f64) -> Vec<Value> {
        vec![Value::Float(lr), Value::Float(0.9), Value::Int(64), Value::Cat(1)]
    }

    /// Worker `w`'s member, one evaluation per interval of 2 steps from step 0, with `losses`.
    fn line(w: u32, losses: &[f64]) -> Vec<Individual> {
        losses.iter().enumerate().map(|(g, &l)| evaluated(w, g as u64, l, 2 * g as u64, values(0.01))).collect()
    }

    fn population(inds: Vec<Individual>) -> Population {
        let mut p = Population::new();
        for i in inds {
            p.insert(i);
        }
        p
    }

    fn breed(pbt: &Pbt, pool: &Population, worker: u32, generation: u64, seed: u64) -> Individual {
        let breeder = Breeder { island: 0, worker, generation, since: 0 };
        pbt.propagate_as(breeder, pool, &space(), &mut worker_rng(seed, worker as u64)).unwrap().remove(0)
    }

    #[test]
    fn a_first_evaluation_is_a_fresh_member_inside_the_space() {
        let pbt = make(config());
        let child = breed(&pbt, &Population::new(), 0, 0, 1);
        assert!(space().contains(&child.values));
        assert_eq!(child.lineage.as_deref(), Some(&Lineage::fresh(2)));
    }

    /// With constraints, feasible members rank first: the feasible member of the highest loss does
    /// not take the state of an infeasible one of a lower loss, and that one exploits a feasible.
    #[test]
    fn feasible_members_rank_before_infeasible_ones() {
        let pbt = make(config());
        let member = |w: u32, loss: f64, violation: f64| {
            let mut m = evaluated(w, 3, loss, 6, values(0.01 * (w + 1) as f64));
            m.constraints = vec![violation];
            m
        };
        let pool =
            population(vec![member(0, 0.1, 0.5), member(1, 0.5, -1.0), member(2, 0.7, -1.0), member(3, 0.9, -1.0)]);
        for seed in 0..20 {
            let child = breed(&pbt, &pool, 0, 4, seed);
            let lineage = child.lineage.unwrap();
            assert!(lineage.exploited, "the infeasible member is the worst");
            assert_eq!(lineage.parent.map(|p| p.worker), Some(1), "it exploits the best feasible one");
        }
        let lineage = breed(&pbt, &pool, 3, 4, 0).lineage.unwrap();
        assert!(!lineage.exploited, "a feasible member is not below the infeasible one");
    }

    /// Four members (k = 1): the worst exploits the best, the others continue their own state.
    #[test]
    fn the_worst_member_exploits_the_best_and_the_others_continue() {
        let pbt = make(config());
        let pool = population(vec![
            evaluated(0, 3, 0.1, 6, values(0.01)),
            evaluated(1, 3, 0.5, 6, values(0.02)),
            evaluated(2, 3, 0.7, 6, values(0.03)),
            evaluated(3, 2, 0.9, 4, values(0.04)),
            // Older evaluations are not current members.
            evaluated(3, 1, 0.05, 2, values(0.05)),
        ]);
        for seed in 0..50 {
            let child = breed(&pbt, &pool, 3, 3, seed);
            let lineage = child.lineage.unwrap();
            assert_eq!(lineage.parent, Some(IndividualId { island: 0, worker: 0, generation: 3 }));
            assert_eq!((lineage.step, lineage.steps, lineage.exploited), (8, 2, true));
            assert!(space().contains(&child.values), "{:?}", child.values);
        }
        let child = breed(&pbt, &pool, 1, 4, 0);
        assert_eq!(child.values, values(0.02), "a middle member keeps its hyperparameters");
        let lineage = child.lineage.unwrap();
        assert_eq!(lineage.parent, Some(IndividualId { island: 0, worker: 1, generation: 3 }));
        assert_eq!((lineage.step, lineage.exploited), (8, false));
    }

    /// Members ahead in training are ranked by where they stood at the breeding member's step:
    /// a member with the best start is not taken for the worst because the others trained longer
    /// (the tutorial's failure in CI), and one behind at equal steps still exploits the best
    /// member's latest state.
    #[test]
    fn members_are_ranked_at_the_breeding_members_step() {
        let pbt = make(config());
        let raced = |first: f64| {
            let mut all = line(0, &[1.0, 0.7, 0.5, 0.3]);
            all.extend(line(2, &[1.1, 0.75]));
            all.extend(line(3, &[1.2, 0.8, 0.6]));
            all.extend(line(1, &[first]));
            population(all)
        };
        // Latest losses 0.3, 0.75, 0.6 and 0.9: worker 1 would be the worst; at step 2 it is the best.
        let child = breed(&pbt, &raced(0.9), 1, 1, 0).lineage.unwrap();
        assert_eq!((child.parent.unwrap().worker, child.exploited, child.step), (1, false, 2));
        // Worse than every member at step 2: it exploits the best one, continuing its latest state.
        let child = breed(&pbt, &raced(1.3), 1, 1, 0).lineage.unwrap();
        assert_eq!(child.parent, Some(IndividualId { island: 0, worker: 0, generation: 3 }));
        assert_eq!((child.exploited, child.step), (true, 8));
    }

    /// A member ahead that exploited since is ranked by what its state had at the breeding
    /// member's step (the donor's loss there), not by its worker's evaluation of that step, which
    /// was its old, worse member's: the breeding member, which only that old member was worse
    /// than, is the worst and exploits.
    #[test]
    fn a_member_ahead_that_exploited_is_ranked_by_its_lineage() {
        let pbt = make(config());
        let mut all = line(0, &[1.0, 0.6, 0.3, 0.1]);
        all.extend(line(1, &[1.5, 1.4, 0.35, 0.15]));
        // Worker 1's third evaluation continued worker 0's state after its second (step 4).
        let lineage = all[6].lineage.as_deref_mut().unwrap();
        lineage.parent = Some(IndividualId { island: 0, worker: 0, generation: 1 });
        lineage.exploited = true;
        all.extend(line(2, &[1.0, 0.8]));
        all.extend(line(3, &[1.2, 0.9]));
        let child = breed(&pbt, &population(all), 3, 2, 0).lineage.unwrap();
        // By worker 1's own evaluation at step 4 (1.4), worker 3 (0.9) would rank above it and continue.
        assert_eq!(child.parent, Some(IndividualId { island: 0, worker: 0, generation: 3 }));
        assert!(child.exploited);
    }

    /// Two members with equal losses at equal steps (twins: one donor, the same perturbation) do not
    /// shield each other: the one ahead compares itself with the one behind at the step both
    /// reached, where they tie, and exactly one of them exploits, whichever decides.
    #[test]
    fn twins_behind_the_others_do_not_shield_each_other() {
        let pbt = make(config());
        let island = |second_twin: &[f64]| {
            let mut all = line(0, &[1.0, 0.6, 0.3, 0.1]);
            all.extend(line(1, &[1.0, 0.8, 0.6, 0.5]));
            all.extend(line(2, second_twin));
            all.extend(line(3, &[1.2, 1.0, 0.9, 0.8]));
            population(all)
        };
        let decides = |pool: &Population, worker: u32| breed(&pbt, pool, worker, 4, 0).lineage.unwrap();
        // Worker 2 is an interval behind: ranked by its latest loss (0.9 against 0.8), it would look
        // the worst and worker 3 would continue; at step 6 the two tie, and worker 3 ranks last.
        let behind = island(&[1.2, 1.0, 0.9]);
        let child = decides(&behind, 3);
        assert_eq!((child.parent.unwrap().worker, child.exploited), (0, true));
        // Level: worker 3 exploits, worker 2 continues.
        let level = island(&[1.2, 1.0, 0.9, 0.8]);
        let (third, second) = (decides(&level, 3), decides(&level, 2));
        assert_eq!((third.parent.unwrap().worker, third.exploited), (0, true));
        assert_eq!((second.parent.unwrap().worker, second.exploited), (2, false));
    }

    /// With `explore = pb2` the exploiting member's rate comes from the model of the island's
    /// gains (here: larger rates gained more), not from the donor's times 0.8 or 1.2; it still
    /// continues the donor's state. Before the model has data, it perturbs.
    #[test]
    fn pb2_picks_the_exploiting_members_values_by_the_gains() {
        let gain = |lr: f64| 0.1 * (lr.log10() + 4.0);
        let rates = [1e-3, 3e-3, 1e-2, 3e-2];
        let members: Vec<Individual> = (0..4u64)
            .flat_map(|g| {
                rates
                    .iter()
                    .enumerate()
                    .map(move |(w, &r)| evaluated(w as u32, g, 2.0 - g as f64 * gain(r), 2 * g, values(r)))
            })
            .collect();
        let pool = population(members);
        let lr = |child: &Individual| match child.values[0] {
            Value::Float(lr) => lr,
            _ => panic!(),
        };
        let explore = |explore| make(PbtConfig { resample_prob: 0.0, explore, ..config() });
        let pb2 = breed(&explore(PbtExplore::Pb2), &pool, 0, 4, 1);
        let lineage = pb2.lineage.as_deref().unwrap();
        assert_eq!(
            (lineage.parent, lineage.exploited),
            (Some(IndividualId { island: 0, worker: 3, generation: 3 }), true)
        );
        assert!(lr(&pb2) > 0.1, "{:?}", pb2.values);
        let perturbed = breed(&explore(PbtExplore::Perturb), &pool, 0, 4, 1);
        assert!([0.8 * 3e-2, 1.2 * 3e-2].iter().any(|x| (lr(&perturbed) - x).abs() < 1e-12), "{:?}", perturbed.values);
        let early =
            population(rates.iter().enumerate().map(|(w, &r)| evaluated(w as u32, 0, 2.0 - r, 0, values(r))).collect());
        let first = breed(&explore(PbtExplore::Pb2), &early, 0, 1, 1);
        assert!([0.8 * 3e-2, 1.2 * 3e-2].iter().any(|x| (lr(&first) - x).abs() < 1e-12), "{:?}", first.values);
    }

    #[test]
    fn exploring_perturbs_by_the_factors_or_resamples_and_stays_inside_the_space() {
        let pbt = make(PbtConfig { resample_prob: 0.0, ..config() });
        let mut rng = worker_rng(3, 0);
        let start = values(0.01);
        let (mut up, mut down) = (0, 0);
        for _ in 0..200 {
            let v = pbt.explore(&start, &space(), &mut rng);
            let Value::Float(lr) = v[0] else { panic!() };
            let ratio = lr / 0.01;
            assert!((ratio - 0.8).abs() < 1e-9 || (ratio - 1.2).abs() < 1e-9, "{ratio}");
            if ratio > 1.0 {
                up += 1
            } else {
                down += 1
            }
            assert!(matches!(v[2], Value::Int(51) | Value::Int(77)), "{:?}", v[2]);
            assert_eq!(v[3], Value::Cat(1), "no resampling: the categorical stays");
        }
        assert!(up > 60 && down > 60, "either factor: {up} up, {down} down");
        // At the bounds: clipped; a small int moves one step.
        let edge = vec![Value::Float(1.0), Value::Float(0.99), Value::Int(1), Value::Cat(0)];
        for _ in 0..50 {
            let v = pbt.explore(&edge, &space(), &mut rng);
            assert!(space().contains(&v), "{v:?}");
            assert!(matches!(v[2], Value::Int(1) | Value::Int(2)), "{:?}", v[2]);
        }
        let always = make(PbtConfig { resample_prob: 1.0, ..config() });
        let cats: std::collections::HashSet<_> =
            (0..100).map(|_| format!("{:?}", always.explore(&start, &space(), &mut rng)[3])).collect();
        assert_eq!(cats.len(), 3, "resampled categoricals take every choice");
    }

    #[test]
    fn a_finished_member_ends_its_worker_and_is_not_exploited() {
        let pbt = make(config());
        let pool = population(vec![
            evaluated(0, 4, 0.1, 8, values(0.01)), // steps 8 + 2 = 10: finished
            evaluated(1, 3, 0.5, 6, values(0.02)),
            evaluated(2, 3, 0.7, 6, values(0.03)),
            evaluated(3, 3, 0.9, 6, values(0.04)),
        ]);
        assert!(pbt.worker_finished(Breeder { island: 0, worker: 0, generation: 5, since: 0 }, &pool));
        assert!(!pbt.worker_finished(Breeder { island: 0, worker: 3, generation: 4, since: 0 }, &pool));
        // The worst would exploit the best, but it is finished: the worst continues its own.
        let child = breed(&pbt, &pool, 3, 4, 0);
        let lineage = child.lineage.unwrap();
        assert_eq!((lineage.parent.unwrap().worker, lineage.exploited), (3, false));
    }

    #[test]
    fn the_last_interval_ends_at_the_budget() {
        let odd = make(PbtConfig { interval: 4, steps: Some(10), ..PbtConfig::default() });
        let pool = population(vec![evaluated(0, 1, 0.3, 4, values(0.01)), evaluated(1, 1, 0.4, 4, values(0.02))]);
        // evaluated() trains 2 steps: from 6 the budget of 10 leaves 4, then from 8 it leaves 2.
        assert_eq!(breed(&odd, &pool, 0, 2, 0).lineage.unwrap().steps, 4);
        let late = population(vec![evaluated(0, 1, 0.3, 6, values(0.01)), evaluated(1, 1, 0.4, 6, values(0.02))]);
        let child = breed(&odd, &late, 0, 2, 0).lineage.unwrap();
        assert_eq!((child.step, child.steps), (8, 2));
    }

    #[test]
    fn a_failed_member_exploits_or_starts_afresh() {
        let pbt = make(config());
        let mut failed = evaluated(1, 3, f64::INFINITY, 6, values(0.02));
        failed.failure = Some("NaN".into());
        let pool = population(vec![evaluated(0, 3, 0.4, 6, values(0.01)), failed.clone()]);
        let child = breed(&pbt, &pool, 1, 4, 0);
        assert_eq!(child.lineage.unwrap().parent.unwrap().worker, 0, "exploits the one good member");
        // Nothing to exploit (alone, or every other member finished): the failed interval is
        // trained again from the member's previous state, its hyperparameters kept.
        let finished = evaluated(0, 4, 0.1, 8, values(0.01));
        for pool in [population(vec![failed.clone()]), population(vec![finished, failed.clone()])] {
            let child = breed(&pbt, &pool, 1, 4, 0);
            let lineage = child.lineage.as_deref().copied().unwrap();
            assert_eq!(lineage.parent, Some(IndividualId { island: 0, worker: 1, generation: 2 }), "retried");
            assert_eq!((lineage.step, lineage.steps, lineage.exploited), (6, 2, false));
            assert_eq!(child.values, failed.values);
        }
        // The retry failed too (it continued generation 2, not 3): a fresh member.
        let mut retry = evaluated(1, 4, f64::INFINITY, 6, values(0.02));
        retry.lineage.as_mut().unwrap().parent = Some(IndividualId { island: 0, worker: 1, generation: 2 });
        retry.failure = Some("NaN".into());
        let child = breed(&pbt, &population(vec![failed, retry]), 1, 5, 0);
        assert_eq!(child.lineage.as_deref(), Some(&Lineage::fresh(2)), "failed twice: a fresh member");
    }

    /// Where every training fails, a worker gives up after a few fresh members in a row instead
    /// of starting them for ever (a run ended by its members' budget would never end).
    #[test]
    fn a_worker_whose_evaluations_keep_failing_breeds_no_more() {
        let pbt = make(config());
        let failed = |g: u64| {
            let mut f = evaluated(1, g, f64::INFINITY, 0, values(0.02));
            f.failure = Some("NCCL: two ranks on one GPU".into());
            f
        };
        let at = |generation| Breeder { island: 0, worker: 1, generation, since: 0 };
        let two = population(vec![evaluated(1, 0, 0.5, 0, values(0.02)), failed(1), failed(2)]);
        assert!(!pbt.worker_finished(at(3), &two), "two failures: it starts afresh");
        let three = population(vec![failed(0), failed(1), failed(2)]);
        assert!(pbt.worker_finished(at(3), &three));
        let recovered = population(vec![failed(0), failed(1), failed(2), evaluated(1, 3, 0.4, 0, values(0.02))]);
        assert!(!pbt.worker_finished(at(4), &recovered), "a success in between resets the count");
        assert!(!pbt.worker_finished(at(2), &three), "fewer evaluations than the limit");
        let resumed = Breeder { since: 1, ..at(3) };
        assert!(!pbt.worker_finished(resumed, &three), "failures of an earlier start do not count");
    }

    #[test]
    fn same_seed_same_child_and_bad_settings_are_refused() {
        let pbt = make(config());
        let pool = population(vec![evaluated(0, 3, 0.1, 6, values(0.01)), evaluated(1, 3, 0.9, 6, values(0.02))]);
        assert_eq!(breed(&pbt, &pool, 1, 4, 7), breed(&pbt, &pool, 1, 4, 7));
        let e = |c: PbtConfig| Pbt::new(&space(), c).unwrap_err().to_string();
        assert!(e(PbtConfig { interval: 0, ..config() }).contains("interval"));
        assert!(e(PbtConfig { quantile: 0.6, ..config() }).contains("quantile must be in (0, 0.5]"));
        assert!(e(PbtConfig { resample_prob: 1.5, ..config() }).contains("probability"));
        assert!(e(PbtConfig { steps: Some(1), ..config() }).contains("at least one interval"));
        assert!(e(PbtConfig { keep_s: -1.0, ..config() }).contains("keep seconds"));
        assert!(e(PbtConfig { keep_s: 1e30, ..config() }).contains("from 0 to 1e10"), "no duration the clock can add");
        let fixed = |names: &[&str]| PbtConfig { fixed: names.iter().map(|n| n.to_string()).collect(), ..config() };
        assert!(e(fixed(&["width"])).contains("pbt fixed parameter 'width' is not in the search space; known: lr,"));
        // Fixed parameters are copied, the others explored.
        let keep = make(PbtConfig { resample_prob: 1.0, ..fixed(&["batch", "act"]) });
        let mut rng = worker_rng(5, 0);
        for _ in 0..20 {
            let v = keep.explore(&values(0.01), &space(), &mut rng);
            assert_eq!((v[2], v[3]), (Value::Int(64), Value::Cat(1)));
        }
    }
}
