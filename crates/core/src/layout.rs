//! Who is who: from the world size, ranks per worker and island sizes, which ranks form a worker,
//! which workers form an island, and who is a worker's root. Pure arithmetic.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How the workers are divided into islands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum IslandSpec {
    /// This many islands, sizes differing by at most one (the first ones get the extra workers).
    Count(usize),
    /// Explicit workers per island.
    Sizes(Vec<usize>),
}

/// The validated division of a run's ranks into workers and islands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    world_size: usize,
    ranks_per_worker: usize,
    island_sizes: Vec<usize>,
    island_starts: Vec<usize>,
}

impl Layout {
    /// Validate and build. Errors say which number is wrong and what would fit.
    pub fn new(world_size: usize, ranks_per_worker: usize, islands: &IslandSpec) -> Result<Self> {
        if ranks_per_worker == 0 {
            return Err(Error::InvalidConfig("ranks per worker must be at least 1".into()));
        }
        if !world_size.is_multiple_of(ranks_per_worker) {
            return Err(Error::InvalidConfig(format!(
                "{world_size} ranks cannot be divided into workers of {ranks_per_worker} ranks; \
                 launch a multiple of {ranks_per_worker} ranks"
            )));
        }
        let workers = world_size / ranks_per_worker;
        let island_sizes = match islands {
            IslandSpec::Count(0) => {
                return Err(Error::InvalidConfig("the number of islands must be at least 1".into()));
            }
            IslandSpec::Count(n) if *n > workers => {
                return Err(Error::InvalidConfig(format!(
                    "{n} islands need at least {n} workers, but there are {workers} \
                     ({world_size} ranks / {ranks_per_worker} ranks per worker)"
                )));
            }
            IslandSpec::Count(n) => (0..*n).map(|i| workers / n + usize::from(i < workers % n)).collect(),
            IslandSpec::Sizes(sizes) => {
                if sizes.is_empty() || sizes.contains(&0) {
                    return Err(Error::InvalidConfig(format!("island sizes must all be at least 1, got {sizes:?}")));
                }
                let Some(sum) = sizes.iter().try_fold(0usize, |acc, &s| acc.checked_add(s)) else {
                    return Err(Error::InvalidConfig(format!(
                        "island sizes {sizes:?} add up to more workers than this machine can count; \
                         there are {workers} ({world_size} ranks / {ranks_per_worker} ranks per worker)"
                    )));
                };
                if sum != workers {
                    return Err(Error::InvalidConfig(format!(
                        "island sizes {sizes:?} add up to {sum} workers, but there are {workers} \
                         ({world_size} ranks / {ranks_per_worker} ranks per worker)"
                    )));
                }
                sizes.clone()
            }
        };
        let island_starts = island_sizes
            .iter()
            .scan(0, |acc, s| {
                let start = *acc;
                *acc += s;
                Some(start)
            })
            .collect();
        Ok(Layout { world_size, ranks_per_worker, island_sizes, island_starts })
    }

