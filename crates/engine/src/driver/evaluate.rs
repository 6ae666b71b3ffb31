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
use propulate_core::space::SearchSpace;

/// What a loss closure returns: a loss, or an error that marks the evaluation as failed.
pub type LossResult = std::result::Result<f64, Box<dyn std::error::Error + Send + Sync>>;

/// Evaluate `ind` in place: sets `loss`, `failure`, `start_us` and `duration_s`.
pub(crate) fn evaluate<F>(loss: &mut F, space: &SearchSpace, ind: &mut Individual, ctx: &mut WorkerContext<'_>)
where
    F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> LossResult,
{
    ind.start_us = chrono::Utc::now().timestamp_micros();
    let t0 = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| loss(Params::new(space, &ind.values), ctx)));
    ind.duration_s = t0.elapsed().as_secs_f64();
    ind.metrics = std::mem::take(&mut ctx.metrics).into_iter().collect();
    let curve = std::mem::take(&mut ctx.reports.curve);
    ind.curve = (curve.pruned || !curve.points.is_empty()).then_some(curve);
    let failure = match outcome {
        Ok(Ok(x)) if x.is_nan() => Some("the loss is NaN".to_string()),
        Ok(Ok(x)) if x == f64::NEG_INFINITY => Some("the loss is -inf".to_string()),
        Ok(Ok(x)) => {
            ind.loss = x;
            None
        }
        Ok(Err(e)) => Some(format!("the loss returned an error: {e}")),
        Err(panic) => Some(format!("the loss panicked: {}", panic_message(panic.as_ref()))),
    };
    if failure.is_some() {
        ind.loss = f64::INFINITY;
    }
    ind.failure = failure;
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
