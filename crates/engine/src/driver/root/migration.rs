//! Migration and pollination: who leaves for which island along the topology, and what arrivals
//! do to the island (with pollination, the responsible worker replaces one of its own per active
//! arrival).

use rand::seq::SliceRandom;

use propulate_core::individual::Individual;
use propulate_core::population::{ALL_COPIES, Arrival};

use super::RootWorker;
use crate::driver::message::{Message, encode};
use crate::error::Result;
use crate::journal::{Event, Immig, Migrants};
use crate::transport::Communicator;

impl RootWorker<'_, '_> {
    /// Arrivals from another island. With pollination, the worker responsible for an immigrant
    /// replaces one of its own individuals per immigrant that became active (the reference reset
    /// its counter inside the loop and replaced at most one per batch).
    ///
    /// Why the island's size stays exact whatever order messages arrive in: one worker per island
    /// is responsible for every copy of an identity (`Layout::responsible_worker`), so only it decides,
    /// once, that an identity arrived; and a victim is deactivated for every copy, present and
    /// future (`ALL_COPIES`), so no newer copy of it, perhaps already on its way from another
    /// island, can bring it back. (A batch that brings the responsible worker more new arrivals
    /// than it has individuals of its own leaves the surplus unreplaced; batches of one never do.)
    /// Victims are drawn from the message stream, so that how many
    /// arrive does not shift the draws of breeding and emigration.
    pub(super) fn immigrate(&mut self, roots: &mut dyn Communicator, from: usize, list: Vec<Individual>) -> Result<()> {
        self.journal_deferred(|| {
            Event::Immig(Immig { from: from as u32, ids: list.iter().map(|i| (i.id, i.migration_steps)).collect() })
        });
        let mut mine_new = Vec::new();
        for ind in list {
            let (id, current) = (ind.id, ind.responsible_worker);
            if self.population.insert(ind) == Arrival::Activated && current == self.index_in_island {
                mine_new.push(id);
            }
        }
        if !self.run.cfg.pollination || mine_new.is_empty() {
            return Ok(());
        }
        let (me, n) = (self.index_in_island, mine_new.len());
        let victims =
            self.run.cfg.immigration.choose_responsible(&self.population, me, &mine_new, n, &mut self.message_rng);
        if victims.is_empty() {
            return Ok(());
        }
        let ids: Vec<_> = victims.iter().map(|v| (v.id, ALL_COPIES)).collect();
        for &(id, steps) in &ids {
            self.population.deactivate(id, steps);
        }
        self.broadcast_deactivation(roots, ids)
    }

    /// Send individuals to the other islands along the topology row of this island.
    pub(super) fn emigrate(&mut self, roots: &mut dyn Communicator) -> Result<()> {
        let row = self.topology.row(self.island).to_vec();
        let total: usize = row.iter().sum();
        if total == 0 {
            return Ok(());
        }
        if self.run.cfg.pollination {
            let most = *row.iter().max().expect("non-empty row");
            if self.population.active_len() < most {
                return Ok(());
            }
            for (target, &n) in row.iter().enumerate().filter(|(_, n)| **n > 0) {
                let chosen = self.run.cfg.emigration.choose(&self.population, |_| true, n, &mut self.rng);
                self.send_migrants(roots, target, chosen.expect("enough active individuals"))?;
            }
            return Ok(());
        }
        // Real migration: only individuals this worker is responsible for may leave, so two workers
        // never move the same individual.
        let me = self.index_in_island;
        let mut chosen = self.run.cfg.emigration.choose_responsible(&self.population, me, &[], total, &mut self.rng);
        if chosen.len() < total {
            // Too few of its own: nobody leaves (the draws of this generation end here).
            return Ok(());
        }
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
        let (layout, offset) = (&self.run.layout, self.generation_offset);
        let moved: Vec<Individual> = group
            .into_iter()
            .map(|mut i| {
                i.migration_steps += 1;
                i.responsible_worker = layout.responsible_worker(&i.id, target, offset);
                i.record_move(target as u32);
                i
            })
            .collect();
        self.emigrated += moved.len() as u64;
        self.journal(|| Event::Emig(Migrants { to: target as u32, inds: moved.clone() }))?;
        let bytes = encode(&Message::Migrants(moved));
        for w in self.run.layout.island_workers(target) {
            self.send(roots, w, bytes.clone())?;
        }
        Ok(())
    }
}
