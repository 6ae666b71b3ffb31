//! Breeding: one offspring from the island population as this worker knows it, checked against
//! the search space and stamped with its identity.

use propulate_core::error::Error as CoreError;
use propulate_core::individual::{Individual, IndividualId};
use propulate_core::propagator::Breeder;

use super::RootWorker;
use crate::error::Result;

impl RootWorker<'_, '_> {
    pub(super) fn breed(&mut self, generation: u64) -> Result<Individual> {
        let space = self.run.space;
        // Propagators that keep per-worker state in the population (PSO's particles) learn who breeds.
        let breeder = Breeder { island: self.island as u32, worker: self.worker as u32, generation };
        let mut children = self.propagator.propagate_as(breeder, &self.population, space, &mut self.rng)?;
        if children.len() != 1 {
            return Err(CoreError::InvalidPropagator(format!(
                "the driver needs a propagator with one offspring, {} yielded {}",
                self.propagator.name(),
                children.len()
            ))
            .into());
        }
        let mut ind = children.remove(0);
        if !space.contains(&ind.values) {
            return Err(CoreError::InvalidPropagator(format!(
                "propagator {} bred values outside the search space: {:?}",
                self.propagator.name(),
                ind.values
            ))
            .into());
        }
        ind.id = IndividualId { island: self.island as u32, worker: self.worker as u32, generation };
        ind.responsible_worker = self.index_in_island;
        ind.migration_steps = 0;
        ind.history = vec![self.island as u32];
        Ok(ind)
    }
}
