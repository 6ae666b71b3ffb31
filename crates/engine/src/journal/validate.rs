//! Checking journal records against the manifest they belong to, as they are read: values that fit
//! the search space, identities, islands and workers that exist in the layout, losses and timings a
//! run can produce. A record that parses but breaks one of these rules was damaged or edited, and
//! would otherwise surface later as a panic (a choice index past the list, a value missing for a
//! parameter) or as a silently wrong resume.
//!
//! Identities of individuals carried over by `--reshape-from` name the islands and workers of the
//! old run; they are recognised by a generation below the manifest's `generation_offset` (the new
//! run numbers its generations after the old run's last) and only their values are checked.

use propulate_core::individual::{Individual, IndividualId};
use propulate_core::layout::Layout;
use propulate_core::space::SearchSpace;

use super::{Bred, Deact, Eval, Event, Immig, Migrants};

/// What one worker's journal records must agree with. Checking allocates only to describe a
/// violation, so reading a long journal stays as fast as parsing it.
pub(super) struct RecordRules<'a> {
    space: &'a SearchSpace,
    layout: &'a Layout,
    /// The manifest's first generation of this run.
    pub generation_offset: u64,
    /// The journal's worker (checked by the caller to exist in `layout`).
    pub worker: usize,
    island: usize,
}

impl<'a> RecordRules<'a> {
    /// The rules for the journal of `worker`, which must be a worker of `layout`.
    pub fn new(space: &'a SearchSpace, layout: &'a Layout, generation_offset: u64, worker: usize) -> Self {
        debug_assert!(worker < layout.workers());
        RecordRules { space, layout, generation_offset, worker, island: layout.island_of_worker(worker) }
    }

    /// Check one record; the error says what is wrong (the caller adds the file and offset).
    pub fn check(&self, event: &Event) -> Result<(), String> {
        match event {
            Event::Bred(Bred { id, values }) => {
                self.bred_here(id)?;
                self.space.check_values(values).map_err(|e| format!("bred {id}: {e}"))
            }
            Event::Eval(Eval { ind }) => self.individual(ind, self.island),
            Event::Emig(Migrants { to, inds }) | Event::Seed(Migrants { to, inds }) => {
                let to = self.island_index(*to, "migrants for island")?;
                inds.iter().try_for_each(|ind| self.individual(ind, to))
            }
            Event::Immig(Immig { from, ids }) => {
                if *from as usize >= self.layout.workers() {
                    return Err(format!(
                        "immigrants from worker {from}, but the manifest's layout has {} workers",
                        self.layout.workers()
                    ));
                }
                ids.iter().try_for_each(|(id, _)| self.identity(id))
            }
            Event::Deact(Deact { ids }) => ids.iter().try_for_each(|(id, _)| self.identity(id)),
            Event::Done(_) => Ok(()),
        }
    }

    /// A `bred` record is this worker's own child of this run.
    fn bred_here(&self, id: &IndividualId) -> Result<(), String> {
        if id.worker as usize != self.worker || id.island as usize != self.island {
            return Err(format!(
                "bred {id} in the journal of worker {} on island {}; a worker journals only its own children",
                self.worker, self.island
            ));
        }
        if id.generation < self.generation_offset {
            return Err(format!(
                "bred {id}: generation {} is below the manifest's generation_offset {}",
                id.generation, self.generation_offset
            ));
        }
        Ok(())
    }

    fn island_index(&self, island: u32, what: &str) -> Result<usize, String> {
        let islands = self.layout.islands();
        if island as usize >= islands {
            return Err(format!("{what} {island}, but the manifest's layout has {islands} islands"));
        }
        Ok(island as usize)
    }

    /// An identity of this run names an existing worker and that worker's island.
    fn identity(&self, id: &IndividualId) -> Result<(), String> {
        if id.generation < self.generation_offset {
            return Ok(()); // carried over from another checkpoint: its layout, not ours
        }
        let workers = self.layout.workers();
        if id.worker as usize >= workers {
            return Err(format!(
                "identity {id}: worker {}, but the manifest's layout has {workers} workers",
                id.worker
            ));
        }
        let island = self.layout.island_of_worker(id.worker as usize);
        if id.island as usize != island {
            return Err(format!("identity {id}: worker {} belongs to island {island}, not {}", id.worker, id.island));
        }
        Ok(())
    }

    /// An individual living on island `home`.
    fn individual(&self, ind: &Individual, home: usize) -> Result<(), String> {
        let id = ind.id;
        self.identity(&id)?;
        self.space.check_values(&ind.values).map_err(|e| format!("individual {id}: {e}"))?;
        // `+inf` (null in JSON) is a failed or unevaluated individual; NaN and -inf are never recorded.
        if ind.loss.is_nan() || ind.loss == f64::NEG_INFINITY {
            return Err(format!("individual {id}: loss is {}; a failed evaluation is recorded as null", ind.loss));
        }
        let size = self.layout.island_sizes()[home];
        if ind.responsible_worker as usize >= size {
            return Err(format!(
                "individual {id}: responsible worker (\"current\") {} on island {home}, which has {size} workers",
                ind.responsible_worker
            ));
        }
        if ind.migration_steps == u32::MAX {
            return Err(format!("individual {id}: migration_steps {} leaves no room to migrate again", u32::MAX));
        }
        if id.generation >= self.generation_offset
            && let Some(island) = ind.history.iter().find(|&&i| i as usize >= self.layout.islands())
        {
            return Err(format!(
                "individual {id}: history names island {island}, but the manifest's layout has {} islands",
                self.layout.islands()
            ));
        }
        if !(ind.duration_s.is_finite() && ind.duration_s >= 0.0) {
            return Err(format!("individual {id}: duration_s {} is not a finite, non-negative time", ind.duration_s));
        }
        if let Some((name, value)) = ind.metrics.iter().find(|(_, v)| !v.is_finite()) {
            return Err(format!("individual {id}: metric '{name}' is {value}; metrics are finite numbers"));
        }
        Ok(())
    }
}
