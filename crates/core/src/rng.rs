//! Random streams: one ChaCha stream per worker, derived from the run seed and the worker id, so that
//! workers never share a stream and a run is reproducible from its seed.

use rand::SeedableRng;

/// The generator every propagator and worker uses.
pub type PropRng = rand_chacha::ChaCha8Rng;

/// The stream of worker `worker` in a run seeded with `seed`: same key, distinct ChaCha stream ids.
pub fn worker_rng(seed: u64, worker: u64) -> PropRng {
    let mut rng = PropRng::seed_from_u64(seed);
    rng.set_stream(worker);
    rng
}

/// The SplitMix64 finaliser: mixes the bits of `z` so that nearby inputs give unrelated outputs.
/// Used to derive values (evaluation seeds, responsible workers) from identities.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The stream of draws that depend on messages (whom pollinating immigrants replace) of worker
/// `worker`: apart from [`worker_rng`]'s, so that how many messages arrive and when does not change
/// what the worker breeds.
pub fn message_rng(seed: u64, worker: u64) -> PropRng {
    worker_rng(seed, worker | 1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn message_streams_are_apart_from_every_worker_stream() {
        let firsts = |mut r: PropRng| (0..4).map(|_| r.next_u64()).collect::<Vec<_>>();
        let workers: Vec<Vec<u64>> = (0..64).map(|w| firsts(worker_rng(7, w))).collect();
        for w in 0..64 {
            let messages = firsts(message_rng(7, w));
            assert!(!workers.contains(&messages), "worker {w}'s message stream repeats a breeding stream");
            assert_eq!(messages, firsts(message_rng(7, w)), "reproducible from the seed");
        }
    }
}
