//! One worker root: the asynchronous loop of breed, evaluate, publish, drain, maybe emigrate, with
//! no generation barrier anywhere. Split by concern: this file holds the worker's state and its
//! loop; `breeding`, `messaging`, `migration`, `journaling` and `running` (early stopping's view
//! of the island) hold the rest of its methods.

mod breeding;
mod budget;
mod journaling;
mod messaging;
mod migration;
mod running;
mod training;

use rand::RngExt;

use crate::context::WorkerContext;
use crate::error::Result;
use crate::journal::{JournalMirror, JournalWriter, SegmentsRead, WorkerJournal};
use crate::observe::{Event, RankObservers, WorkerStatus};
use crate::result::RunResult;
use crate::transport::{Communicator, reborrow};
use propulate_core::individual::{Individual, Params};
use propulate_core::population::Population;
use propulate_core::propagator::{Breeder, Propagator};
use propulate_core::rng::{PropRng, message_rng, worker_rng};
use propulate_core::topology::Topology;

use super::Run;
use super::evaluate::{ObjectivesResult, agree_on_failure, evaluate};
use super::resume::Resumed;
use super::summary::{RootOutcome, summarize};
use super::termination::{MessageCounts, drain_to_quiescence};
use budget::IslandBudget;
use running::{ReportLink, RunningCurves};
use training::OwnStates;

/// Everything one worker root holds.
pub(crate) struct RootWorker<'a, 'o> {
    run: &'a Run<'a>,
    propagator: &'a dyn Propagator,
    observers: &'a mut RankObservers<'o>,
    topology: Topology,
    worker: usize,
    island: usize,
    /// This worker's index among its island's workers (what `responsible_worker` holds).
    index_in_island: u32,
    population: Population,
    /// The island peers' running evaluations, as far as their reports arrived.
    running: RunningCurves,
    /// Breeding and emigration: one block of the worker's stream per generation.
    rng: PropRng,
    /// Draws prompted by messages (pollination victims), kept apart from `rng`.
    message_rng: PropRng,
    counts: MessageCounts,
    /// Every evaluation this worker did, in order (resumed ones first).
    evaluated: Vec<Individual>,
    /// Evaluations found in the checkpoint when this run started.
    resumed: u64,
    /// Failed evaluations among `evaluated`.
    failed: u64,
    /// Individuals this worker sent to other islands (counted once per individual, not per receiver).
    emigrated: u64,
    /// The checkpoint journal, when checkpointing.
    journal: Option<JournalWriter>,
    /// First generation number of this run's workers (non-zero after a reshape).
    generation_offset: u64,
    /// Population-based training: this worker's training states on disk.
    own_states: OwnStates,
    /// With `--shared-budget`: what this worker knows of its island's evaluations.
    budget: Option<IslandBudget>,
}

