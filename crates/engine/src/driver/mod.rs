//! The run driver: split the world into workers and islands, run every worker root's asynchronous
//! loop (sub-ranks of multi-rank workers follow their root), end cleanly, and summarize. Reached
//! only through [`Optimizer`](crate::Optimizer).

mod agree;
mod checkpoint;
mod evaluate;
mod follower;
/// The wire format between worker roots: public so that `benches/rank_costs.rs` measures what a rank
/// pays to handle a message with the driver's own codec.
pub mod message;
mod resume;
mod root;
mod summary;
mod termination;

pub use evaluate::{LossError, LossResult, LossValue, ObjectivesResult};

use std::time::Instant;

use crate::config::RunConfig;
use crate::context::WorkerContext;
use crate::error::Result;
use crate::launcher::{Device, LaunchInfo};
use crate::observe::{Observers, RankInfo};
use crate::result::RunResult;
use crate::training_state::TrainingStates;
use crate::transport::{Communicator, borrow_boxed};
use propulate_core::early_stop::EarlyStopper;
use propulate_core::individual::{Individual, Params};
use propulate_core::layout::Layout;
use propulate_core::propagator::Propagator;
use propulate_core::space::SearchSpace;
use propulate_core::topology::Topology;

use agree::agree;
use message::encode;
use root::RootWorker;

/// What every part of one rank's run reads: the checked inputs and where the rank stands.
pub(crate) struct Run<'a> {
    pub cfg: &'a RunConfig,
    pub space: &'a SearchSpace,
    pub layout: Layout,
    pub rank: usize,
    pub device: Device,
    pub start: Instant,
    /// Stops hopeless evaluations from what they report (`WorkerContext::report`).
    pub stopper: Option<&'a dyn EarlyStopper>,
    /// The checkpoint's training states (population-based training), when checkpointing.
    pub states: Option<TrainingStates>,
    /// The values of the configurations to evaluate first ([`RunConfig::enqueued`]).
    pub enqueued: Vec<Vec<propulate_core::Value>>,
}

impl Run<'_> {
    /// The context a loss gets on this rank for `ind`.
    pub fn worker_context<'c>(&self, ind: &Individual, comm: Option<&'c mut dyn Communicator>) -> WorkerContext<'c> {
        let mut ctx = WorkerContext::new(
            &self.layout,
            self.rank,
            evaluate::evaluation_seed(self.cfg.seed, ind),
            self.device,
            comm,
        );
        ctx.reports.stopping = self.stopper.is_some();
        ctx.trial = ind.id;
        if let (Some(states), Some(lineage)) = (&self.states, &ind.lineage) {
            ctx.training = Some(states.for_evaluation(ind.id, lineage));
        }
        ctx
    }
}

