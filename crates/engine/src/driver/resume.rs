//! Rebuilding the islands on resume. Every worker root has read its own journal; each then sends
//! every other root only what that root's island needs (its evaluations and deactivations to island
//! peers, its emigrants and seeds to the island they went to), in chunks of bounded size, and folds
//! what it receives straight into its island's population. So a root holds its own journal and one
//! island's individuals, never the whole run, and no message nears MPI's 2 GiB count limit.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::message::{TAG_RESUME, decode, encode};
use crate::error::{Error, Result};
use crate::journal::WorkerJournal;
use crate::transport::Communicator;
use propulate_core::individual::{Individual, IndividualId};
use propulate_core::layout::Layout;
use propulate_core::population::Population;

/// Individuals and deactivations per resume message: about 10-20 MB of postcard at most.
const CHUNK: usize = 50_000;

/// What a worker root resumes with: its own journal and its island as the checkpoint left it.
#[derive(Debug)]
pub(crate) struct Resumed {
    /// First generation number of the run's workers (non-zero after a reshape).
    pub generation_offset: u64,
    /// This worker's own journal.
    pub journal: WorkerJournal,
    /// The island's active population: every evaluation, arrival and deactivation recorded for it.
    pub population: Population,
}

/// One piece of what a journal contributes to an island.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Share {
    inds: Vec<Individual>,
    deacts: Vec<(IndividualId, u32)>,
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

/// The encoded messages that carry a contribution: the number of chunks, then the chunks.
fn encode_chunks(inds: &[&Individual], deacts: &[(IndividualId, u32)]) -> Vec<Vec<u8>> {
    #[derive(Serialize)]
    struct ShareRef<'a> {
        inds: &'a [&'a Individual],
        deacts: &'a [(IndividualId, u32)],
    }
    let chunks = inds.len().div_ceil(CHUNK).max(deacts.len().div_ceil(CHUNK));
    let mut out = Vec::with_capacity(chunks + 1);
    out.push(encode(&(chunks as u64)));
    for c in 0..chunks {
        let part = |len: usize| (c * CHUNK).min(len)..((c + 1) * CHUNK).min(len);
        out.push(encode(&ShareRef { inds: &inds[part(inds.len())], deacts: &deacts[part(deacts.len())] }));
    }
    out
}

/// Rebuild this root's island from every root's journal (collective over the roots' communicator).
/// Every message addressed to this root is received even when one fails to decode, so that an
/// error leaves nothing in flight; the first error is returned.
pub(crate) fn rebuild(
    roots: &mut dyn Communicator,
    layout: &Layout,
    generation_offset: u64,
    journal: WorkerJournal,
) -> Result<Resumed> {
    let me = roots.rank();
    let home = layout.island_of_worker(me);
    // Encode once per island and hand every root of that island a copy.
    let mut encoded: HashMap<usize, Vec<Vec<u8>>> = HashMap::new();
    for peer in (0..roots.size()).filter(|&w| w != me) {
        let island = layout.island_of_worker(peer);
        let messages = encoded.entry(island).or_insert_with(|| {
            let (inds, deacts) = contribution(&journal, home, island);
            encode_chunks(&inds, deacts)
        });
        for m in messages.iter() {
            roots.send(peer, TAG_RESUME, m.clone())?;
        }
    }
    drop(encoded);
    // Everything for the island is gathered first and indexed in one pass (Population::from_events).
    let (own, own_deacts) = contribution(&journal, home, home);
    let mut arrivals: Vec<Individual> = own.into_iter().cloned().collect();
    let mut deactivations = own_deacts.to_vec();
    let mut first_error: Option<Error> = None;
    for peer in (0..roots.size()).filter(|&w| w != me) {
        let chunks: u64 = decode(&roots.recv(peer, TAG_RESUME)?, peer)?;
        for _ in 0..chunks {
            let bytes = roots.recv(peer, TAG_RESUME)?;
            match decode::<Share>(&bytes, peer) {
                Ok(Share { inds, deacts }) => {
                    arrivals.extend(inds);
                    deactivations.extend(deacts);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    roots.wait_sends()?;
    match first_error {
        Some(e) => Err(e),
        None => {
            Ok(Resumed { generation_offset, journal, population: Population::from_events(arrivals, &deactivations) })
        }
    }
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
                let n = if w == 1 { CHUNK as u64 * 2 + 7 } else { 300 };
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
            let resumed = rebuild(&mut roots, &shared, 0, journals(&shared)[me].clone()).unwrap();
            (me, resumed.population.active_ids_sorted(), resumed.journal.evaluated.len())
        });
        for r in results {
            let (me, active, own) = r.expect("no rank panicked");
            assert_eq!(active, expected[layout.island_of_worker(me)], "worker {me}");
            assert_eq!(own, all[me].evaluated.len());
        }
    }
}
