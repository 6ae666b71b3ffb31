//! The asynchronous loop of one worker root: breed from the population it knows, have its worker
//! evaluate, publish to island peers without blocking, drain the inbox, maybe emigrate. No
//! generation barrier anywhere.

use rand::RngExt;
use rand::seq::SliceRandom;

use crate::config::RunConfig;
use crate::context::WorkerContext;
use crate::error::{Error, Result};
use crate::individual::{Individual, IndividualId, Params};
use crate::journal::{Event, JournalWriter, Replay, island_population};
use crate::launcher::Device;
use crate::layout::Layout;
use crate::population::{Arrival, Population};
use crate::propagator::Propagator;
use crate::rng::{PropRng, worker_rng};
use crate::space::SearchSpace;
use crate::topology::Topology;
use crate::transport::{Communicator, reborrow};

use super::evaluate::{LossResult, agree_on_failure, evaluate, evaluation_seed};
use super::message::{Message, TAG_DATA, decode, encode};
use super::progress::Progress;
use super::rank_log::RankLog;
use super::termination::{DataHandler, MessageCounts, drain_to_quiescence};

/// Everything one worker root holds.
pub(crate) struct RootWorker<'a> {
    pub cfg: &'a RunConfig,
    pub space: &'a SearchSpace,
    pub propagator: &'a dyn Propagator,
    pub layout: &'a Layout,
    pub topology: Topology,
    pub worker: usize,
    pub island: usize,
    pub index_in_island: u32,
    pub world_rank: usize,
    pub device: Device,
    pub population: Population,
    pub rng: PropRng,
    pub counts: MessageCounts,
    /// Every evaluation this worker did, in order.
    pub evaluated: Vec<Individual>,
    /// Individuals this worker sent to other islands (counted once per individual, not per receiver).
    pub emigrated: u64,
    /// The checkpoint journal, when checkpointing.
    pub journal: Option<JournalWriter>,
    /// First generation number of this run's workers (non-zero after a reshape).
    pub generation_offset: u64,
    /// This rank's log file (off unless asked for).
    pub rank_log: RankLog,
    /// Failed evaluations among `evaluated`.
    pub failed: u64,
}

impl<'a> RootWorker<'a> {
    pub fn new(
        cfg: &'a RunConfig,
        space: &'a SearchSpace,
        propagator: &'a dyn Propagator,
        layout: &'a Layout,
        world_rank: usize,
        device: Device,
        replay: Option<&Replay>,
    ) -> Result<Self> {
        let worker = layout.worker_of_rank(world_rank);
        let island = layout.island_of_worker(worker);
        let (population, evaluated, emigrated) = match replay {
            Some(r) => {
                let j = &r.workers[worker];
                let emigrated = j.emigrations.iter().map(|(_, inds)| inds.len() as u64).sum();
                (island_population(r, island), j.evaluated.clone(), emigrated)
            }
            None => (Population::new(), Vec::new(), 0),
        };
        let evaluated_failed = evaluated.iter().filter(|i: &&Individual| i.failure.is_some()).count() as u64;
        let journal = match &cfg.checkpoint {
            Some(ck) => Some(JournalWriter::create(&ck.dir, worker, ck.fsync)?),
            None => None,
        };
        Ok(RootWorker {
            cfg,
            space,
            propagator,
            layout,
            topology: Topology::new(&cfg.topology, layout.islands())?,
            worker,
            island,
            index_in_island: layout.index_in_island(worker) as u32,
            world_rank,
            device,
            population,
            rng: worker_rng(cfg.seed, worker as u64),
            counts: MessageCounts::new(layout.workers()),
            evaluated,
            emigrated,
            journal,
            generation_offset: replay.map_or(0, |r| r.manifest.generation_offset),
            rank_log: RankLog::off(),
            failed: evaluated_failed,
        })
    }

