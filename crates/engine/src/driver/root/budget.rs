//! The budget an island's workers share (`--shared-budget`): the island evaluates its workers'
//! generations in all, and a worker whose evaluations were quick goes on while the island's last,
//! instead of waiting at the end for the slowest. A worker knows its peers' evaluations from their
//! results, so it starts another only while the island's known evaluations, plus one running on
//! every other worker, stay under the budget: the island ends within about one evaluation of each
//! worker, at most at its budget (a result still in flight when a worker looks can let the island
//! pass it by as many).

use std::collections::HashMap;

use propulate_core::individual::IndividualId;

/// What a worker knows of its island's evaluations in this run.
pub(super) struct IslandBudget {
    island: u32,
    /// Generations of this run start here (after a reshape, not at 0).
    offset: u64,
    /// The island's evaluations in all: its workers times the generations per worker.
    total: u64,
    /// Workers of the island besides this one, each possibly running an evaluation.
    peers: u64,
    /// Per worker of the island, its evaluations known in this run: one past its latest
    /// generation heard of (each worker's generations follow each other).
    done: HashMap<u32, u64>,
    /// Their sum, kept as they grow (asked before every generation).
    known: u64,
}

impl IslandBudget {
    pub(super) fn new(island: usize, island_size: usize, generations: u64, offset: u64) -> Self {
        IslandBudget {
            island: island as u32,
            offset,
            total: (island_size as u64).saturating_mul(generations),
            peers: island_size.saturating_sub(1) as u64,
            done: HashMap::new(),
            known: 0,
        }
    }

    /// An evaluation finished, this worker's or another's (migrants of other islands and
    /// imported individuals do not count).
    pub(super) fn record(&mut self, id: IndividualId) {
        if id.island != self.island || id.is_imported() || id.generation < self.offset {
            return;
        }
        let done = self.done.entry(id.worker).or_insert(0);
        let now = id.generation - self.offset + 1;
        if now > *done {
            self.known += now - *done;
            *done = now;
        }
    }

    /// The island's evaluations known.
    pub(super) fn known(&self) -> u64 {
        self.known
    }

    /// The island's budget: its workers times the generations per worker.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    /// Whether starting another evaluation could take the island past its budget.
    pub(super) fn spent(&self) -> bool {
        self.known() + self.peers >= self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(island: u32, worker: u32, generation: u64) -> IndividualId {
        IndividualId { island, worker, generation }
    }

    #[test]
    fn an_island_of_equal_workers_evaluates_each_workers_generations() {
        // 3 workers, 4 generations each: every worker may start generation 3 once all finished
        // generation 2 (9 known + 2 running elsewhere < 12), none a fifth.
        let mut b = IslandBudget::new(0, 3, 4, 0);
        for g in 0..3 {
            for w in 0..3 {
                b.record(id(0, w, g));
            }
        }
        assert!(!b.spent());
        b.record(id(0, 0, 3));
        assert!(b.spent(), "10 known and 2 possibly running: the budget of 12 is taken");
    }

    #[test]
    fn a_quick_worker_takes_over_the_generations_of_slow_ones() {
        let mut b = IslandBudget::new(1, 2, 5, 100);
        for g in 100..106 {
            b.record(id(1, 7, g)); // the quick worker, six evaluations
        }
        b.record(id(1, 8, 100));
        assert_eq!(b.known(), 7);
        assert!(!b.spent(), "7 known and 1 running < 10");
        for g in 106..109 {
            b.record(id(1, 7, g));
        }
        assert!(b.spent());
    }

    #[test]
    fn other_islands_imports_and_earlier_runs_do_not_count() {
        let mut b = IslandBudget::new(0, 2, 3, 10);
        b.record(id(1, 0, 12)); // a migrant from island 1
        b.record(id(0, 0, 4)); // before this run's generations (reshaped)
        b.record(IndividualId { island: 0, worker: propulate_core::individual::IMPORTED, generation: 50 });
        assert_eq!(b.known(), 0);
        b.record(id(0, 1, 10));
        b.record(id(0, 1, 10)); // heard twice
        assert_eq!(b.known(), 1);
    }
}
