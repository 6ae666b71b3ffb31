//! One evaluation: call the loss, time it, and turn an error, a panic or a NaN into a recorded
//! failure (loss = +inf, reason kept) so that the run goes on.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use super::message::{decode, encode};
use crate::context::WorkerContext;
use crate::error::Result;
use crate::panic_message::panic_message;
use crate::transport::Communicator;
use propulate_core::individual::{Individual, Params};
use propulate_core::objective::Objective;
use propulate_core::space::SearchSpace;

/// An error a loss returns: the evaluation is recorded as failed, with its message.
pub type LossError = Box<dyn std::error::Error + Send + Sync>;

/// What a loss closure returns: a loss, or an error that marks the evaluation as failed.
pub type LossResult = std::result::Result<f64, LossError>;

/// What a loss closure of a run with several objectives returns: one value per declared objective
/// (as reported: a maximized one is not negated), or an error.
pub type ObjectivesResult = std::result::Result<Vec<f64>, LossError>;

/// What a loss closure may return: one loss, or one value per declared objective.
pub trait LossValue {
    /// The values, in order.
    fn into_values(self) -> Vec<f64>;
}

impl LossValue for f64 {
    fn into_values(self) -> Vec<f64> {
        vec![self]
    }
}

impl LossValue for Vec<f64> {
    fn into_values(self) -> Vec<f64> {
        self
    }
}

impl<const N: usize> LossValue for [f64; N] {
    fn into_values(self) -> Vec<f64> {
        self.to_vec()
    }
}

/// Evaluate `ind` in place: sets `loss` (and `objectives` when the run declares some), `failure`,
/// `start_us` and `duration_s`. An individual that comes with a failure (its worker root found it
/// could not run: a training state to continue is missing) is not evaluated, on any rank.
pub(crate) fn evaluate<F>(
    loss: &mut F,
    space: &SearchSpace,
    objectives: &[Objective],
    ind: &mut Individual,
    ctx: &mut WorkerContext<'_>,
) where
    F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> ObjectivesResult,
{
    ind.start_us = chrono::Utc::now().timestamp_micros();
    if ind.failure.is_some() {
        ind.loss = f64::INFINITY;
        return;
    }
    let t0 = Instant::now();
    let outcome = match catch_unwind(AssertUnwindSafe(|| loss(Params::new(space, &ind.values), ctx))) {
        // An interruption ends the run, not the evaluation: nothing of it is recorded.
        Err(payload) if crate::interrupt::interruption(payload.as_ref()).is_some() => {
            std::panic::resume_unwind(payload)
        }
        outcome => outcome,
    };
    ind.duration_s = t0.elapsed().as_secs_f64();
    ind.metrics = std::mem::take(&mut ctx.metrics).into_iter().collect();
    let constraints = std::mem::take(&mut ctx.constraints);
    let curve = std::mem::take(&mut ctx.reports.curve);
    ind.curve = (curve.pruned || !curve.points.is_empty()).then_some(curve);
    let failure = match outcome {
        Ok(Ok(values)) => {
            record_values(ind, objectives, values).and_then(|()| record_constraints(ind, constraints)).err()
        }
        Ok(Err(e)) => Some(format!("the loss returned an error: {e}")),
        Err(panic) => Some(format!("the loss panicked: {}", panic_message(panic.as_ref()))),
    };
    if failure.is_some() {
        ind.loss = f64::INFINITY;
        ind.objectives.clear();
        ind.constraints.clear();
    }
    ind.failure = failure;
}

/// Keep the constraint values the loss reported, or say why they cannot be kept: one that is not
/// a finite number (the journal, JSON, has none of NaN and the infinities).
fn record_constraints(ind: &mut Individual, constraints: Vec<f64>) -> Result<(), String> {
    if let Some((k, c)) = constraints.iter().enumerate().find(|(_, c)| !c.is_finite()) {
        return Err(format!(
            "constraint {} of {} is {c}: constraints must be finite numbers",
            k + 1,
            constraints.len()
        ));
    }
    ind.constraints = constraints;
    Ok(())
}

/// Set the loss (and objectives) from what the loss returned, or say why the values cannot be
/// recorded: the wrong number of them, a NaN, an infinite objective or loss.
fn record_values(ind: &mut Individual, objectives: &[Objective], values: Vec<f64>) -> Result<(), String> {
    let names = || objectives.iter().map(|o| o.name.as_str()).collect::<Vec<_>>().join(", ");
    match (objectives.len(), values.len()) {
        (0, 1) => {}
        (0, n) => {
            return Err(format!(
                "the loss returned {n} values, but the run declares no objectives: return one loss, or \
                 declare one objective per value"
            ));
        }
        (declared, n) if declared != n => {
            return Err(format!("the loss returned {n} values for the {declared} objectives {}", names()));
        }
        _ => {}
    }
    if objectives.is_empty() {
        let x = values[0];
        if x.is_nan() {
            return Err("the loss is NaN".into());
        }
        // +inf too: a failure is recorded with loss +inf, so a "success" of +inf would read back
        // as a failure from the journal, and the run would report it as its best loss.
        if x.is_infinite() {
            return Err(format!("the loss is {x}"));
        }
        ind.loss = x;
        return Ok(());
    }
    // A value of a front must be a number: an infinite one could not be recorded in the journal.
    if let Some((o, v)) = objectives.iter().zip(&values).find(|(_, v)| !v.is_finite()) {
        return Err(format!("objective '{}' is {v}", o.name));
    }
    ind.loss = values[0] * objectives[0].sign();
    ind.objectives = values;
    Ok(())
}

/// After a multi-rank evaluation, every rank of the worker learns whether any rank failed. A loss
/// that errs, panics or gives NaN on one rank only would otherwise be recorded as the root's value,
/// and the failure would be lost. The lowest failing rank's reason is recorded (root first).
pub(crate) fn agree_on_failure(worker_comm: &mut dyn Communicator, ind: &mut Individual) -> Result<()> {
    let outcomes = worker_comm.all_gather(encode(&ind.failure))?;
    for (rank, bytes) in outcomes.iter().enumerate() {
        if let Some(reason) = decode::<Option<String>>(bytes, rank)? {
            if rank != worker_comm.rank() {
                ind.failure = Some(format!("rank {rank} of the worker: {reason}"));
            }
            ind.loss = f64::INFINITY;
            ind.objectives.clear();
            break;
        }
    }
    Ok(())
}

/// A seed for one evaluation, the same on every rank of the worker (SplitMix64 of run seed and id).
pub(crate) fn evaluation_seed(seed: u64, ind: &Individual) -> u64 {
    propulate_core::rng::mix64(
        seed ^ (ind.id.worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ ind.id.generation.wrapping_mul(0xBF58_476D_1CE4_E5B9),
    )
}