    /// Run all generations, then drain to a clean end.
    pub fn run<F>(
        &mut self,
        roots: &mut dyn Communicator,
        mut worker_comm: Option<&mut dyn Communicator>,
        loss: &mut F,
        progress: &mut Option<Progress>,
    ) -> Result<()>
    where
        F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> LossResult,
    {
        let first = self.generation_offset + self.evaluated.len() as u64;
        for generation in first..self.generation_offset + self.cfg.generations {
            // Each generation draws from its own block of the worker's stream, so a resumed worker
            // continues exactly where the interrupted one was, without saving generator state.
            self.rng.set_word_pos(u128::from(generation) << 40);
            let mut ind = self.breed(generation)?;
            // A `bred` record says what a worker was evaluating when it died; worth its own write
            // for slow losses, batched with the `eval` record for fast ones (one write fewer).
            if let Some(j) = self.journal.as_mut() {
                let bred = Event::Bred { id: ind.id, values: ind.values.clone() };
                match self.evaluated.last() {
                    Some(prev) if prev.duration_s < 1e-3 => j.defer(&bred),
                    _ => j.append(&bred)?,
                }
            }
            if let Some(wc) = reborrow(&mut worker_comm) {
                let mut bytes = encode(&Some(ind.clone()));
                wc.broadcast(0, &mut bytes)?;
            }
            let mut ctx = WorkerContext {
                world_rank: self.world_rank,
                world_size: self.layout.world_size(),
                worker: self.worker,
                workers: self.layout.workers(),
                island: self.island,
                worker_rank: 0,
                worker_size: self.layout.ranks_per_worker(),
                seed: evaluation_seed(self.cfg.seed, &ind),
                device: self.device,
                comm: reborrow(&mut worker_comm),
            };
            evaluate(loss, self.space, &mut ind, &mut ctx);
            if let Some(wc) = reborrow(&mut worker_comm) {
                agree_on_failure(wc, &mut ind)?;
            }
            if let Some(reason) = &ind.failure {
                self.failed += 1;
                self.rank_log.line(|| format!("generation {generation} failed: {reason}"));
            }
            self.log(|| Event::Eval { ind: ind.clone() })?; // before anyone hears of it
            self.population.insert(ind.clone());
            self.publish(roots, &ind)?;
            self.evaluated.push(ind);
            self.drain_inbox(roots)?;
            if self.layout.islands() > 1 && self.cfg.migration_probability > 0.0 {
                let p = self.cfg.migration_probability / self.layout.island_sizes()[self.island] as f64;
                if self.rng.random_bool(p.min(1.0)) {
                    self.emigrate(roots)?;
                }
            }
            roots.test_sends();
            // Let other ranks on this core run: with cheap losses and more ranks than cores, a worker
            // would otherwise run many generations per time slice without hearing from its peers
            // (measured: worse results on rastrigin; no loss of throughput).
            std::thread::yield_now();
            if let Some(p) = progress.as_mut() {
                p.tick(generation + 1, &self.population);
            }
            let interval = self.cfg.rank_logs.as_ref().map_or(u64::MAX, |l| l.interval);
            if (generation + 1 - self.generation_offset).is_multiple_of(interval) {
                self.log_status("generation");
            }
        }
        drain_to_quiescence(roots, self)?;
        self.log_status("done after generation");
        let generations = self.evaluated.len() as u64;
        self.log(|| Event::Done { generations })?;
        if let Some(j) = self.journal.as_mut() {
            j.sync()?;
        }
        Ok(())
    }

    /// A status line in the per-rank log: where this worker is and what its island knows.
    fn log_status(&mut self, what: &str) {
        if !self.rank_log.is_on() {
            return;
        }
        let (done, failed) = (self.evaluated.len(), self.failed);
        let best = self.population.iter_best().next().map(|i| i.loss);
        let (active, emigrated) = (self.population.active_len(), self.emigrated);
        self.rank_log.line(|| {
            let best = best.map_or("none yet".to_string(), |l| format!("{l:.6e}"));
            format!(
                "{what} {}: {done} evaluations ({failed} failed), island best {best}, {active} active, {emigrated} emigrated",
                self.generation_offset + done as u64
            )
        });
    }