    /// Number of ranks in the job.
    pub fn world_size(&self) -> usize {
        self.world_size
    }
    /// Ranks that evaluate one individual together.
    pub fn ranks_per_worker(&self) -> usize {
        self.ranks_per_worker
    }
    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.world_size / self.ranks_per_worker
    }
    /// Number of islands.
    pub fn islands(&self) -> usize {
        self.island_sizes.len()
    }
    /// Workers per island.
    pub fn island_sizes(&self) -> &[usize] {
        &self.island_sizes
    }
    /// The worker a world rank belongs to.
    pub fn worker_of_rank(&self, rank: usize) -> usize {
        rank / self.ranks_per_worker
    }
    /// A rank's index inside its worker (0 is the worker root).
    pub fn rank_in_worker(&self, rank: usize) -> usize {
        rank % self.ranks_per_worker
    }
    /// True if `rank` is its worker's root (the rank that breeds and talks to peers).
    pub fn is_worker_root(&self, rank: usize) -> bool {
        self.rank_in_worker(rank) == 0
    }
    /// The island of a worker.
    pub fn island_of_worker(&self, worker: usize) -> usize {
        self.island_starts.partition_point(|&s| s <= worker) - 1
    }
    /// The workers of island `island`, as global worker indices.
    pub fn island_workers(&self, island: usize) -> std::ops::Range<usize> {
        let start = self.island_starts[island];
        start..start + self.island_sizes[island]
    }
    /// A worker's index inside its island.
    pub fn index_in_island(&self, worker: usize) -> usize {
        worker - self.island_starts[self.island_of_worker(worker)]
    }

    /// The worker of `island` (its index there) responsible for every copy of identity `id` on
    /// that island: the one that may move it on, and that replaces one of its own when a
    /// pollinating copy of it arrives. A function of the identity and the island only, so that every
    /// copy (pollination sends the same individual again and again, at growing migration steps)
    /// names the same worker. On the island it was bred on in this run (`generation_offset` and
    /// above), that is its breeder, which has known it since it was evaluated, so a copy coming home
    /// never looks new to the worker that decides.
    pub fn responsible_worker(
        &self,
        id: &crate::individual::IndividualId,
        island: usize,
        generation_offset: u64,
    ) -> u32 {
        let breeder = id.worker as usize;
        let bred_here_in_this_run =
            id.generation >= generation_offset && breeder < self.workers() && self.island_of_worker(breeder) == island;
        if bred_here_in_this_run {
            return self.index_in_island(breeder) as u32;
        }
        let key = (u64::from(id.worker) << 40) ^ id.generation ^ (u64::from(id.island) << 56);
        (crate::rng::mix64(key ^ island as u64) % self.island_sizes()[island] as u64) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::individual::{Individual, IndividualId};
    use crate::space::Value;

    #[test]
    fn every_worker_belongs_to_exactly_one_island() {
        for world in 1..=24 {
            for rpw in 1..=4 {
                if world % rpw != 0 {
                    assert!(Layout::new(world, rpw, &IslandSpec::Count(1)).is_err());
                    continue;
                }
                let workers = world / rpw;
                for n in 1..=workers {
                    let l = Layout::new(world, rpw, &IslandSpec::Count(n)).unwrap();
                    assert_eq!(l.island_sizes().iter().sum::<usize>(), workers);
                    let (min, max) = (l.island_sizes().iter().min().unwrap(), l.island_sizes().iter().max().unwrap());
                    assert!(max - min <= 1);
                    let mut seen = vec![0; workers];
                    for i in 0..n {
                        for (k, w) in l.island_workers(i).enumerate() {
                            seen[w] += 1;
                            assert_eq!(l.island_of_worker(w), i);
                            assert_eq!(l.index_in_island(w), k);
                        }
                    }
                    assert!(seen.iter().all(|&c| c == 1));
                    for r in 0..world {
                        assert_eq!(l.is_worker_root(r), r % rpw == 0);
                        assert_eq!(l.worker_of_rank(r), r / rpw);
                    }
                }
                assert!(Layout::new(world, rpw, &IslandSpec::Count(workers + 1)).is_err());
            }
        }
    }

    #[test]
    fn explicit_sizes_are_checked() {
        let l = Layout::new(8, 1, &IslandSpec::Sizes(vec![3, 5])).unwrap();
        assert_eq!(l.island_workers(1), 3..8);
        assert_eq!(l.island_of_worker(2), 0);
        assert_eq!(l.island_of_worker(3), 1);
        let e = Layout::new(8, 1, &IslandSpec::Sizes(vec![3, 4])).unwrap_err().to_string();
        assert!(e.contains("add up to 7") && e.contains("there are 8"), "{e}");
        let e = Layout::new(7, 2, &IslandSpec::Count(1)).unwrap_err().to_string();
        assert!(e.contains("multiple of 2"), "{e}");
        assert!(Layout::new(4, 1, &IslandSpec::Sizes(vec![4, 0])).is_err());
        let e = Layout::new(4, 1, &IslandSpec::Sizes(vec![usize::MAX, 2])).unwrap_err().to_string();
        assert!(e.contains("more workers than this machine can count"), "{e}");
    }

    #[test]
    fn every_copy_of_an_identity_has_one_responsible_worker_per_island() {
        let layout = Layout::new(7, 1, &IslandSpec::Sizes(vec![3, 4])).unwrap();
        for worker in 0..7u32 {
            for generation in 0..50 {
                let mut ind = Individual::new(vec![Value::Float(0.0)]);
                ind.id = IndividualId { island: layout.island_of_worker(worker as usize) as u32, worker, generation };
                for target in 0..2 {
                    let first = layout.responsible_worker(&ind.id, target, 0);
                    assert!((first as usize) < layout.island_sizes()[target]);
                    for steps in 1..6 {
                        ind.migration_steps = steps;
                        assert_eq!(layout.responsible_worker(&ind.id, target, 0), first);
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
                layout.responsible_worker(&old.id, 0, 100)
            })
            .collect();
        assert!(spread.len() > 1, "seeded individuals spread over the island's workers");
    }
}
