//! Rebuilding the islands on resume. Every worker root has read its own journal; each then sends
//! every other root only what that root's island needs (its evaluations and deactivations to island
//! peers, its emigrants and seeds to the island they went to), in chunks of bounded size, and builds
//! its island's population from what it gathered. The exchange goes pairwise, one peer per round
//! (send to `me + r`, receive from `me - r`), so a root holds its own journal, one island's
//! individuals and one encoded share in flight, never the whole run; no message nears MPI's 2 GiB
//! count limit.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::message::{TAG_RESUME, decode, encode};
use crate::error::Result;
use crate::journal::{SegmentsRead, WorkerJournal};
use crate::transport::Communicator;
use propulate_core::individual::{Individual, IndividualId};
use propulate_core::layout::Layout;
use propulate_core::population::Population;

/// Individuals and deactivations per resume message at most.
const CHUNK_ITEMS: usize = 50_000;
/// Bytes per resume message at most (by an upper bound of each individual's encoded size), so that
/// no message nears MPI's 2 GiB count limit whatever the space's size or the failure messages.
const CHUNK_BYTES: usize = 64 << 20;

/// What a worker root resumes with: its own journal and its island as the checkpoint left it.
#[derive(Debug)]
pub(crate) struct Resumed {
    /// First generation number of the run's workers (non-zero after a reshape).
    pub generation_offset: u64,
    /// This worker's own journal.
    pub journal: WorkerJournal,
    /// The island's active population: every evaluation, arrival and deactivation recorded for it.
    pub population: Population,
    /// The segments of the journal read, for a snapshot at the run's clean end.
    pub segments: SegmentsRead,
}

/// What `journal` (of a worker on island `home`) contributes to `island`: on its own island its
/// evaluations and the deactivations it initiated; on any island the individuals it sent or seeded
/// there.
fn contribution(journal: &WorkerJournal, home: usize, island: usize) -> (Vec<&Individual>, &[(IndividualId, u32)]) {
    let arrivals = journal.emigrations.iter().chain(&journal.seeds).filter(|(to, _)| *to as usize == island);
    let mut inds: Vec<&Individual> = arrivals.flat_map(|(_, inds)| inds).collect();
    if island == home {
        inds.extend(&journal.evaluated);
        (inds, &journal.deactivations)
    } else {
        (inds, &[])
    }
}

/// An upper bound of `ind`'s postcard size: varints take at most 10 bytes, a float 8, a tag 1.
fn encoded_bound(ind: &Individual) -> usize {
    let metrics: usize =
        ind.metrics.keys().map(|k| k.len() + 20).sum::<usize>() + ind.curve.as_ref().map_or(0, |c| 18 * c.points.len());
    64 + 11 * ind.values.len() + 5 * ind.history.len() + ind.failure.as_ref().map_or(1, |f| f.len() + 11) + metrics
}

/// The encoded messages that carry a contribution, each a share of at most [`CHUNK_ITEMS`]
/// items and [`CHUNK_BYTES`] bytes, the last one marked. An empty contribution is one empty last
/// message, so that every receiver knows when a sender is done without a separate count.
fn encode_chunks(inds: &[&Individual], deacts: &[(IndividualId, u32)]) -> Vec<Vec<u8>> {
    #[derive(Serialize)]
    struct ShareRef<'a> {
        inds: &'a [&'a Individual],
        deacts: &'a [(IndividualId, u32)],
        last: bool,
    }
    let mut out = Vec::new();
    let mut start = 0;
    while start < inds.len() {
        let (mut end, mut bytes) = (start, 0);
        while end < inds.len()
            && end - start < CHUNK_ITEMS
            && (end == start || bytes + encoded_bound(inds[end]) <= CHUNK_BYTES)
        {
            bytes += encoded_bound(inds[end]);
            end += 1;
        }
        // Encoded into room for its bound, not grown by copying (64 bytes: the vectors' lengths).
        let share = ShareRef { inds: &inds[start..end], deacts: &[], last: false };
        out.push(postcard::to_extend(&share, Vec::with_capacity(bytes + 64)).expect("in-memory encoding cannot fail"));
        start = end;
    }
    let mut parts = deacts.chunks(CHUNK_ITEMS).peekable();
    if parts.peek().is_none() {
        out.push(encode(&ShareRef { inds: &[], deacts: &[], last: true }));
    }
    while let Some(part) = parts.next() {
        out.push(encode(&ShareRef { inds: &[], deacts: part, last: parts.peek().is_none() }));
    }
    out
}