    /// Append an event to the journal, if checkpointing (the event is built only then).
    fn log(&mut self, event: impl FnOnce() -> Event) -> Result<()> {
        match self.journal.as_mut() {
            Some(j) => j.append(&event()),
            None => Ok(()),
        }
    }

    fn breed(&mut self, generation: u64) -> Result<Individual> {
        let mut children = self.propagator.propagate(&self.population, self.space, &mut self.rng)?;
        if children.len() != 1 {
            return Err(Error::InvalidPropagator(format!(
                "the driver needs a propagator with one offspring, {} yielded {}",
                self.propagator.name(),
                children.len()
            )));
        }
        let mut ind = children.remove(0);
        if !self.space.contains(&ind.values) {
            return Err(Error::InvalidPropagator(format!(
                "propagator {} bred values outside the search space: {:?}",
                self.propagator.name(),
                ind.values
            )));
        }
        ind.id = IndividualId { island: self.island as u32, worker: self.worker as u32, generation };
        ind.current = self.index_in_island;
        ind.migration_steps = 0;
        ind.history = vec![self.island as u32];
        Ok(ind)
    }

    fn send(&mut self, roots: &mut dyn Communicator, to: usize, bytes: Vec<u8>) -> Result<()> {
        self.counts.sent_to[to] += 1;
        roots.send(to, TAG_DATA, bytes)
    }

    /// Send an evaluated individual to every other worker of the island.
    fn publish(&mut self, roots: &mut dyn Communicator, ind: &Individual) -> Result<()> {
        self.send_to_island_peers(roots, encode(&Message::Evaluated(ind.clone())))
    }

    /// Send `bytes` to every other worker of this island.
    fn send_to_island_peers(&mut self, roots: &mut dyn Communicator, bytes: Vec<u8>) -> Result<()> {
        for peer in self.layout.island_workers(self.island) {
            if peer != self.worker {
                self.send(roots, peer, bytes.clone())?;
            }
        }
        Ok(())
    }

    fn drain_inbox(&mut self, roots: &mut dyn Communicator) -> Result<()> {
        while let Some((from, bytes)) = roots.try_recv(TAG_DATA)? {
            self.counts.received_from[from] += 1;
            DataHandler::handle(self, roots, from, &bytes)?;
        }
        Ok(())
    }

