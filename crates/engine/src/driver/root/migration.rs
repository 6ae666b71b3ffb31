//! Migration and pollination: who leaves for which island along the topology, and what arrivals
//! do to the island (with pollination, the responsible worker replaces one of its own per active
//! arrival).

use rand::seq::SliceRandom;

use propulate_core::individual::Individual;
use propulate_core::layout::Layout;
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
    /// is responsible for every copy of an identity (`responsible_worker_for`), so only it decides,
    /// once, that an identity arrived; and a victim is deactivated for every copy, present and
    /// future (`ALL_COPIES`), so no newer copy of it, perhaps already on its way from another
    /// island, can bring it back. Victims are drawn from the message stream, so that how many
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
        let me = self.index_in_island;
        let eligible = |i: &&Individual| i.responsible_worker == me && !mine_new.contains(&i.id);
        let n = mine_new.len().min(self.population.iter_best().filter(eligible).count());
        if n == 0 {
            return Ok(());
        }
        let candidates = self.population.iter_best().filter(eligible);
        let victims = self.run.cfg.immigration.choose(candidates, n, &mut self.message_rng).expect("counted above");
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
                let chosen = self.run.cfg.emigration.choose(self.population.iter_best(), n, &mut self.rng);
                self.send_migrants(roots, target, chosen.expect("enough active individuals"))?;
            }
            return Ok(());
        }
        // Real migration: only individuals this worker is responsible for may leave, so two workers
        // never move the same individual.
        let me = self.index_in_island;
        let eligible = self.population.iter_best().filter(|i| i.responsible_worker == me);
        let Some(mut chosen) = self.run.cfg.emigration.choose(eligible, total, &mut self.rng) else {
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
        let (layout, offset) = (&self.run.layout, self.generation_offset);
        let moved: Vec<Individual> = group
            .into_iter()
            .map(|mut i| {
                i.migration_steps += 1;
                i.responsible_worker = responsible_worker_for(&i, target, layout, offset);
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

/// The island-local worker responsible for a migrant on island `target`: a function of its
/// identity and the island only, so that every copy of it (pollination sends the same individual
/// again and again, at growing migration steps) names the same worker there. On the island it was
/// bred on in this run, that is its breeder, which has known it since it was evaluated: a copy
/// coming home can never look new to the worker that decides.
fn responsible_worker_for(ind: &Individual, target: usize, layout: &Layout, generation_offset: u64) -> u32 {
    let breeder = ind.id.worker as usize;
    let bred_here_in_this_run = ind.id.generation >= generation_offset
        && breeder < layout.workers()
        && layout.island_of_worker(breeder) == target;
    if bred_here_in_this_run {
        return layout.index_in_island(breeder) as u32;
    }
    let key = (u64::from(ind.id.worker) << 40) ^ ind.id.generation ^ (u64::from(ind.id.island) << 56);
    (propulate_core::rng::mix64(key ^ target as u64) % layout.island_sizes()[target] as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use propulate_core::individual::IndividualId;
    use propulate_core::layout::IslandSpec;
    use propulate_core::space::Value;

    #[test]
    fn every_copy_of_an_identity_has_one_responsible_worker_per_island() {
        let layout = Layout::new(7, 1, &IslandSpec::Sizes(vec![3, 4])).unwrap();
        for worker in 0..7u32 {
            for generation in 0..50 {
                let mut ind = Individual::new(vec![Value::Float(0.0)]);
                ind.id = IndividualId { island: layout.island_of_worker(worker as usize) as u32, worker, generation };
                for target in 0..2 {
                    let first = responsible_worker_for(&ind, target, &layout, 0);
                    assert!((first as usize) < layout.island_sizes()[target]);
                    for steps in 1..6 {
                        ind.migration_steps = steps;
                        assert_eq!(responsible_worker_for(&ind, target, &layout, 0), first);
                    }
                    if target == ind.id.island as usize {
                        assert_eq!(first as usize, layout.index_in_island(worker as usize), "home: the breeder");
                    }
                }
            }
        }
        // Individuals seeded from another checkpoint (generations below the offset) are hashed,
        // even where their old breeder's number is a worker of the island now.
        let mut old = Individual::new(vec![Value::Float(0.0)]);
        old.id = IndividualId { island: 0, worker: 1, generation: 3 };
        let spread: std::collections::HashSet<u32> = (0..40)
            .map(|g| {
                old.id.generation = g;
                responsible_worker_for(&old, 0, &layout, 100)
            })
            .collect();
        assert!(spread.len() > 1, "seeded individuals spread over the island's workers");
    }
}