/// Decode one share that [`encode_chunks`] encoded, appending its individuals and deactivations to `inds` and
/// `deacts` where they end up anyway (decoding into a share of its own, then moving it over, copied
/// every individual of a large resume once more, into fresh pages); returns whether it was the
/// sender's last.
fn decode_share_into(
    bytes: &[u8],
    inds: &mut Vec<Individual>,
    deacts: &mut Vec<(IndividualId, u32)>,
) -> postcard::Result<bool> {
    use serde::de::{DeserializeSeed, Deserializer, Error, SeqAccess, Visitor};
    use std::fmt;

    /// Appends a sequence's elements to a vector.
    struct Append<'a, T>(&'a mut Vec<T>);
    impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Append<'_, T> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Append<'_, T> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(item) = seq.next_element()? {
                self.0.push(item);
            }
            Ok(())
        }
    }
    /// A share (`encode_chunks`'s `ShareRef`) whose vectors are appended to the caller's: its
    /// fields in order (postcard
    /// writes a struct as the sequence of its fields).
    struct ShareInto<'a> {
        inds: &'a mut Vec<Individual>,
        deacts: &'a mut Vec<(IndividualId, u32)>,
    }
    impl<'de> Visitor<'de> for ShareInto<'_> {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a share of an island")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
            seq.next_element_seed(Append(self.inds))?.ok_or_else(|| A::Error::invalid_length(0, &"3 fields"))?;
            seq.next_element_seed(Append(self.deacts))?.ok_or_else(|| A::Error::invalid_length(1, &"3 fields"))?;
            seq.next_element()?.ok_or_else(|| A::Error::invalid_length(2, &"3 fields"))
        }
    }
    let mut d = postcard::Deserializer::from_bytes(bytes);
    (&mut d).deserialize_struct("Share", &["inds", "deacts", "last"], ShareInto { inds, deacts })
}

