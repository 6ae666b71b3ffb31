//! Which samples each rank of a data-parallel worker trains on: every rank gets a disjoint shard of
//! the same size, reshuffled every epoch from a seed all ranks share, so that no rank has to talk to
//! another to agree on the order.
//!
//! Padding rule (as torch's `DistributedSampler`): with `drop_last` off, the epoch's order is extended
//! by repeating its first indices until its length is a multiple of the number of ranks, so a few
//! samples are seen twice per epoch. With `drop_last` on, the tail that does not divide evenly is left
//! out of this epoch (a different tail each epoch when shuffling).

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::error::{Error, Result};

/// A per-rank shard of `0..len`, reshuffled per epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistributedSampler {
    len: usize,
    ranks: usize,
    rank: usize,
    shuffle: bool,
    drop_last: bool,
    seed: u64,
}

impl DistributedSampler {
    /// A sampler over `len` samples for `rank` of `ranks`, shuffled with `seed` (the same on every rank).
    pub fn new(len: usize, ranks: usize, rank: usize, seed: u64) -> Result<Self> {
        if ranks == 0 || rank >= ranks {
            return Err(Error::InvalidConfig(format!("sampler: rank {rank} is not one of {ranks} ranks")));
        }
        if len == 0 {
            return Err(Error::InvalidConfig("sampler: the data set is empty".into()));
        }
        Ok(DistributedSampler { len, ranks, rank, shuffle: true, drop_last: false, seed })
    }

    /// Keep the data set's order (validation sets).
    pub fn without_shuffle(mut self) -> Self {
        self.shuffle = false;
        self
    }

    /// Leave out the tail that does not divide evenly instead of repeating samples. An error when
    /// there are fewer samples than ranks (a rank would get nothing).
    pub fn drop_last(mut self) -> Result<Self> {
        if self.len < self.ranks {
            return Err(Error::InvalidConfig(format!(
                "sampler: {} samples cannot be split over {} ranks with drop_last",
                self.len, self.ranks
            )));
        }
        self.drop_last = true;
        Ok(self)
    }

    /// Samples per rank and epoch.
    pub fn shard_len(&self) -> usize {
        if self.drop_last { self.len / self.ranks } else { self.len.div_ceil(self.ranks) }
    }

    /// This rank's sample indices for `epoch`.
    pub fn indices(&self, epoch: u64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.len).collect();
        if self.shuffle {
            // One stream per epoch of the seed: the same permutation on every rank.
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
            rng.set_stream(epoch);
            order.shuffle(&mut rng);
        }
        let total = self.shard_len() * self.ranks;
        if total > order.len() {
            let pad: Vec<usize> = order.iter().cycle().take(total - order.len()).copied().collect();
            order.extend(pad);
        }
        order.truncate(total);
        order.into_iter().skip(self.rank).step_by(self.ranks).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn shards(len: usize, ranks: usize, epoch: u64, drop_last: bool) -> Vec<Vec<usize>> {
        (0..ranks)
            .map(|r| {
                let s = DistributedSampler::new(len, ranks, r, 7).unwrap();
                let s = if drop_last { s.drop_last().unwrap() } else { s };
                s.indices(epoch)
            })
            .collect()
    }

    #[test]
    fn shards_cover_everything_with_equal_sizes_and_padding_only_when_needed() {
        for (len, ranks) in [(10, 1), (10, 2), (10, 3), (10, 4), (7, 8), (60000, 8)] {
            let s = shards(len, ranks, 0, false);
            let size = len.div_ceil(ranks);
            assert!(s.iter().all(|x| x.len() == size), "{len}/{ranks}");
            let all: Vec<usize> = s.concat();
            let distinct: HashSet<usize> = all.iter().copied().collect();
            assert_eq!(distinct, (0..len).collect(), "every sample is seen");
            assert_eq!(all.len() - len, size * ranks - len, "only the padding repeats");
        }
    }

    #[test]
    fn drop_last_gives_disjoint_equal_shards() {
        for (len, ranks) in [(10, 3), (10, 4), (9, 3), (60001, 8)] {
            let s = shards(len, ranks, 3, true);
            assert!(s.iter().all(|x| x.len() == len / ranks));
            let all: Vec<usize> = s.concat();
            assert_eq!(all.iter().copied().collect::<HashSet<_>>().len(), all.len(), "disjoint");
        }
        assert!(DistributedSampler::new(3, 4, 0, 0).unwrap().drop_last().is_err());
    }

    #[test]
    fn epochs_reshuffle_deterministically_and_validation_keeps_order() {
        let s = DistributedSampler::new(1000, 4, 1, 42).unwrap();
        assert_eq!(s.indices(5), s.indices(5));
        assert_ne!(s.indices(5), s.indices(6));
        let v = DistributedSampler::new(10, 3, 1, 42).unwrap().without_shuffle();
        assert_eq!(v.indices(0), vec![1, 4, 7, 0], "padded with the first samples");
        assert_eq!(v.indices(9), vec![1, 4, 7, 0]);
        assert_eq!(DistributedSampler::new(10, 3, 2, 0).unwrap().without_shuffle().indices(0), vec![2, 5, 8, 1]);
        assert_eq!(DistributedSampler::new(10, 3, 0, 0).unwrap().without_shuffle().indices(0), vec![0, 3, 6, 9]);
    }

    #[test]
    fn bad_ranks_and_empty_data_are_errors() {
        assert!(DistributedSampler::new(10, 2, 2, 0).is_err());
        assert!(DistributedSampler::new(10, 0, 0, 0).is_err());
        assert!(DistributedSampler::new(0, 2, 0, 0).is_err());
    }
}