impl<'a, 'o> RootWorker<'a, 'o> {
    pub fn new(
        run: &'a Run<'a>,
        propagator: &'a dyn Propagator,
        resumed: Option<Resumed>,
        observers: &'a mut RankObservers<'o>,
    ) -> Result<Self> {
        let (cfg, layout) = (run.cfg, &run.layout);
        let worker = layout.worker_of_rank(run.rank);
        let island = layout.island_of_worker(worker);
        let generation_offset = resumed.as_ref().map_or(0, |r| r.generation_offset);
        let (population, evaluated, emigrated, mirror) = match resumed {
            Some(Resumed { journal, population, segments, .. }) => {
                let emigrated = journal.emigrations.iter().map(|(_, inds)| inds.len() as u64).sum();
                let (mirror, evaluated) = JournalMirror::split(segments, journal, generation_offset);
                (population, evaluated, emigrated, mirror)
            }
            None => {
                let (mirror, _) = JournalMirror::split(SegmentsRead::default(), WorkerJournal::default(), 0);
                (Population::new(), Vec::new(), 0, mirror)
            }
        };
        let population = population.rank_by_objectives(cfg.objective_signs());
        let failed = evaluated.iter().filter(|i| i.failure.is_some()).count() as u64;
        let own_states = match &run.states {
            Some(states) => OwnStates::resumed(&evaluated, |id| states.saved(id).is_dir()),
            None => OwnStates::default(),
        };
        let budget = cfg.shared_budget.then(|| {
            let size = layout.island_sizes()[island];
            let mut budget = IslandBudget::new(island, size, cfg.generations, generation_offset);
            // A resume knows its own evaluations and the island's in its population (those that
            // emigrated too: they stay known, inactive).
            for ind in evaluated.iter().chain(population.iter_known()) {
                budget.record(ind.id);
            }
            budget
        });
        let journal = match &cfg.checkpoint {
            Some(ck) => Some(JournalWriter::create(&ck.dir, worker, ck.fsync)?.with_mirror(mirror)),
            None => None,
        };
        if let Some(w) = journal.as_ref().and_then(JournalWriter::lock_warning) {
            observers.emit(&Event::Warning(w));
        }
        Ok(RootWorker {
            run,
            propagator,
            observers,
            topology: Topology::new(&cfg.topology, layout.islands())?,
            worker,
            island,
            index_in_island: layout.index_in_island(worker) as u32,
            population,
            running: RunningCurves::default(),
            rng: worker_rng(cfg.seed, worker as u64),
            message_rng: message_rng(cfg.seed, worker as u64),
            counts: MessageCounts::new(layout.workers()),
            resumed: evaluated.len() as u64,
            evaluated,
            failed,
            emigrated,
            journal,
            generation_offset,
            own_states,
            budget,
        })
    }

    /// This worker as the breeder of `generation`.
    fn breeder(&self, generation: u64) -> Breeder {
        let since = self.generation_offset + self.resumed;
        Breeder { island: self.island as u32, worker: self.worker as u32, generation, since }
    }

    /// Run all generations, drain to a clean end, and combine the roots' results (collective over
    /// the roots; the followers of a multi-rank worker are released with the result).
    pub fn run_to_end<F>(
        mut self,
        roots: &mut dyn Communicator,
        mut worker_comm: Option<&mut dyn Communicator>,
        loss: &mut F,
    ) -> Result<RunResult>
    where
        F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> ObjectivesResult,
    {
        if self.resumed > 0 {
            self.observers.emit(&Event::Resumed { evaluations: self.resumed });
        }
        let first = self.generation_offset + self.evaluated.len() as u64;
        // The offset comes from the manifest (bounded there) and the generations from the user.
        for generation in first..self.generation_offset.saturating_add(self.generations_at_most()) {
            if self.propagator.worker_finished(self.breeder(generation), &self.population) {
                break;
            }
            if self.budget.is_some() {
                // The latest results first, so that the budget counts what has arrived.
                self.drain_inbox(roots)?;
                // A configuration given in advance is evaluated all the same: each exactly once.
                if self.budget.as_ref().is_some_and(IslandBudget::spent) && self.enqueued_for(generation).is_none() {
                    break;
                }
            }
            self.generation(generation, roots, reborrow(&mut worker_comm), loss)?;
        }
        drain_to_quiescence(roots, &mut self)?;
        let status = self.status();
        self.observers.emit(&Event::Finished(&status));
        self.journal_done()?;
        let outcome = RootOutcome {
            island: self.island,
            population: &self.population,
            evaluated: std::mem::take(&mut self.evaluated),
            emigrated: self.emigrated,
            resumed: self.resumed,
            wall_s: self.run.start.elapsed().as_secs_f64(),
        };
        let result = summarize(roots, &self.run.layout, self.run.cfg, outcome)?;
        if let Some(wc) = worker_comm {
            super::release_followers(wc, &result)?;
        }
        Ok(result)
    }

