//! Checking journal records against the manifest they belong to, as they are read: values that fit
//! the search space, identities, islands and workers that exist in the layout, losses and timings a
//! run can produce. A record that parses but breaks one of these rules was damaged or edited, and
//! would otherwise surface later as a panic (a choice index past the list, a value missing for a
//! parameter) or as a silently wrong resume.
//!
//! Identities of individuals carried over by `--reshape-from` name the islands and workers of the
//! old run; they are recognised by a generation below the manifest's `generation_offset` (the new
//! run numbers its generations after the old run's last) and only their values are checked.

use propulate_core::early_stop::{Curve, MAX_CURVE_POINTS};
use propulate_core::individual::{Individual, IndividualId};
use propulate_core::layout::Layout;
use propulate_core::space::SearchSpace;

use super::{Bred, Deact, Eval, Event, Immig, Migrants, WorkerJournal};

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
    /// How many objectives the manifest declares (0: one loss).
    pub objectives: usize,
}

impl<'a> RecordRules<'a> {
    /// The rules for the journal of `worker`, which must be a worker of `layout`.
    pub fn new(space: &'a SearchSpace, layout: &'a Layout, generation_offset: u64, worker: usize) -> Self {
        debug_assert!(worker < layout.workers());
        RecordRules { space, layout, generation_offset, worker, island: layout.island_of_worker(worker), objectives: 0 }
    }