/// Run an optimization on `world` (collective: every rank calls it with the same arguments).
///
/// Configuration errors are returned identically on every rank before any message is sent. An
/// error in the middle of the run (a corrupted message, a propagator bug) aborts the whole job with
/// its message, so that no rank is left waiting.
pub(crate) fn run<F>(
    world: &mut dyn Communicator,
    cfg: &RunConfig,
    space: &SearchSpace,
    propagator: Option<&dyn Propagator>,
    stopper: Option<&dyn EarlyStopper>,
    observers: &Observers,
    mut loss: F,
) -> Result<RunResult>
where
    F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> ObjectivesResult,
{
    cfg.validate()?;
    if let Some(s) = stopper {
        s.validate()?;
        if cfg.multi_objective() {
            return Err(crate::error::Error::InvalidConfig(format!(
                "early stopping compares one loss; this run declares {} objectives: run without a stopper \
                 (the command line's --early-stop none)",
                cfg.objectives.len()
            )));
        }
    }
    let layout = Layout::new(world.size(), cfg.ranks_per_worker, &cfg.islands)?;
    Topology::new(&cfg.topology, layout.islands())?;
    // The configuration in effect, which the checkpoint records: the program's own propagator by
    // its name, else the built-in one with every setting, resolved on rank 0 against the
    // checkpoint it resumes (a choice merged with the recorded spec, or the recorded spec itself).
    let mut resolved = cfg.clone();
    resolved.custom_propagator = propagator.map(|p| p.name().to_string());
    let mut opened = checkpoint::open(world, &resolved, space, &layout)?;
    resolved.propagator = opened.propagator.take();
    resolved.generations = opened.generations;
    let picked = opened.picked.take();
    resolved.propagator_choice = None;
    resolved.validate()?;
    let built;
    let propagator: &dyn Propagator = match (propagator, &resolved.propagator) {
        (Some(p), _) => p,
        (None, Some(spec)) => {
            built = spec.build(space)?;
            built.as_ref()
        }
        (None, None) => unreachable!("a run without its own propagator resolves a built-in one"),
    };
    let trains_members = propagator.training_state_keep_s().is_some();
    if trains_members && stopper.is_some() {
        return Err(crate::error::Error::InvalidConfig(
            "population-based training decides itself which members go on, after every interval: run it without \
             an early stopper (the command line's --early-stop none); a stopped evaluation would leave a state \
             that trained fewer steps than its lineage says"
                .into(),
        ));
    }
    let enqueued = propulate_core::enqueued::all_values(space, &resolved.enqueued)?;
    if trains_members && !enqueued.is_empty() {
        return Err(crate::error::Error::InvalidConfig(
            "population-based training starts every member fresh and then continues it: it takes no enqueued \
             configurations (leave out --enqueue)"
                .into(),
        ));
    }
    // Imported evaluations have no training state to continue: they are no members, yet one could
    // become the run's best, with no lineage.
    if trains_members && resolved.checkpoint.as_ref().is_some_and(|ck| !ck.warm_start.is_empty()) {
        return Err(crate::error::Error::InvalidConfig(
            "population-based training continues its members' training states, which an earlier run's \
             evaluations have not: it takes no warm start (leave out --warm-start)"
                .into(),
        ));
    }
    if trains_members && resolved.checkpoint.is_none() {
        return Err(crate::error::Error::InvalidConfig(
            "population-based training keeps its members' training states under the checkpoint directory: \
             run with a checkpoint (the command line's --checkpoint DIR, not --no-checkpoint)"
                .into(),
        ));
    }
    let cfg = &resolved;
    let rank = world.rank();
    let is_root = layout.is_worker_root(rank);
    let mut worker_comm =
        if layout.ranks_per_worker() > 1 { world.split(Some(layout.worker_of_rank(rank) as u32), rank)? } else { None };
    // A worker's ranks meet every generation, at once: their waits are short and frequent.
    if let Some(wc) = worker_comm.as_mut() {
        wc.set_patient(false);
    }
    let mut roots = world.split(is_root.then_some(0), rank)?;
    let launch = LaunchInfo::detect();
    let mut observers = observers.for_rank(rank_info(&layout, rank, &launch));
    let started = observers.start().map_err(crate::error::Error::Observer);
    agree(world, started)?;
    if let Some(why) = &picked {
        observers.emit(&crate::observe::Event::Notice(why));
    }
    // Once for the run, as the other notices before the run starts.
    if let Some(left) = enqueued_beyond_budget(enqueued.len(), &layout, cfg.generations).filter(|_| world.rank() == 0) {
        observers.emit(&crate::observe::Event::Notice(&left));
    }
    let dropped = propulate_core::enqueued::inactive_given(space, &resolved.enqueued, &enqueued);
    if let Some(dropped) = dropped.filter(|_| world.rank() == 0) {
        observers.emit(&crate::observe::Event::Notice(&dropped));
    }
    let mut resumed =
        checkpoint::prepare(world, borrow_boxed(&mut roots), cfg, space, &layout, &mut observers, opened)?;
    world.barrier()?;
    let states = cfg.checkpoint.as_ref().map(|ck| TrainingStates::new(&ck.dir));
    let states_on_disk = states.clone();
    let run =
        Run { cfg, space, layout, rank, device: launch.device(), start: Instant::now(), stopper, states, enqueued };

    // A panic outside the loss (a custom propagator, an internal invariant) must end the job too:
    // unwinding would leave the other ranks waiting for this one.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match borrow_boxed(&mut roots) {
        Some(roots) => {
            // The worker takes what it needs from the checkpoint; nothing of it outlives this.
            let worker = RootWorker::new(&run, propagator, resumed.take(), &mut observers)?;
            worker.run_to_end(roots, borrow_boxed(&mut worker_comm), &mut loss)
        }
        None => {
            let wc = borrow_boxed(&mut worker_comm).expect("non-root ranks belong to a multi-rank worker");
            follower::follow(&run, wc, &mut loss, &mut observers)
        }
    }));
    match outcome {
        Ok(Ok(mut result)) => {
            result.propagator = cfg.propagator.clone();
            if let (0, Some(states), true) = (rank, &states_on_disk, trains_members) {
                result.training_states = Some(states.disk_use());
            }
            Ok(result)
        }
        // Abort before the communicators are dropped: dropping waits for pending sends, which a
        // peer blocked in a collective would never receive.
        Ok(Err(e)) => world.abort(1, &format!("unrecoverable error: {e}")),
        Err(panic) => match crate::interrupt::interruption(panic.as_ref()) {
            // Alone in its world, a rank can return: nobody waits for it.
            Some(why) if world.size() == 1 => Err(crate::error::Error::Interrupted(why.0.clone())),
            Some(why) => world.abort(1, &format!("interrupted on rank {rank}: {}", why.0)),
            None => world.abort(1, &format!("panic: {}", crate::panic_message::panic_message(panic.as_ref()))),
        },
    }
}

fn rank_info(layout: &Layout, rank: usize, launch: &LaunchInfo) -> RankInfo {
    let worker = layout.worker_of_rank(rank);
    RankInfo {
        rank,
        world_size: layout.world_size(),
        worker,
        workers: layout.workers(),
        island: layout.island_of_worker(worker),
        islands: layout.islands(),
        rank_in_worker: layout.rank_in_worker(rank),
        ranks_per_worker: layout.ranks_per_worker(),
        launcher: launch.launcher,
        local_rank: launch.local_rank,
        host: crate::launcher::hostname(),
    }
}

/// After the roots' summary: tell the followers that the run is over and hand them the result
/// (without the trials, which only world rank 0 keeps).
fn release_followers(worker_comm: &mut dyn Communicator, result: &RunResult) -> Result<()> {
    worker_comm.broadcast(0, &mut encode(&None::<Individual>))?;
    let mut bytes = encode(&RunResult { trials: Vec::new(), ..result.clone() });
    worker_comm.broadcast(0, &mut bytes)
}

/// What to tell where more configurations are enqueued than the run evaluates: configuration k
/// is worker `k mod workers`'s child of its generation `k / workers`, so those past the last
/// generation would wait silently for a longer run.
fn enqueued_beyond_budget(enqueued: usize, layout: &Layout, generations: u64) -> Option<String> {
    let workers = layout.workers();
    let budget = u64::try_from(workers).ok()?.saturating_mul(generations);
    let left = u64::try_from(enqueued).ok()?.checked_sub(budget).filter(|&left| left > 0)?;
    Some(format!(
        "{enqueued} configurations are enqueued, but the run evaluates at most {budget} ({workers} workers x \
         {generations} generations): the last {left} are not evaluated (a longer run, more --generations, \
         evaluates them)"
    ))
}