    /// One generation: breed, have the worker evaluate, record, tell the island, listen, maybe
    /// emigrate.
    fn generation<F>(
        &mut self,
        generation: u64,
        roots: &mut dyn Communicator,
        mut worker_comm: Option<&mut dyn Communicator>,
        loss: &mut F,
    ) -> Result<()>
    where
        F: FnMut(Params<'_>, &mut WorkerContext<'_>) -> ObjectivesResult,
    {
        // Each generation draws from its own block of the worker's stream, so a resumed worker
        // continues exactly where the interrupted one was, without saving generator state.
        self.rng.set_word_pos(u128::from(generation) << 40);
        let mut ind = self.breed_and_announce(generation, roots)?;
        self.journal_bred(&ind)?;
        self.prepare_state(&mut ind);
        if let Some(wc) = reborrow(&mut worker_comm) {
            let mut bytes = super::encode(&Some(ind.clone()));
            wc.broadcast(0, &mut bytes)?;
        }
        let run = self.run;
        let rule = run.stopper.map(|stopper| self.stop_rule(stopper, &ind));
        let mut ctx = run.worker_context(&ind, reborrow(&mut worker_comm));
        ctx.reports.rule = rule;
        // The worker's reports reach the island's workers as they are made, and theirs reach the
        // rule, when the stopper compares with running evaluations.
        let mut link = ReportLink { worker: self, roots: &mut *roots, id: ind.id, error: None };
        if run.stopper.is_some_and(|s| s.hears_running()) {
            ctx.peers = Some(&mut link);
        }
        evaluate(loss, run.space, &run.cfg.objectives, &mut ind, &mut ctx);
        drop(ctx);
        if let Some(wc) = reborrow(&mut worker_comm) {
            agree_on_failure(wc, &mut ind)?;
        }
        if let Some(e) = link.error.take() {
            return Err(e);
        }
        if let Some(reason) = &ind.failure {
            self.failed += 1;
            self.observers.emit(&Event::Failed { generation, reason });
        }
        self.finish_state(&ind)?;
        self.journal_evaluated(&ind)?; // before anyone hears of it
        let best_before = self.island_best();
        self.population.insert(ind.clone());
        if let Some(budget) = &mut self.budget {
            budget.record(ind.id);
        }
        self.publish(roots, &ind)?;
        let new_best = ind.failure.is_none() && ind.is_feasible() && best_before.is_none_or(|b| ind.loss < b);
        self.evaluated.push(ind);
        self.roll_journal()?;
        self.drain_inbox(roots)?;
        self.collect_states();
        let layout = &self.run.layout;
        if layout.islands() > 1 && self.run.cfg.migration_probability > 0.0 {
            let p = self.run.cfg.migration_probability / layout.island_sizes()[self.island] as f64;
            if self.rng.random_bool(p.min(1.0)) {
                self.emigrate(roots)?;
            }
        }
        roots.test_sends();
        // Let other ranks on this core run: with cheap losses and more ranks than cores, a worker
        // would otherwise run many generations per time slice without hearing from its peers
        // (measured: worse results on rastrigin; no loss of throughput).
        std::thread::yield_now();
        if self.observers.hear_evaluations() {
            let status = self.status();
            let last = self.evaluated.last().expect("pushed above");
            self.observers.evaluated(last, &status, new_best);
        }
        Ok(())
    }

    /// The most generations this worker runs: its own, or with a shared budget its whole island's.
    fn generations_at_most(&self) -> u64 {
        match &self.budget {
            Some(budget) => budget.total(),
            None => self.run.cfg.generations,
        }
    }

    /// The island's lowest loss (with several objectives, the first one's), for the observers.
    fn island_best(&self) -> Option<f64> {
        self.population.lowest_loss()
    }

    /// Where this worker stands, for the observers.
    fn status(&self) -> WorkerStatus {
        WorkerStatus {
            generation: self.generation_offset + self.evaluated.len() as u64,
            last_generation: self.generation_offset.saturating_add(self.generations_at_most()),
            island_budget: self.budget.as_ref().map(|b| (b.known(), b.total())),
            evaluations: self.evaluated.len() as u64,
            resumed: self.resumed,
            failed: self.failed,
            island_best: self.island_best(),
            active: self.population.active_len(),
            emigrated: self.emigrated,
            elapsed_s: self.run.start.elapsed().as_secs_f64(),
        }
    }
}