    /// These rules for a run that declares `objectives` objectives.
    pub fn with_objectives(self, objectives: usize) -> Self {
        RecordRules { objectives, ..self }
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

    /// Check what a snapshot of this worker's journal holds (`journal/snapshot.rs`) by the rules
    /// its records were checked by when they were read: a snapshot is a cache, and one that was
    /// damaged, edited or copied from another run must not get further than a journal would.
    pub(super) fn check_journal(&self, j: &WorkerJournal) -> Result<(), String> {
        for (k, ind) in j.evaluated.iter().enumerate() {
            let expected = self.generation_offset + k as u64;
            if ind.id.worker as usize != self.worker || ind.id.generation != expected {
                return Err(format!(
                    "evaluation {} where worker {}'s generation {expected} was expected",
                    ind.id, self.worker
                ));
            }
            self.individual(ind, self.island)?;
        }
        for (to, inds) in j.emigrations.iter().chain(&j.seeds) {
            let to = self.island_index(*to, "migrants for island")?;
            inds.iter().try_for_each(|ind| self.individual(ind, to))?;
        }
        j.deactivations.iter().try_for_each(|(id, _)| self.identity(id))?;
        j.in_flight.iter().try_for_each(|id| self.bred_here(id))
    }

    /// A `bred` record is this worker's own child of this run.
    pub(super) fn bred_here(&self, id: &IndividualId) -> Result<(), String> {
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
        // A successful evaluation holds every declared objective (none in a single-objective run);
        // a failed one, none.
        let expected = if ind.failure.is_some() { 0 } else { self.objectives };
        if ind.objectives.len() != expected || ind.objectives.iter().any(|v| !v.is_finite()) {
            return Err(format!(
                "individual {id}: {} objective values {:?}, but the manifest declares {} objectives and a {} \
                 evaluation records {expected} finite ones",
                ind.objectives.len(),
                ind.objectives,
                self.objectives,
                if ind.failure.is_some() { "failed" } else { "successful" }
            ));
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
        if ind.constraints.iter().any(|c| !c.is_finite()) {
            return Err(format!("individual {id}: constraints {:?} are not all finite numbers", ind.constraints));
        }
        if let Some(curve) = &ind.curve {
            check_curve(curve).map_err(|e| format!("individual {id}: curve: {e}"))?;
        }
        Ok(())
    }
}

/// A curve as `WorkerContext::report` records it: finite values at strictly increasing steps, at
/// most [`MAX_CURVE_POINTS`] of them.
fn check_curve(curve: &Curve) -> Result<(), String> {
    if curve.points.len() > MAX_CURVE_POINTS {
        return Err(format!("{} points, more than the {MAX_CURVE_POINTS} a run records", curve.points.len()));
    }
    if let Some((step, value)) = curve.points.iter().find(|p| !p.1.is_finite()) {
        return Err(format!("the value at step {step} is {value}; reported values are finite numbers"));
    }
    if let Some(w) = curve.points.windows(2).find(|w| w[1].0 <= w[0].0) {
        return Err(format!("step {} follows step {}; steps increase", w[1].0, w[0].0));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Done;
    use propulate_core::IslandSpec;
    use propulate_core::space::Value;

    fn space() -> SearchSpace {
        SearchSpace::builder()
            .float("x", -1.0, 1.0)
            .int("n", 0, 9)
            .categorical("act", &["relu", "tanh"])
            .build()
            .unwrap()
    }

    /// Worker 1 of 3 workers on islands of sizes [2, 1]; generation offset 10.
    fn layout() -> Layout {
        Layout::new(3, 1, &IslandSpec::Sizes(vec![2, 1])).unwrap()
    }

    fn ind(worker: u32, island: u32, generation: u64) -> Individual {
        let mut i = Individual::new(vec![Value::Float(0.5), Value::Int(3), Value::Cat(1)]);
        i.id = IndividualId { island, worker, generation };
        i.loss = 1.0;
        i.history = vec![island];
        i
    }

    fn check(event: Event, expected: &[&str]) {
        let (space, layout) = (space(), layout());
        let rules = RecordRules::new(&space, &layout, 10, 1);
        let e = rules.check(&event).expect_err("the record should be refused");
        for part in expected {
            assert!(e.contains(part), "'{part}' missing in: {e}");
        }
    }

    #[test]
    fn records_a_run_writes_pass() {
        let (space, layout) = (space(), layout());
        let rules = RecordRules::new(&space, &layout, 10, 1);
        let mine = ind(1, 0, 10);
        let mut failed = ind(1, 0, 11);
        failed.loss = f64::INFINITY;
        failed.failure = Some("boom".into());
        let mut arrived = ind(2, 1, 12);
        arrived.migration_steps = 1;
        arrived.history.push(0);
        let imported = ind(40, 7, 3); // from a reshaped run's old layout: generation below the offset
        for event in [
            Event::Bred(Bred { id: mine.id, values: mine.values.clone() }),
            Event::Eval(Eval { ind: mine.clone() }),
            Event::Eval(Eval { ind: failed }),
            Event::Emig(Migrants { to: 1, inds: vec![mine.clone()] }),
            Event::Seed(Migrants { to: 0, inds: vec![imported.clone()] }),
            Event::Immig(Immig { from: 2, ids: vec![(arrived.id, 1)] }),
            Event::Deact(Deact { ids: vec![(mine.id, 0), (imported.id, 2)] }),
            Event::Done(Done { generations: 2 }),
        ] {
            rules.check(&event).unwrap_or_else(|e| panic!("{event:?}: {e}"));
        }
    }

    #[test]
    fn values_must_fit_the_space() {
        let mut bad = ind(1, 0, 10);
        bad.values[2] = Value::Cat(5);
        check(Event::Eval(Eval { ind: bad.clone() }), &["individual 0/1/10", "'act'", "index 5"]);
        check(Event::Bred(Bred { id: bad.id, values: bad.values[..1].to_vec() }), &["bred 0/1/10", "1 values"]);
        bad.values[2] = Value::Float(0.0);
        check(Event::Seed(Migrants { to: 0, inds: vec![bad] }), &["'act'", "categorical", "float value"]);
    }

    #[test]
    fn curves_must_be_what_report_records() {
        let with = |points: Vec<(u64, f64)>| {
            let mut i = ind(1, 0, 10);
            i.curve = Some(Curve { points, pruned: true });
            Event::Eval(Eval { ind: i })
        };
        check(with(vec![(0, 1.0), (0, 0.5)]), &["individual 0/1/10", "curve", "step 0 follows step 0"]);
        check(with(vec![(3, 1.0), (2, 0.5)]), &["step 2 follows step 3"]);
        check(with(vec![(0, f64::INFINITY)]), &["step 0 is inf"]);
        check(with((0..MAX_CURVE_POINTS as u64 + 1).map(|s| (s, 1.0)).collect()), &["100001 points"]);
    }

    #[test]
    fn islands_and_workers_must_exist() {
        check(Event::Emig(Migrants { to: 99, inds: vec![ind(1, 0, 10)] }), &["island 99", "2 islands"]);
        check(Event::Eval(Eval { ind: ind(1_000_000_000, 0, 10) }), &["worker 1000000000", "3 workers"]);
        check(Event::Eval(Eval { ind: ind(1, 1, 10) }), &["worker 1 belongs to island 0, not 1"]);
        check(Event::Immig(Immig { from: 7, ids: vec![] }), &["worker 7", "3 workers"]);
        check(Event::Deact(Deact { ids: vec![(ind(99, 0, 10).id, 0)] }), &["worker 99"]);
        check(Event::Bred(Bred { id: ind(2, 1, 10).id, values: ind(2, 1, 10).values }), &["bred 1/2/10", "worker 1"]);
        check(Event::Bred(Bred { id: ind(1, 0, 4).id, values: ind(1, 0, 4).values }), &["generation_offset 10"]);
        let mut far = ind(1, 0, 10);
        far.history.push(5);
        check(Event::Eval(Eval { ind: far }), &["history names island 5"]);
        let mut lost = ind(1, 0, 10);
        lost.responsible_worker = 1;
        check(Event::Emig(Migrants { to: 1, inds: vec![lost] }), &["responsible worker", "island 1, which has 1"]);
    }

    #[test]
    fn losses_timings_metrics_and_steps_must_be_possible() {
        let mut nan = ind(1, 0, 10);
        nan.loss = f64::NAN;
        check(Event::Eval(Eval { ind: nan }), &["loss is NaN", "null"]);
        let mut minus_inf = ind(1, 0, 10);
        minus_inf.loss = f64::NEG_INFINITY;
        check(Event::Eval(Eval { ind: minus_inf }), &["loss is -inf"]);
        let mut slow = ind(1, 0, 10);
        slow.duration_s = -1.0;
        check(Event::Eval(Eval { ind: slow }), &["duration_s -1"]);
        let mut metric = ind(1, 0, 10);
        metric.metrics.insert("acc".into(), f64::INFINITY);
        check(Event::Eval(Eval { ind: metric }), &["metric 'acc' is inf"]);
        let mut steps = ind(1, 0, 10);
        steps.migration_steps = u32::MAX;
        check(Event::Emig(Migrants { to: 0, inds: vec![steps] }), &["migration_steps"]);
    }
}
