//! Messaging: what a worker root tells its island peers and how it handles what they tell it. All
//! sends are non-blocking and counted, for the termination protocol.

use propulate_core::individual::{Individual, IndividualId};

use super::RootWorker;
use crate::driver::message::{Message, TAG_DATA, decode, encode};
use crate::driver::termination::{DataHandler, MessageCounts};
use crate::error::Result;
use crate::journal::{Deact, Event};
use crate::transport::Communicator;

impl RootWorker<'_, '_> {
    pub(super) fn send(&mut self, roots: &mut dyn Communicator, to: usize, bytes: Vec<u8>) -> Result<()> {
        self.counts.sent_to[to] += 1;
        roots.send(to, TAG_DATA, bytes)
    }

    /// Send an evaluated individual to every other worker of the island.
    pub(super) fn publish(&mut self, roots: &mut dyn Communicator, ind: &Individual) -> Result<()> {
        self.send_to_island_peers(roots, encode(&Message::Evaluated(ind.clone())))
    }

    /// Tell the island peers that this worker started evaluating `child`, when the propagator
    /// models running evaluations.
    pub(super) fn announce_running(&mut self, roots: &mut dyn Communicator, child: &Individual) -> Result<()> {
        if !self.propagator.models_running() {
            return Ok(());
        }
        self.send_to_island_peers(roots, encode(&Message::Running(child.clone())))
    }

    /// Send `bytes` to every other worker of this island.
    pub(super) fn send_to_island_peers(&mut self, roots: &mut dyn Communicator, bytes: Vec<u8>) -> Result<()> {
        for peer in self.run.layout.island_workers(self.island) {
            if peer != self.worker {
                self.send(roots, peer, bytes.clone())?;
            }
        }
        Ok(())
    }

    pub(super) fn drain_inbox(&mut self, roots: &mut dyn Communicator) -> Result<()> {
        while let Some((from, bytes)) = roots.try_recv(TAG_DATA)? {
            self.counts.received_from[from] += 1;
            DataHandler::handle(self, roots, from, &bytes)?;
        }
        Ok(())
    }

    /// Tell the island peers to deactivate `ids`.
    pub(super) fn broadcast_deactivation(
        &mut self,
        roots: &mut dyn Communicator,
        ids: Vec<(IndividualId, u32)>,
    ) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.journal(|| Event::Deact(Deact { ids: ids.clone() }))?;
        self.send_to_island_peers(roots, encode(&Message::Deactivate(ids)))
    }
}

impl DataHandler for RootWorker<'_, '_> {
    fn counts(&mut self) -> &mut MessageCounts {
        &mut self.counts
    }

    fn handle(&mut self, roots: &mut dyn Communicator, from: usize, bytes: &[u8]) -> Result<()> {
        match decode::<Message>(bytes, from)? {
            Message::Evaluated(ind) => {
                self.running.finished(&ind);
                if let Some(budget) = &mut self.budget {
                    budget.record(ind.id);
                }
                self.population.insert(ind);
            }
            Message::Deactivate(list) => {
                for (id, steps) in list {
                    self.population.deactivate(id, steps);
                }
            }
            Message::Migrants(list) => self.immigrate(roots, from, list)?,
            Message::Progress { id, step, value } => self.running.progress(id, step, value),
            Message::Running(child) => self.population.start_running(child),
        }
        Ok(())
    }
}
