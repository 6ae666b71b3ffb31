//! A non-root rank of a multi-rank worker: evaluate whatever the root broadcasts, until told to
//! stop, then receive the run's result from the root.

use propulate_core::individual::{Individual, Params};

use super::Run;
use super::evaluate::{ObjectivesResult, agree_on_failure, evaluate};
use super::message::decode;
use crate::context::WorkerContext;
use crate::error::Result;
use crate::observe::{Event, RankObservers};
use crate::result::RunResult;
use crate::transport::Communicator;

pub(crate) fn follow<F>(
    run: &Run<'_>,
    wc: &mut dyn Communicator,
    loss: &mut F,
    observers: &mut RankObservers<'_>,
) -> Result<RunResult>
where
    F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> ObjectivesResult,
{
    let mut evaluations = 0u64;
    loop {
        let mut bytes = Vec::new();
        wc.broadcast(0, &mut bytes)?;
        let Some(mut ind) = decode::<Option<Individual>>(&bytes, 0)? else { break };
        let mut ctx = run.worker_context(&ind, Some(&mut *wc));
        evaluate(loss, run.space, &run.cfg.objectives, &mut ind, &mut ctx);
        if let Some(reason) = &ind.failure {
            observers.emit(&Event::Failed { generation: ind.id.generation, reason });
        }
        agree_on_failure(wc, &mut ind)?;
        evaluations += 1;
    }
    observers.emit(&Event::FollowerFinished { evaluations });
    let mut bytes = Vec::new();
    wc.broadcast(0, &mut bytes)?;
    decode(&bytes, 0)
}
