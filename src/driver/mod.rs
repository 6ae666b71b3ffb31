//! The run driver: split the world into workers and islands, run every worker root's asynchronous
//! loop (sub-ranks of multi-rank workers follow their root), end cleanly, and summarize.

mod checkpoint;
mod evaluate;
mod message;
mod progress;
mod rank_log;
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
use crate::error::{Error, Result};
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
use rank_log::RankLog;
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
    let launch = LaunchInfo::detect();
    let device = launch.device();
    let rank_log = open_rank_log(world, cfg, &layout, &launch)?;
    let replay = checkpoint::prepare(world, borrow_boxed(&mut roots), cfg, space, &layout)?;
    world.barrier()?;
    let start = Instant::now();

    // A panic outside the loss (a custom propagator, an internal invariant) must end the job too:
    // unwinding would leave the other ranks waiting for this one.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match borrow_boxed(&mut roots) {
        Some(roots) => {
            let wc = borrow_boxed(&mut worker_comm);
            let (replay, w) = (replay.as_ref(), wc);
            run_root(roots, w, cfg, space, propagator, &layout, rank, device, &mut loss, start, replay, rank_log)
        }
        None => {
            let wc = borrow_boxed(&mut worker_comm).expect("non-root ranks belong to a multi-rank worker");
            run_follower(wc, cfg, space, &layout, rank, device, &mut loss, rank_log)
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

/// Every rank learns every rank's error; all return the lowest rank's, so that rank 0 reports what
/// went wrong anywhere and no rank goes on alone. `remote` rebuilds another rank's error from its text.
fn agree(world: &mut dyn Communicator, mine: Result<()>, remote: impl Fn(&str) -> Error) -> Result<()> {
    let message = match &mine {
        Ok(()) => Vec::new(),
        Err(e) => e.to_string().into_bytes(),
    };
    let all = world.all_gather(message)?;
    match all.iter().position(|m| !m.is_empty()) {
        None => Ok(()),
        Some(rank) if rank == world.rank() => mine,
        Some(rank) => Err(remote(&String::from_utf8_lossy(&all[rank]))),
    }
}

/// This rank's log file, opened on every rank or on none.
fn open_rank_log(
    world: &mut dyn Communicator,
    cfg: &RunConfig,
    layout: &Layout,
    launch: &LaunchInfo,
) -> Result<RankLog> {
    let Some(settings) = &cfg.rank_logs else { return Ok(RankLog::off()) };
    let rank = world.rank();
    let worker = layout.worker_of_rank(rank);
    let role = match layout.ranks_per_worker() {
        1 => format!("rank {rank} (worker {worker}, island {})", layout.island_of_worker(worker)),
        _ => format!(
            "rank {rank} (worker {worker} rank {}, island {})",
            layout.rank_in_worker(rank),
            layout.island_of_worker(worker)
        ),
    };
    let (mut log, mine) = match RankLog::open(&settings.dir, rank, role) {
        Ok(log) => (log, Ok(())),
        Err(e) => (RankLog::off(), Err(e)),
    };
    agree(world, mine, |text| Error::RankLog(text.strip_prefix("per-rank log: ").unwrap_or(text).to_string()))?;
    let host = crate::launcher::hostname();
    log.line(|| {
        format!(
            "start: {} ranks, {} workers on {} islands, launcher {:?}, local rank {}, host {}",
            layout.world_size(),
            layout.workers(),
            layout.islands(),
            launch.launcher,
            launch.local_rank,
            host
        )
    });
    Ok(log)
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
    rank_log: RankLog,
) -> Result<RunResult>
where
    F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> LossResult,
{
    let mut w = RootWorker::new(cfg, space, propagator, layout, rank, device, replay)?;
    w.rank_log = rank_log;
    let resumed = w.evaluated.len() as u64;
    if resumed > 0 {
        w.rank_log.line(|| format!("resumed after {resumed} evaluations of this worker"));
    }
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
#[allow(clippy::too_many_arguments)]
fn run_follower<F>(
    wc: &mut dyn Communicator,
    cfg: &RunConfig,
    space: &SearchSpace,
    layout: &Layout,
    rank: usize,
    device: crate::launcher::Device,
    loss: &mut F,
    mut rank_log: RankLog,
) -> Result<RunResult>
where
    F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> LossResult,
{
    let worker = layout.worker_of_rank(rank);
    let mut evaluations = 0u64;
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
        if let Some(reason) = &ind.failure {
            rank_log.line(|| format!("generation {} failed on this rank: {reason}", ind.id.generation));
        }
        agree_on_failure(wc, &mut ind)?;
        evaluations += 1;
    }
    rank_log.line(|| format!("done: took part in {evaluations} evaluations"));
    let mut bytes = Vec::new();
    wc.broadcast(0, &mut bytes)?;
    decode(&bytes, 0)
}