    /// Tell the island peers to deactivate `ids`.
    fn broadcast_deactivation(&mut self, roots: &mut dyn Communicator, ids: Vec<(IndividualId, u32)>) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.log(|| Event::Deact { ids: ids.clone() })?;
        self.send_to_island_peers(roots, encode(&Message::Deactivate(ids)))
    }

    /// Arrivals from another island. With pollination, the worker responsible for an immigrant
    /// replaces one of its own individuals per immigrant that became active (the reference reset
    /// its counter inside the loop and replaced at most one per batch).
    fn immigrate(&mut self, roots: &mut dyn Communicator, from: usize, list: Vec<Individual>) -> Result<()> {
        if let Some(j) = self.journal.as_mut() {
            j.defer(&Event::Immig { from: from as u32, ids: list.iter().map(|i| (i.id, i.migration_steps)).collect() });
        }
        let mut mine_new = Vec::new();
        for ind in list {
            let (id, current) = (ind.id, ind.current);
            if self.population.insert(ind) == Arrival::Activated && current == self.index_in_island {
                mine_new.push(id);
            }
        }
        if !self.cfg.pollination || mine_new.is_empty() {
            return Ok(());
        }
        let me = self.index_in_island;
        let eligible = |i: &&Individual| i.current == me && !mine_new.contains(&i.id);
        let n = mine_new.len().min(self.population.iter_best().filter(eligible).count());
        if n == 0 {
            return Ok(());
        }
        let candidates = self.population.iter_best().filter(eligible);
        let victims = self.cfg.immigration.choose(candidates, n, &mut self.rng).expect("counted above");
        let ids: Vec<_> = victims.iter().map(|v| (v.id, v.migration_steps)).collect();
        for &(id, steps) in &ids {
            self.population.deactivate(id, steps);
        }
        self.broadcast_deactivation(roots, ids)
    }

    /// Send individuals to the other islands along the topology row of this island.
    fn emigrate(&mut self, roots: &mut dyn Communicator) -> Result<()> {
        let row = self.topology.row(self.island).to_vec();
        let total: usize = row.iter().sum();
        if total == 0 {
            return Ok(());
        }
        if self.cfg.pollination {
            let most = *row.iter().max().expect("non-empty row");
            if self.population.active_len() < most {
                return Ok(());
            }
            for (target, &n) in row.iter().enumerate().filter(|(_, n)| **n > 0) {
                let chosen = self.cfg.emigration.choose(self.population.iter_best(), n, &mut self.rng);
                self.send_migrants(roots, target, chosen.expect("enough active individuals"))?;
            }
            return Ok(());
        }
        // Real migration: only individuals this worker is responsible for may leave, so two workers
        // never move the same individual.
        let me = self.index_in_island;
        let eligible = self.population.iter_best().filter(|i| i.current == me);
        let Some(mut chosen) = self.cfg.emigration.choose(eligible, total, &mut self.rng) else {
            return Ok(());
        };
        chosen.shuffle(&mut self.rng);
        let departed: Vec<_> = chosen.iter().map(|i| (i.id, i.migration_steps)).collect();
        // Arrivals are journaled before departures: a kill in between leaves an individual on two
        // islands after resume, never on none.
        let mut rest = chosen.into_iter();
        for (target, &n) in row.iter().enumerate().filter(|(_, n)| **n > 0) {
            let group: Vec<Individual> = rest.by_ref().take(n).collect();
            self.send_migrants(roots, target, group)?;
        }
        for &(id, steps) in &departed {
            self.population.deactivate(id, steps);
        }
        self.broadcast_deactivation(roots, departed)
    }

    fn send_migrants(&mut self, roots: &mut dyn Communicator, target: usize, group: Vec<Individual>) -> Result<()> {
        let size = self.layout.island_sizes()[target] as u32;
        let moved: Vec<Individual> = group
            .into_iter()
            .map(|mut i| {
                i.migration_steps += 1;
                i.current = responsible_worker(&i, size);
                i.history.push(target as u32);
                i
            })
            .collect();
        self.emigrated += moved.len() as u64;
        self.log(|| Event::Emig { to: target as u32, inds: moved.clone() })?;
        let bytes = encode(&Message::Migrants(moved));
        for w in self.layout.island_workers(target) {
            self.send(roots, w, bytes.clone())?;
        }
        Ok(())
    }
}

/// The island-local worker responsible for a migrant on its new island: a function of its identity
/// and migration step, so that every copy of it (pollination sends the same individual again and
/// again) names the same worker and exactly one worker replaces an individual for it.
fn responsible_worker(ind: &Individual, island_size: u32) -> u32 {
    let key = (u64::from(ind.id.worker) << 40) ^ ind.id.generation ^ (u64::from(ind.migration_steps) << 56);
    (crate::rng::mix64(key) % u64::from(island_size)) as u32
}

impl DataHandler for RootWorker<'_> {
    fn counts(&mut self) -> &mut MessageCounts {
        &mut self.counts
    }

    fn handle(&mut self, roots: &mut dyn Communicator, from: usize, bytes: &[u8]) -> Result<()> {
        match decode::<Message>(bytes, from)? {
            Message::Evaluated(ind) => {
                self.population.insert(ind);
            }
            Message::Deactivate(list) => {
                for (id, steps) in list {
                    self.population.deactivate(id, steps);
                }
            }
            Message::Migrants(list) => self.immigrate(roots, from, list)?,
        }
        Ok(())
    }
}