/// Rebuild this root's island from every root's journal (collective over the roots' communicator).
/// A piece that does not decode (only a broken transport could send one) ends the job: its sender
/// could not be told how much more to expect, and waiting would hang.
pub(crate) fn rebuild(
    roots: &mut dyn Communicator,
    layout: &Layout,
    generation_offset: u64,
    journal: WorkerJournal,
    segments: SegmentsRead,
) -> Result<Resumed> {
    let (me, ranks) = (roots.rank(), roots.size());
    let home = layout.island_of_worker(me);
    // Everything for the island is gathered first and indexed in one pass (Population::from_events).
    // Room for the whole island at once (what every root sends here, known from one gather of
    // counts): growing it share by share copied it several times over, into fresh pages each time.
    let counts: Vec<u64> =
        (0..layout.islands()).map(|island| contribution(&journal, home, island).0.len() as u64).collect();
    let mut expected = 0;
    for (root, bytes) in roots.all_gather(encode(&counts))?.iter().enumerate() {
        expected += decode::<Vec<u64>>(bytes, root)?.get(home).copied().unwrap_or(0) as usize;
    }
    let (own, own_deacts) = contribution(&journal, home, home);
    let mut arrivals: Vec<Individual> = Vec::with_capacity(expected);
    arrivals.extend(own.into_iter().cloned());
    let mut deactivations = own_deacts.to_vec();
    // Encoded once per island; the copies in flight are one peer's at a time, and the island's
    // last peer gets the encoded messages themselves.
    let mut encoded: HashMap<usize, Vec<Vec<u8>>> = HashMap::new();
    let mut peers_left = vec![0usize; layout.islands()];
    (1..ranks).for_each(|round| peers_left[layout.island_of_worker((me + round) % ranks)] += 1);
    for round in 1..ranks {
        let (to, from) = ((me + round) % ranks, (me + ranks - round) % ranks);
        let island = layout.island_of_worker(to);
        let messages = encoded.entry(island).or_insert_with(|| {
            let (inds, deacts) = contribution(&journal, home, island);
            encode_chunks(&inds, deacts)
        });
        peers_left[island] -= 1;
        if peers_left[island] == 0 {
            for m in encoded.remove(&island).expect("encoded above") {
                roots.send(to, TAG_RESUME, m)?;
            }
        } else {
            for m in messages.iter() {
                roots.send(to, TAG_RESUME, m.clone())?;
            }
        }
        loop {
            let bytes = roots.recv(from, TAG_RESUME)?;
            match decode_share_into(&bytes, &mut arrivals, &mut deactivations) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => roots.abort(
                    1,
                    &format!("resuming: a share of the island from worker {from} ({} bytes): {e}", bytes.len()),
                ),
            }
        }
        roots.wait_sends()?;
    }
    drop(encoded);
    Ok(Resumed { generation_offset, journal, population: Population::from_events(arrivals, &deactivations), segments })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunConfig;
    use crate::journal::{Manifest, Replay, island_population};
    use crate::transport::PointToPoint;
    use crate::transport::local::run_local;
    use propulate_core::layout::IslandSpec;
    use propulate_core::space::SearchSpace;
    use propulate_core::space::Value;

    fn ind(island: u32, worker: u32, generation: u64, loss: f64) -> Individual {
        let mut i = Individual::new(vec![Value::Float(loss)]);
        i.id = IndividualId { island, worker, generation };
        i.loss = loss;
        i
    }

    /// Journals of 4 workers on 2 islands with emigrations, seeds and deactivations, some large
    /// enough to need several chunks.
    fn journals(layout: &Layout) -> Vec<WorkerJournal> {
        (0..layout.workers())
            .map(|w| {
                let island = layout.island_of_worker(w) as u32;
                let other = 1 - island;
                let n = if w == 1 { CHUNK_ITEMS as u64 * 2 + 7 } else { 300 };
                let evaluated: Vec<Individual> =
                    (0..n).map(|g| ind(island, w as u32, g, (g * 7 % 101) as f64 + w as f64)).collect();
                let mut moved = evaluated[3].clone();
                moved.migration_steps = 1;
                let mut seeded = ind(other, 99, w as u64, -1.0 - w as f64);
                seeded.migration_steps = 0;
                WorkerJournal {
                    emigrations: vec![(other, vec![moved])],
                    seeds: vec![(other, vec![seeded])],
                    deactivations: vec![(evaluated[3].id, 0), (evaluated[5].id, 0)],
                    evaluated,
                    ..WorkerJournal::default()
                }
            })
            .collect()
    }

    #[test]
    fn every_root_rebuilds_the_island_the_whole_replay_gives() {
        let layout = Layout::new(4, 1, &IslandSpec::Count(2)).unwrap();
        let all = journals(&layout);
        let space = SearchSpace::builder().float("x", -1e9, 1e9).build().unwrap();
        let manifest = Manifest::new(&RunConfig::default(), &space, &layout, Default::default());
        let replay = Replay { manifest, layout: layout.clone(), workers: all.clone(), warnings: Vec::new() };
        let expected: Vec<Vec<IndividualId>> =
            (0..2).map(|island| island_population(&replay, island).active_ids_sorted()).collect();
        let shared = layout.clone();
        let results = run_local(4, move |mut roots| {
            let me = roots.rank();
            let resumed = rebuild(&mut roots, &shared, 0, journals(&shared)[me].clone(), Default::default()).unwrap();
            (me, resumed.population.active_ids_sorted(), resumed.journal.evaluated.len())
        });
        for r in results {
            let (me, active, own) = r.expect("no rank panicked");
            assert_eq!(active, expected[layout.island_of_worker(me)], "worker {me}");
            assert_eq!(own, all[me].evaluated.len());
        }
    }

    #[test]
    fn chunks_are_bounded_in_items_and_bytes_and_the_last_is_marked() {
        // Each message decoded into the caller's vectors: (individuals, deactivations, last).
        let decode_each = |msgs: &[Vec<u8>]| -> Vec<(Vec<Individual>, usize, bool)> {
            msgs.iter()
                .map(|m| {
                    let (mut inds, mut deacts) = (Vec::new(), Vec::new());
                    let last = decode_share_into(m, &mut inds, &mut deacts).unwrap();
                    (inds, deacts.len(), last)
                })
                .collect()
        };
        let empty = decode_each(&encode_chunks(&[], &[]));
        assert_eq!(empty.len(), 1);
        assert!(empty[0].2 && empty[0].0.is_empty());
        // 40 individuals of about 3 MiB each (a long failure message): 21 fit under 64 MiB.
        let mut big = ind(0, 0, 0, 1.0);
        big.failure = Some("x".repeat(3 << 20));
        let bigs: Vec<Individual> =
            (0..40).map(|g| Individual { id: IndividualId { generation: g, ..big.id }, ..big.clone() }).collect();
        let refs: Vec<&Individual> = bigs.iter().collect();
        let deacts = vec![(big.id, 0u32); CHUNK_ITEMS + 1];
        let msgs = encode_chunks(&refs, &deacts);
        assert!(msgs.iter().all(|m| m.len() <= CHUNK_BYTES), "a message over the byte bound");
        assert!(decode_share_into(&msgs[0][..msgs[0].len() / 2], &mut Vec::new(), &mut Vec::new()).is_err());
        let shares = decode_each(&msgs);
        let inds: Vec<Individual> = shares.iter().flat_map(|s| s.0.clone()).collect();
        assert_eq!(inds, bigs, "every individual, in order");
        assert_eq!(shares.iter().map(|s| s.1).sum::<usize>(), CHUNK_ITEMS + 1);
        assert_eq!(shares.iter().filter(|s| s.2).count(), 1);
        assert!(shares.last().unwrap().2);
        assert!(shares.len() >= 4, "40 x 3 MiB and 50,001 deactivations need several messages");
    }
}
