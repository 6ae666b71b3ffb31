//! The run driver: split the world into workers and islands, run every worker root's asynchronous
//! loop (sub-ranks of multi-rank workers follow their root), end cleanly, and summarize.

mod checkpoint;
mod evaluate;
mod message;
mod progress;
mod summary;
mod termination;
mod worker;

pub use evaluate::LossResult;
pub use message::Message;
pub use summary::RunResult;
pub(crate) use summary::global_best;

use std::time::Instant;

use crate::config::RunConfig;
use crate::context::WorkerContext;
use crate::error::Result;
use crate::individual::{Individual, Params};
use crate::launcher::LaunchInfo;
use crate::layout::Layout;
use crate::propagator::{DefaultPropagatorConfig, Propagator, default_propagator};
use crate::space::SearchSpace;
use crate::topology::Topology;
use crate::transport::{Communicator, borrow_boxed, reborrow};

use evaluate::{agree_on_failure, evaluate, evaluation_seed};
use message::{decode, encode};
use progress::Progress;
use worker::RootWorker;

/// Run an optimization on `world` (collective: every rank calls it with the same arguments).
///
/// Configuration errors are returned identically on every rank before any message is sent. An
/// error in the middle of the run (a corrupted message, a propagator bug) aborts the whole job with
/// its message, so that no rank is left waiting.
pub fn run<F>(
    world: &mut dyn Communicator,
    cfg: &RunConfig,
    space: &SearchSpace,
    propagator: Option<&dyn Propagator>,
    mut loss: F,
) -> Result<RunResult>
where
    F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> LossResult,
{
    cfg.validate()?;
    let layout = Layout::new(world.size(), cfg.ranks_per_worker, &cfg.islands)?;
    Topology::new(&cfg.topology, layout.islands())?;
    let default;
    let propagator: &dyn Propagator = match propagator {
        Some(p) => p,
        None => {
            let pcfg = cfg.propagator.clone().unwrap_or_else(|| DefaultPropagatorConfig::for_workers(layout.workers()));
            default = default_propagator(space, &pcfg)?;
            default.as_ref()
        }
    };
    let rank = world.rank();
    let is_root = layout.is_worker_root(rank);
    let mut worker_comm =
        if layout.ranks_per_worker() > 1 { world.split(Some(layout.worker_of_rank(rank) as u32), rank)? } else { None };
    let mut roots = world.split(is_root.then_some(0), rank)?;
    let device = LaunchInfo::detect().device();
    let replay = checkpoint::prepare(world, borrow_boxed(&mut roots), cfg, space, &layout)?;
    world.barrier()?;
    let start = Instant::now();

    // A panic outside the loss (a custom propagator, an internal invariant) must end the job too:
    // unwinding would leave the other ranks waiting for this one.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match borrow_boxed(&mut roots) {
        Some(roots) => {
            let wc = borrow_boxed(&mut worker_comm);
            run_root(roots, wc, cfg, space, propagator, &layout, rank, device, &mut loss, start, replay.as_ref())
        }
        None => {
            let wc = borrow_boxed(&mut worker_comm).expect("non-root ranks belong to a multi-rank worker");
            run_follower(wc, cfg, space, &layout, rank, device, &mut loss)
        }
    }));
    match outcome {
        Ok(Ok(result)) => Ok(result),
        // Abort before the communicators are dropped: dropping waits for pending sends, which a
        // peer blocked in a collective would never receive.
        Ok(Err(e)) => world.abort(1, &format!("unrecoverable error: {e}")),
        Err(panic) => world.abort(1, &format!("panic: {}", evaluate::panic_message(panic.as_ref()))),
    }
}

#[allow(clippy::too_many_arguments)]
fn run_root<F>(
    roots: &mut dyn Communicator,
    mut worker_comm: Option<&mut dyn Communicator>,
    cfg: &RunConfig,
    space: &SearchSpace,
    propagator: &dyn Propagator,
    layout: &Layout,
    rank: usize,
    device: crate::launcher::Device,
    loss: &mut F,
    start: Instant,
    replay: Option<&crate::journal::Replay>,
) -> Result<RunResult>
where
    F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> LossResult,
{
    let mut w = RootWorker::new(cfg, space, propagator, layout, rank, device, replay)?;
    let resumed = w.evaluated.len() as u64;
    let mut progress = (cfg.progress && rank == 0).then(|| Progress::new(cfg.generations));
    w.run(roots, reborrow(&mut worker_comm), loss, &mut progress)?;
    let wall_s = start.elapsed().as_secs_f64();
    let evaluated = std::mem::take(&mut w.evaluated);
    let outcome = summary::RootOutcome {
        island: w.island,
        population: &w.population,
        evaluated,
        emigrated: w.emigrated,
        resumed,
        wall_s,
    };
    let result = summary::summarize(roots, layout, cfg.top_n, outcome)?;
    if let Some(wc) = worker_comm {
        // Tell the followers that the run is over, then hand them the result (without trials).
        wc.broadcast(0, &mut encode(&None::<Individual>))?;
        let mut bytes = encode(&RunResult { trials: Vec::new(), ..result.clone() });
        wc.broadcast(0, &mut bytes)?;
    }
    Ok(result)
}

/// A non-root rank of a multi-rank worker: evaluate whatever the root broadcasts, until told to stop.
fn run_follower<F>(
    wc: &mut dyn Communicator,
    cfg: &RunConfig,
    space: &SearchSpace,
    layout: &Layout,
    rank: usize,
    device: crate::launcher::Device,
    loss: &mut F,
) -> Result<RunResult>
where
    F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> LossResult,
{
    let worker = layout.worker_of_rank(rank);
    loop {
        let mut bytes = Vec::new();
        wc.broadcast(0, &mut bytes)?;
        let Some(mut ind) = decode::<Option<Individual>>(&bytes, 0)? else { break };
        let mut ctx = WorkerContext {
            world_rank: rank,
            world_size: layout.world_size(),
            worker,
            workers: layout.workers(),
            island: layout.island_of_worker(worker),
            worker_rank: wc.rank(),
            worker_size: wc.size(),
            seed: evaluation_seed(cfg.seed, &ind),
            device,
            comm: Some(&mut *wc),
        };
        evaluate(loss, space, &mut ind, &mut ctx);
        agree_on_failure(wc, &mut ind)?;
    }
    let mut bytes = Vec::new();
    wc.broadcast(0, &mut bytes)?;
    decode(&bytes, 0)
}
