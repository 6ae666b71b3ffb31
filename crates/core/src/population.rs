//! The island population as one worker sees it.
//!
//! Python Propulate re-filters and re-sorts its whole history on every breed, which makes a run
//! quadratic in its length. Here the active individuals live in two ordered indices, by loss and
//! in breeding order: insert and deactivation are O(log n), the best, worst or latest k cost
//! O(k + log n), a uniform sample O(k) and the individual stored under an identity, active or not,
//! O(1).
//!
//! A run with several objectives ranks the active individuals by Pareto dominance instead
//! ([`Population::rank_by_objectives`]): non-dominated rank, then crowding distance, as NSGA-II
//! does. That order depends on the whole set, so it is computed when first asked for after a
//! change (O(n log n) for two objectives), not indexed.
//!
//! The state of each identity depends only on the set of events seen (arrivals with their migration
//! step, deactivations with theirs), never on their order, so workers of an island that have seen
//! the same messages hold the same active population.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use either::Either;

use crate::individual::{Individual, IndividualId, RankKey};
use crate::pareto_ranking::ParetoRanking;
use crate::rng::PropRng;

/// The key of the loss index: an individual's rank ([`Individual::rank_key`]: feasible by loss,
/// then infeasible by violation, then failed), a total order.
type LossKey = RankKey;

/// Hashes identities with the SplitMix64 finaliser: identities are not chosen by an adversary, and
/// the standard SipHash made inserting the half a million individuals of a resumed island several
/// times slower.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        crate::rng::mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = crate::rng::mix64(self.0 ^ n);
    }
}

type IdMap<V> = HashMap<IndividualId, V, BuildHasherDefault<IdHasher>>;

/// Where an individual stands in breeding order: when its evaluation started, then its identity
/// (generation, worker, island), the order of [`in_breeding_order`].
pub type BreedKey = (i64, u64, u32, u32);

/// `ind`'s place in breeding order ([`BreedKey`]), for sorting by it.
pub fn breed_key(ind: &Individual) -> BreedKey {
    (ind.start_us, ind.id.generation, ind.id.worker, ind.id.island)
}

fn id_of(key: &BreedKey) -> IndividualId {
    IndividualId { island: key.3, worker: key.2, generation: key.1 }
}

/// The individuals in the order they were bred: by evaluation start (which the driver stamps just
/// after breeding), then generation, worker and island, so that ties (and individuals that were
/// never stamped, as in tests) fall back to each worker's own counter. A total order on identities
/// makes the result independent of the pool's internal order.
pub fn in_breeding_order(mut inds: Vec<Individual>) -> Vec<Individual> {
    inds.sort_by_key(breed_key);
    inds
}

#[derive(Debug, Clone, Default)]
struct Record {
    /// Where in `Population::stored` the newest arrival of this identity (highest migration step)
    /// is, if any arrived yet. Indices are u32 (an island holds fewer than 4 billion
    /// individuals, which `index` checks): a record of 24 bytes instead
    /// of 40 makes the table of a resumed island of half a million a third smaller.
    individual: Option<u32>,
    /// Highest migration step at which this identity was deactivated on this island.
    deactivated_at: Option<u32>,
    /// Index in `Population::active_ids` while active.
    active_slot: Option<u32>,
}

impl Record {
    fn individual(&self) -> Option<usize> {
        self.individual.map(|k| k as usize)
    }
}

/// `k` as a record's index ([`Record`]).
fn index(k: usize) -> u32 {
    u32::try_from(k).expect("an island of fewer than 4 billion individuals")
}

/// The migration step that covers every copy of an identity: deactivating at it removes the
/// identity from the island for good, whatever copies of it arrive later (pollination victims).
pub const ALL_COPIES: u32 = u32::MAX;

/// What an arrival did to the population.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// The identity was not active before and is now.
    Activated,
    /// Stored, but inactive (a deactivation for it had already arrived).
    StoredInactive,
    /// A duplicate or an older copy: nothing changed.
    Ignored,
}

/// Every individual a worker knows of on its island, with an ordered index of the active ones.
///
/// The individuals themselves live in one vector, the records hold indices into it: a resumed
/// island is built around the vector its arrivals came in (no individual moves unless a newer copy
/// supersedes one: then the vector is compacted), and the map of records stays small (measured:
/// first-touch page faults of a map holding whole individuals were most of the time of rebuilding
/// half a million).
#[derive(Debug, Clone, Default)]
pub struct Population {
    stored: Vec<Individual>,
    records: IdMap<Record>,
    by_loss: BTreeSet<(LossKey, IndividualId)>,
    /// The loss order per responsible worker: emigration takes a worker's best, and a filtered
    /// pass over `by_loss` went ever deeper as each worker's best left (quadratic in long runs).
    by_responsible: BTreeSet<(u32, LossKey, IndividualId)>,
    by_breeding: BTreeSet<BreedKey>,
    active_ids: Vec<IndividualId>,
    known: usize,
    /// Set when the run has several objectives: "best" is then by Pareto rank and crowding.
    pareto: Option<ParetoRanking>,
    /// Children the island's other workers are evaluating now (for a propagator that models
    /// them, the GP's fantasies): added when their breeder says so, gone when they arrive.
    running: std::collections::BTreeMap<IndividualId, Individual>,
}

impl Population {
    /// An empty population.
    pub fn new() -> Self {
        Self::default()
    }

    /// The population that inserting every arrival and applying every deactivation would give, in
    /// any order (the state depends only on the set of events), built in one pass: a resumed island
    /// of half a million individuals is sorted and indexed in bulk, several times faster than
    /// inserting them one by one.
    pub fn from_events(arrivals: Vec<Individual>, deactivations: &[(IndividualId, u32)]) -> Self {
        // Indices into it are u32 below (half the memory): an island of 4 billion individuals
        // would need a terabyte.
        assert!(arrivals.len() < u32::MAX as usize, "an island of {} individuals", arrivals.len());
        let mut records: IdMap<Record> = IdMap::default();
        records.reserve(arrivals.len());
        // Indexed in the order of the table's buckets (the hash's low bits), so that the inserts
        // sweep the table once instead of landing at random: a cache miss, and often a fresh page,
        // per individual was most of a large resume's rebuild. Sorted by identity within a bucket,
        // the copies of one identity are neighbours, in their order of arrival, and the kept copy
        // is chosen before anything is indexed (no second pass over the table to renumber).
        let mask = ((records.capacity() * 8 / 7).next_power_of_two() - 1) as u64;
        let mut order: Vec<(u64, IndividualId, usize)> =
            arrivals.iter().enumerate().map(|(k, ind)| (records.hasher().hash_one(ind.id) & mask, ind.id, k)).collect();
        order.sort_unstable();
        // Per identity, the newest copy; among equal steps the first, as `insert` keeps it
        // (in place: `dedup_by` hands each later copy with the one kept so far).
        order.dedup_by(|later, kept| {
            if later.1 != kept.1 {
                return false;
            }
            if arrivals[later.2].migration_steps > arrivals[kept.2].migration_steps {
                kept.2 = later.2;
            }
            true
        });
        let mut chosen = order;
        let mut stored = arrivals;
        if chosen.len() < stored.len() {
            // Keep only the chosen copies (duplicates are rare: pollination, a migrant come back),
            // renumbered in arrival order.
            let mut keep = vec![false; stored.len()];
            chosen.iter().for_each(|&(_, _, k)| keep[k] = true);
            let mut new_index = vec![0u32; stored.len()];
            let mut next = 0u32;
            for (k, &kept) in keep.iter().enumerate() {
                new_index[k] = next;
                next += u32::from(kept);
            }
            let mut k = 0;
            stored.retain(|_| {
                k += 1;
                keep[k - 1]
            });
            chosen.iter_mut().for_each(|(_, _, k)| *k = new_index[*k] as usize);
        }
        for &(_, id, k) in &chosen {
            records.insert(id, Record { individual: Some(index(k)), ..Record::default() });
        }
        drop(chosen);
        // Each stored individual is its record's copy now; its deactivation step by its index, so
        // that the active ones are found in one pass over `stored` in memory order (a pass over the
        // records jumped about in it, a cache miss per individual).
        let mut deactivated: Vec<Option<u32>> = vec![None; stored.len()];
        for &(id, steps) in deactivations {
            let rec = records.entry(id).or_default();
            let step = rec.deactivated_at.map_or(steps, |d| d.max(steps));
            rec.deactivated_at = Some(step);
            if let Some(k) = rec.individual() {
                deactivated[k] = Some(step);
            }
        }
        let mut active: Vec<(LossKey, IndividualId)> = Vec::with_capacity(stored.len());
        let mut responsible: Vec<(u32, LossKey, IndividualId)> = Vec::with_capacity(stored.len());
        let mut bred: Vec<BreedKey> = Vec::with_capacity(stored.len());
        let mut active_at: Vec<(IndividualId, u32)> = Vec::with_capacity(stored.len());
        for (k, (ind, step)) in stored.iter().zip(&deactivated).enumerate() {
            if step.is_none_or(|d| d < ind.migration_steps) {
                active.push((ind.rank_key(), ind.id));
                responsible.push((ind.responsible_worker, ind.rank_key(), ind.id));
                bred.push(breed_key(ind));
                active_at.push((ind.id, k as u32));
            }
        }
        drop(deactivated);
        // Slots in identity order, so that the same events always give the same population; each
        // record learns its slot through its individual's index, in one sweep of the table (looking
        // every active identity up in identity order was a cache miss each).
        // Stable sorts where the input comes in long sorted runs (each worker's share arrives in
        // its generation order, which is also identity and breeding order): they merge the runs
        // in close to linear time, where an unstable sort starts over.
        active_at.sort();
        let mut slot_of = vec![u32::MAX; stored.len()];
        for (slot, &(_, k)) in active_at.iter().enumerate() {
            slot_of[k as usize] = slot as u32;
        }
        for rec in records.values_mut() {
            if let Some(k) = rec.individual() {
                rec.active_slot = (slot_of[k] != u32::MAX).then_some(slot_of[k]);
            }
        }
        drop(slot_of);
        let active_ids: Vec<IndividualId> = active_at.into_iter().map(|(id, _)| id).collect();
        active.sort_unstable();
        responsible.sort_unstable();
        bred.sort();
        let known = stored.len();
        let (by_loss, by_breeding) = (active.into_iter().collect(), bred.into_iter().collect());
        Population {
            stored,
            records,
            by_loss,
            by_responsible: responsible.into_iter().collect(),
            by_breeding,
            active_ids,
            known,
            pareto: None,
            running: Default::default(),
        }
    }

    /// Rank by several objectives, minimized after multiplying by `signs` (one per objective):
    /// [`Population::iter_best`] and everything built on it then go by non-dominated rank, then
    /// crowding distance (largest first), then identity; failed evaluations and those without
    /// every objective come last, by identity. Fewer than two signs keep the loss order.
    pub fn rank_by_objectives(mut self, signs: Vec<f64>) -> Self {
        self.pareto = (signs.len() >= 2).then(|| ParetoRanking::new(signs));
        self
    }

    fn stored_active(&self, id: &IndividualId) -> &Individual {
        self.get(id).expect("active individuals are stored")
    }

    /// The active identities best first by Pareto rank and crowding ([`Population::rank_by_objectives`]).
    fn ranked<'s>(&'s self, p: &'s ParetoRanking) -> &'s [IndividualId] {
        p.order(&self.active_ids, &|id| self.stored_active(id))
    }

    /// Number of active individuals.
    pub fn active_len(&self) -> usize {
        self.active_ids.len()
    }

    /// Number of individuals ever stored (active or not).
    pub fn known_len(&self) -> usize {
        self.known
    }

    /// Every individual stored, active or not (emigrants moved away too), in no particular order.
    pub fn iter_known(&self) -> impl Iterator<Item = &Individual> + '_ {
        self.stored.iter()
    }

    /// Insert an individual that was bred here or arrived from a peer or another island.
    /// A copy with a migration step not above the stored one is a duplicate and is ignored.
    pub fn insert(&mut self, ind: Individual) -> Arrival {
        let id = ind.id;
        self.running.remove(&id);
        let rec = self.records.entry(id).or_default();
        let steps = ind.migration_steps;
        let loss = ind.rank_key();
        let new_key = breed_key(&ind);
        let responsible = ind.responsible_worker;
        let old = match rec.individual() {
            Some(k) if steps <= self.stored[k].migration_steps => return Arrival::Ignored,
            Some(k) => {
                let old = std::mem::replace(&mut self.stored[k], ind);
                Some((old.rank_key(), breed_key(&old), old.responsible_worker))
            }
            None => {
                self.known += 1;
                rec.individual = Some(index(self.stored.len()));
                self.stored.push(ind);
                None
            }
        };
        let was_active = rec.active_slot.is_some();
        let active_now = rec.deactivated_at.is_none_or(|d| d < steps);
        match (was_active, active_now) {
            (false, true) => {
                self.activate(id, loss, new_key);
                Arrival::Activated
            }
            (true, true) => {
                if let Some(p) = &mut self.pareto {
                    p.changed();
                }
                // Same identity, newer step: the same evaluation, but keep the keys exact.
                if let Some((old_loss, old_key, old_responsible)) = old {
                    self.by_loss.remove(&(old_loss, id));
                    self.by_responsible.remove(&(old_responsible, old_loss, id));
                    self.by_breeding.remove(&old_key);
                }
                self.by_loss.insert((loss, id));
                self.by_responsible.insert((responsible, loss, id));
                self.by_breeding.insert(new_key);
                Arrival::Ignored
            }
            (true, false) => {
                self.deactivate_slot(id);
                Arrival::StoredInactive
            }
            (false, false) => Arrival::StoredInactive,
        }
    }

    /// A peer started evaluating `child`: it counts as running until it arrives evaluated. A child
    /// that already arrived (messages from two peers can cross) is not running.
    pub fn start_running(&mut self, child: Individual) {
        if self.get(&child.id).is_none() {
            self.running.insert(child.id, child);
        }
    }

    /// The children the island's other workers are evaluating, by identity.
    pub fn running(&self) -> impl Iterator<Item = &Individual> + '_ {
        self.running.values()
    }

    /// Mark identity `id` inactive for every copy up to migration step `steps`. Works before the
    /// individual itself arrived: the deactivation is remembered. Returns true if it was active.
    pub fn deactivate(&mut self, id: IndividualId, steps: u32) -> bool {
        let rec = self.records.entry(id).or_default();
        rec.deactivated_at = Some(rec.deactivated_at.map_or(steps, |d| d.max(steps)));
        let hit = match rec.individual() {
            Some(k) => rec.active_slot.is_some() && self.stored[k].migration_steps <= steps,
            None => false,
        };
        if hit {
            self.deactivate_slot(id);
        }
        hit
    }

    fn activate(&mut self, id: IndividualId, loss: LossKey, key: BreedKey) {
        let rec = self.records.get_mut(&id).expect("record exists");
        let stored = &self.stored[rec.individual().expect("stored before activation")];
        if let Some(p) = &mut self.pareto {
            p.arrived(stored);
        }
        self.by_responsible.insert((stored.responsible_worker, loss, id));
        rec.active_slot = Some(index(self.active_ids.len()));
        self.active_ids.push(id);
        self.by_loss.insert((loss, id));
        self.by_breeding.insert(key);
    }

    fn deactivate_slot(&mut self, id: IndividualId) {
        if let Some(p) = &mut self.pareto {
            p.left(id);
        }
        let rec = self.records.get_mut(&id).expect("record exists");
        let slot = rec.active_slot.take().expect("was active") as usize;
        let ind = &self.stored[rec.individual().expect("stored")];
        self.by_loss.remove(&(ind.rank_key(), id));
        self.by_responsible.remove(&(ind.responsible_worker, ind.rank_key(), id));
        self.by_breeding.remove(&breed_key(ind));
        self.active_ids.swap_remove(slot);
        if let Some(moved) = self.active_ids.get(slot).copied() {
            self.records.get_mut(&moved).expect("record exists").active_slot = Some(index(slot));
        }
    }

    /// The stored individual with identity `id`, active or not.
    pub fn get(&self, id: &IndividualId) -> Option<&Individual> {
        self.records.get(id).and_then(Record::individual).map(|k| &self.stored[k])
    }

    /// True if `id` is stored and active.
    pub fn is_active(&self, id: &IndividualId) -> bool {
        self.records.get(id).is_some_and(|r| r.active_slot.is_some())
    }

    /// The active individuals from lowest to highest loss (ties broken by identity), feasible ones
    /// first and infeasible ones by their violation ([`Individual::rank_key`]); with several
    /// objectives, by Pareto rank and crowding ([`Population::rank_by_objectives`]).
    pub fn iter_best(&self) -> impl DoubleEndedIterator<Item = &Individual> + '_ {
        let stored = |id: &IndividualId| self.get(id).expect("indexed individual is stored");
        match &self.pareto {
            None => Either::Left(self.by_loss.iter().map(move |(_, id)| stored(id))),
            Some(p) => Either::Right(self.ranked(p).iter().map(stored)),
        }
    }

    /// The active individuals in breeding order ([`in_breeding_order`]), oldest first; reversed,
    /// the latest first.
    pub fn iter_bred(&self) -> impl DoubleEndedIterator<Item = &Individual> + '_ {
        self.by_breeding.iter().map(|key| self.get(&id_of(key)).expect("indexed individual is stored"))
    }

    /// The lowest loss among the active individuals, whatever the ranking (with several
    /// objectives, the first one's best; with constraints, the best feasible one's, or infinity
    /// while none is feasible): O(log n), where the Pareto order is computed anew.
    pub fn lowest_loss(&self) -> Option<f64> {
        self.by_loss.first().map(|(key, _)| if key.0 == 0 { key.1 } else { f64::INFINITY })
    }

    /// The `k` best active individuals ([`Population::iter_best`]'s order), best first.
    pub fn best(&self, k: usize) -> Vec<Individual> {
        self.best_where(k, |_| true)
    }

    /// The first `k` active individuals in [`Population::iter_best`]'s order that `keep` accepts
    /// (fewer if fewer are), best first. With several objectives, the front alone answers when it
    /// holds `k` of them (pareto_ranking.rs), without the whole order.
    pub fn best_where(&self, k: usize, keep: impl Fn(&Individual) -> bool) -> Vec<Individual> {
        match &self.pareto {
            Some(p) => p
                .best_where(k, &self.active_ids, &|id| self.stored_active(id), &|id| keep(self.stored_active(id)))
                .iter()
                .map(|id| self.stored_active(id).clone())
                .collect(),
            None => self.iter_best().filter(|i| keep(i)).take(k).cloned().collect(),
        }
    }

    /// The `k` best active individuals that worker `responsible` (an index among the island's
    /// workers) is responsible for, best first: what [`Population::best_where`] with that filter
    /// gives, in O(k log n) with one objective (with several, that filtered pass).
    pub fn best_responsible(&self, responsible: u32, k: usize) -> Vec<Individual> {
        if self.pareto.is_some() {
            return self.best_where(k, |i| i.responsible_worker == responsible);
        }
        self.responsible_range(responsible).take(k).map(|(_, _, id)| self.stored_active(id).clone()).collect()
    }

    /// The `k` worst active individuals worker `responsible` is responsible for, worst first.
    pub fn worst_responsible(&self, responsible: u32, k: usize) -> Vec<Individual> {
        if self.pareto.is_some() {
            return self.iter_best().rev().filter(|i| i.responsible_worker == responsible).take(k).cloned().collect();
        }
        self.responsible_range(responsible).rev().take(k).map(|(_, _, id)| self.stored_active(id).clone()).collect()
    }

    fn responsible_range(
        &self,
        responsible: u32,
    ) -> impl DoubleEndedIterator<Item = &(u32, LossKey, IndividualId)> + '_ {
        // The extremes of the classes and of f64::total_cmp: the negative and the positive NaN
        // with every payload bit.
        let (least, most) = (RankKey(0, f64::from_bits(u64::MAX)), RankKey(u8::MAX, f64::from_bits(u64::MAX >> 1)));
        let low = IndividualId { island: 0, worker: 0, generation: 0 };
        let high = IndividualId { island: u32::MAX, worker: u32::MAX, generation: u64::MAX };
        self.by_responsible.range((responsible, least, low)..=(responsible, most, high))
    }

    /// The lowest-loss active individual bred by worker `worker` (global index), ties broken by the
    /// lowest identity. Scans the loss index from the best until the first identity of that worker,
    /// so no per-worker index has to be kept up to date on every insert: when the workers'
    /// individuals are spread over the ranks alike, that is about as many steps as the island has
    /// workers. The worst case is a pass over every active individual, O(n): a worker whose
    /// individuals are all among the worst, or that has none active (never bred here, or all of
    /// them emigrated). With several objectives, "lowest-loss" is the first in the Pareto order.
    pub fn best_of_worker(&self, worker: u32) -> Option<&Individual> {
        self.iter_best().find(|i| i.id.worker == worker)
    }

    /// The `k` worst active individuals ([`Population::iter_best`]'s order reversed), worst first.
    pub fn worst(&self, k: usize) -> Vec<Individual> {
        self.iter_best().rev().take(k).cloned().collect()
    }

    /// `k` distinct active individuals chosen uniformly (fewer if fewer are active).
    pub fn sample(&self, k: usize, rng: &mut PropRng) -> Vec<Individual> {
        let k = k.min(self.active_ids.len());
        rand::seq::index::sample(rng, self.active_ids.len(), k)
            .into_iter()
            .map(|i| self.get(&self.active_ids[i]).expect("stored").clone())
            .collect()
    }

    /// The identities of the active individuals, sorted (to compare populations across workers).
    pub fn active_ids_sorted(&self) -> Vec<IndividualId> {
        let mut ids = self.active_ids.clone();
        // Stable: sorted already after a resume, which this sees in linear time.
        ids.sort();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;
    use crate::space::Value;
    use rand::seq::SliceRandom;

    /// The breeding-order index holds the active individuals in the order sorting them would
    /// give, through arrivals, newer copies and deactivations, whether built one by one or in bulk.
    #[test]
    fn the_breeding_order_index_is_the_sorted_active_individuals() {
        let mut rng = worker_rng(7, 0);
        let mut events: Vec<Individual> = (0..400u64)
            .map(|g| {
                let mut i = ind((g % 5) as u32, g / 5, rand::RngExt::random::<f64>(&mut rng), 0);
                i.start_us = rand::RngExt::random_range(&mut rng, 0..50); // ties fall back to identity
                i
            })
            .collect();
        let copies: Vec<Individual> =
            events.iter().step_by(7).map(|i| Individual { migration_steps: 1, ..i.clone() }).collect();
        events.extend(copies);
        events.shuffle(&mut rng);
        let deactivated: Vec<(IndividualId, u32)> = events.iter().step_by(3).map(|i| (i.id, 0)).collect();
        let mut one_by_one = Population::new();
        for e in &events {
            one_by_one.insert(e.clone());
        }
        for &(id, steps) in &deactivated {
            one_by_one.deactivate(id, steps);
        }
        let bulk = Population::from_events(events, &deactivated);
        for pop in [&one_by_one, &bulk] {
            let sorted: Vec<IndividualId> =
                in_breeding_order(pop.iter_best().cloned().collect()).iter().map(|i| i.id).collect();
            let indexed: Vec<IndividualId> = pop.iter_bred().map(|i| i.id).collect();
            assert_eq!(indexed.len(), pop.active_len());
            assert_eq!(indexed, sorted);
        }
    }

    fn ind(worker: u32, generation: u64, loss: f64, steps: u32) -> Individual {
        let mut i = Individual::new(vec![Value::Float(loss)]);
        i.id = IndividualId { island: 0, worker, generation };
        i.loss = loss;
        i.migration_steps = steps;
        i
    }

    #[test]
    fn running_children_last_until_they_arrive_and_never_come_back() {
        let mut p = Population::new();
        p.start_running(ind(1, 0, f64::INFINITY, 0));
        p.start_running(ind(2, 0, f64::INFINITY, 0));
        let running = |p: &Population| p.running().map(|i| i.id.worker).collect::<Vec<_>>();
        assert_eq!(running(&p), [1, 2]);
        assert_eq!(p.active_len(), 0, "running children are not members");
        p.insert(ind(1, 0, 0.5, 0));
        assert_eq!(running(&p), [2]);
        // A late announcement of a child whose result came first (messages of two peers cross).
        p.start_running(ind(1, 0, f64::INFINITY, 0));
        assert_eq!(running(&p), [2]);
    }

    /// With constraints the feasible come first by loss, then the infeasible by their violation,
    /// then failures; a newer copy that changed feasibility moves; each worker's order agrees.
    #[test]
    fn feasible_individuals_rank_first_then_by_violation() {
        let constrained = |g: u64, loss: f64, constraints: &[f64]| {
            let mut i = ind(g as u32 % 2, g, loss, 0);
            i.responsible_worker = i.id.worker;
            i.constraints = constraints.to_vec();
            i
        };
        let mut p = Population::new();
        p.insert(constrained(0, 0.1, &[0.5, -1.0])); // best loss, violation 0.5
        p.insert(constrained(1, 3.0, &[-0.1])); // feasible
        p.insert(constrained(2, 0.2, &[2.0, 1.0])); // violation 3
        p.insert(constrained(3, 2.0, &[])); // reported none: feasible
        p.insert(constrained(4, f64::INFINITY, &[])); // failed
        let order: Vec<u64> = p.iter_best().map(|i| i.id.generation).collect();
        assert_eq!(order, [3, 1, 0, 2, 4]);
        assert_eq!(p.lowest_loss(), Some(2.0), "the best feasible loss");
        assert_eq!(p.best_responsible(0, 3).iter().map(|i| i.id.generation).collect::<Vec<_>>(), [0, 2, 4]);
        assert_eq!(p.worst_responsible(1, 1)[0].id.generation, 1);
        // A newer copy (a migrant) of generation 2 that is feasible now moves to the front.
        let mut moved = constrained(2, 0.2, &[-1.0]);
        moved.migration_steps = 1;
        p.insert(moved);
        assert_eq!(p.iter_best().map(|i| i.id.generation).collect::<Vec<_>>(), [2, 3, 1, 0, 4]);
        let mut infeasible_only = Population::new();
        infeasible_only.insert(constrained(0, 0.1, &[1.0]));
        assert_eq!(infeasible_only.lowest_loss(), Some(f64::INFINITY), "no feasible loss yet");
    }

    /// Several objectives with constraints: constrained domination. A feasible individual ranks
    /// before every infeasible one however good the infeasible one's objectives, the infeasible
    /// ones rank by their violation, and the front holds feasible ones only.
    #[test]
    fn several_objectives_with_constraints_use_constrained_domination() {
        let mut p = Population::new().rank_by_objectives(vec![1.0, 1.0]);
        for (g, objectives, constraints) in [
            (0, [0.0, 0.0], vec![2.0]),  // dominates everything, but infeasible (violation 2)
            (1, [1.0, 3.0], vec![-1.0]), // feasible
            (2, [3.0, 1.0], vec![]),     // feasible (reported none)
            (3, [0.5, 0.5], vec![0.5]),  // infeasible (violation 0.5)
            (4, [4.0, 4.0], vec![-1.0]), // feasible, dominated
        ] {
            let mut i = ind(0, g, objectives[0], 0);
            i.objectives = objectives.to_vec();
            i.constraints = constraints;
            p.insert(i);
        }
        let order: Vec<u64> = p.iter_best().map(|i| i.id.generation).collect();
        assert_eq!(&order[..2].iter().copied().collect::<std::collections::BTreeSet<_>>(), &[1, 2].into());
        assert_eq!(&order[2..], [4, 3, 0]);
        let front: Vec<u64> = p.best(2).iter().map(|i| i.id.generation).collect();
        assert!(front.contains(&1) && front.contains(&2), "{front:?}");
        let all = p.iter_best().cloned().collect::<Vec<_>>();
        let front = crate::front::pareto_front(&all, &[1.0, 1.0]);
        assert_eq!(front.iter().map(|i| i.id.generation).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn best_worst_and_duplicates() {
        let mut p = Population::new();
        for (g, l) in [3.0, 1.0, 2.0, 5.0, 4.0].into_iter().enumerate() {
            assert_eq!(p.insert(ind(0, g as u64, l, 0)), Arrival::Activated);
        }
        assert_eq!(p.insert(ind(0, 1, 1.0, 0)), Arrival::Ignored);
        assert_eq!(p.active_len(), 5);
        let best: Vec<f64> = p.best(2).iter().map(|i| i.loss).collect();
        assert_eq!(best, vec![1.0, 2.0]);
        let worst: Vec<f64> = p.worst(2).iter().map(|i| i.loss).collect();
        assert_eq!(worst, vec![5.0, 4.0]);
        assert!(p.deactivate(ind(0, 1, 1.0, 0).id, 0));
        assert_eq!(p.best(1)[0].loss, 2.0);
        assert_eq!(p.active_len(), 4);
        assert_eq!(p.known_len(), 5);
    }

    /// With two objectives, "best" is the front first (ends, then by crowding), then the next
    /// rank; failures come last; every insert and deactivation is seen by the next ranking.
    #[test]
    fn several_objectives_rank_by_front_and_crowding() {
        let with = |generation: u64, objectives: &[f64]| {
            let mut i = ind(0, generation, objectives[0], 0);
            i.objectives = objectives.to_vec();
            i
        };
        // Minimize the first, maximize the second: (1, 1) (2, 3) (3, 4) trade off; (2, 2) is behind.
        let mut p = Population::new().rank_by_objectives(vec![1.0, -1.0]);
        for (g, o) in [[2.0, 2.0], [1.0, 1.0], [3.0, 4.0], [2.0, 3.0]].iter().enumerate() {
            p.insert(with(g as u64, o));
        }
        let mut failed = with(9, &[0.0, 9.0]);
        failed.failure = Some("boom".into());
        failed.objectives.clear();
        p.insert(failed);
        let order = |p: &Population| p.iter_best().map(|i| i.id.generation).collect::<Vec<_>>();
        assert_eq!(order(&p), vec![1, 2, 3, 0, 9]);
        assert_eq!(p.best(2).len(), 2);
        assert_eq!(p.worst(1)[0].id.generation, 9);
        // (2, 3) leaves: (2, 2) joins the front, in the middle.
        p.deactivate(with(3, &[2.0, 3.0]).id, 0);
        assert_eq!(order(&p), vec![1, 2, 0, 9]);
        p.insert(with(5, &[0.5, 5.0]));
        assert_eq!(order(&p), vec![5, 1, 2, 0, 9], "(0.5, 5) dominates all: the rest is rank 1");
        assert_eq!(p.best_of_worker(0).unwrap().id.generation, 5);
    }

    #[test]
    fn migration_back_reactivates_and_stale_deactivation_is_ignored() {
        let mut p = Population::new();
        let x = ind(1, 0, 1.0, 0);
        p.insert(x.clone());
        assert!(p.deactivate(x.id, 0)); // emigrated
        assert_eq!(p.insert(ind(1, 0, 1.0, 2)), Arrival::Activated); // came back
        assert!(!p.deactivate(x.id, 0)); // a late copy of the old deactivation
        assert!(p.is_active(&x.id));
    }

    #[test]
    fn order_of_events_does_not_matter() {
        // Arrivals and deactivations of several identities, applied in many orders, give one state.
        let mut events: Vec<(bool, u32, u64, u32)> = Vec::new();
        for g in 0..20u64 {
            events.push((true, 0, g, 0));
            if g % 3 == 0 {
                events.push((false, 0, g, 0));
            }
            if g % 5 == 0 {
                events.push((true, 0, g, 2));
            }
        }
        let mut reference = None;
        let mut rng = worker_rng(3, 0);
        for _ in 0..50 {
            events.shuffle(&mut rng);
            let mut p = Population::new();
            for &(arrive, w, g, s) in &events {
                if arrive {
                    p.insert(ind(w, g, g as f64, s));
                } else {
                    p.deactivate(IndividualId { island: 0, worker: w, generation: g }, s);
                }
            }
            let ids = p.active_ids_sorted();
            let best: Vec<f64> = p.best(5).iter().map(|i| i.loss).collect();
            match &reference {
                None => reference = Some((ids, best)),
                Some(r) => assert_eq!(r, &(ids, best)),
            }
        }
        // g%3==0 deactivated at step 0, unless g%5==0 brought it back at step 2.
        let (ids, _) = reference.unwrap();
        assert_eq!(ids.len(), 20 - 7 + 2);
    }

    #[test]
    fn sample_is_distinct_and_from_active() {
        let mut p = Population::new();
        for g in 0..10 {
            p.insert(ind(0, g, g as f64, 0));
        }
        p.deactivate(IndividualId { island: 0, worker: 0, generation: 4 }, 0);
        let mut rng = worker_rng(1, 1);
        for _ in 0..200 {
            let s = p.sample(3, &mut rng);
            assert_eq!(s.len(), 3);
            assert!(s.iter().all(|i| i.id.generation != 4));
            assert!(s[0].id != s[1].id && s[1].id != s[2].id && s[0].id != s[2].id);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// A worker's best and worst from the per-responsible index are what a filtered pass over
        /// the loss order gives, after every arrival (newer copies with another responsible worker,
        /// failures, ties) and departure, and in a population built in one pass from the same events.
        #[test]
        fn the_responsible_index_gives_the_filtered_orders(
            events in proptest::collection::vec((0u64..25, 0u8..6, 0u32..3, 0u32..3, proptest::prelude::any::<bool>()), 1..80),
        ) {
            let mut p = Population::new();
            let (mut arrivals, mut departures) = (Vec::new(), Vec::new());
            for &(generation, loss, responsible, steps, leaves) in &events {
                let id = IndividualId { island: 0, worker: 0, generation };
                if leaves {
                    p.deactivate(id, steps);
                    departures.push((id, steps));
                } else {
                    let mut i = ind(0, generation, if loss == 5 { f64::INFINITY } else { f64::from(loss) }, steps);
                    i.responsible_worker = responsible;
                    arrivals.push(i.clone());
                    p.insert(i);
                }
                for q in [&p, &Population::from_events(arrivals.clone(), &departures)] {
                    for w in 0..3 {
                        for k in [1, 2, 30] {
                            let ids = |v: Vec<Individual>| v.into_iter().map(|i| i.id).collect::<Vec<_>>();
                            let best: Vec<_> = q.iter_best().filter(|i| i.responsible_worker == w).take(k).map(|i| i.id).collect();
                            proptest::prop_assert_eq!(ids(q.best_responsible(w, k)), best);
                            let worst: Vec<_> =
                                q.iter_best().rev().filter(|i| i.responsible_worker == w).take(k).map(|i| i.id).collect();
                            proptest::prop_assert_eq!(ids(q.worst_responsible(w, k)), worst);
                        }
                    }
                }
            }
        }

        /// With several objectives, the best k from the front kept up to date as individuals
        /// arrive and leave (all, or those a filter accepts) are the first k of the whole order
        /// computed anew, after every event:
        /// arrivals (duplicates, failures, points on a coarse grid of 2 or 3 objectives), and
        /// departures, of front members too.
        #[test]
        fn the_front_kept_up_to_date_gives_the_whole_orders_best(
            three in proptest::prelude::any::<bool>(),
            events in proptest::collection::vec((0u64..30, 0u8..5, 0u8..5, 0u8..5, 0u8..8), 1..60),
        ) {
            let signs = if three { vec![1.0, -1.0, 1.0] } else { vec![1.0, 1.0] };
            let mut fast = Population::new().rank_by_objectives(signs.clone());
            let mut whole = Population::new().rank_by_objectives(signs.clone());
            // Asked only with a filter, so that its front answers as often as it can.
            let mut sieved = Population::new().rank_by_objectives(signs.clone());
            for &(generation, a, b, c, kind) in &events {
                let mut i = ind(0, generation, f64::from(a), 0);
                i.objectives = vec![f64::from(a), f64::from(b), f64::from(c)][..signs.len()].to_vec();
                if kind == 0 {
                    i.failure = Some("boom".into());
                    i.objectives.clear();
                }
                if kind == 7 {
                    fast.deactivate(i.id, ALL_COPIES);
                    whole.deactivate(i.id, ALL_COPIES);
                    sieved.deactivate(i.id, ALL_COPIES);
                } else {
                    fast.insert(i.clone());
                    sieved.insert(i.clone());
                    whole.insert(i);
                }
                let ids = |v: Vec<Individual>| v.into_iter().map(|i| i.id).collect::<Vec<_>>();
                for k in [1, 3, 6] {
                    let expected: Vec<IndividualId> = whole.iter_best().take(k).map(|i| i.id).collect();
                    proptest::prop_assert_eq!(ids(fast.best(k)), expected);
                    // Filtered, as migration asks (the individuals one worker is responsible for).
                    let even = |i: &Individual| i.id.generation.is_multiple_of(2);
                    let expected: Vec<IndividualId> = whole.iter_best().filter(|i| even(i)).take(k).map(|i| i.id).collect();
                    proptest::prop_assert_eq!(ids(sieved.best_where(k, even)), expected);
                }
            }
        }

        /// Built in bulk, a population is the one that inserting the same events one by one gives.
        #[test]
        fn bulk_building_equals_inserting_one_by_one(
            events in proptest::collection::vec((0u32..3, 0u64..12, 0u32..4, proptest::prelude::any::<bool>()), 0..80),
        ) {
            let mut arrivals = Vec::new();
            let mut deacts = Vec::new();
            for &(worker, generation, steps, is_deact) in &events {
                let loss = (generation * 7 % 5) as f64 + f64::from(worker);
                if is_deact {
                    deacts.push((ind(worker, generation, loss, steps).id, steps));
                } else {
                    arrivals.push(ind(worker, generation, loss, steps));
                }
            }
            let mut one_by_one = Population::new();
            for a in arrivals.clone() {
                one_by_one.insert(a);
            }
            for &(id, steps) in &deacts {
                one_by_one.deactivate(id, steps);
            }
            let mut bulk = Population::from_events(arrivals, &deacts);
            proptest::prop_assert_eq!(bulk.active_ids_sorted(), one_by_one.active_ids_sorted());
            proptest::prop_assert_eq!(bulk.known_len(), one_by_one.known_len());
            let order = |p: &Population| p.iter_best().map(|i| (i.id, i.migration_steps)).collect::<Vec<_>>();
            proptest::prop_assert_eq!(order(&bulk), order(&one_by_one));
            // And both go on alike: a later copy and a later deactivation of every identity.
            for &(worker, generation, steps, _) in &events {
                let later = ind(worker, generation, 0.5, steps + 1);
                proptest::prop_assert_eq!(bulk.insert(later.clone()), one_by_one.insert(later));
                let id = ind(worker, generation, 0.0, 0).id;
                proptest::prop_assert_eq!(bulk.deactivate(id, steps), one_by_one.deactivate(id, steps));
            }
            proptest::prop_assert_eq!(bulk.active_ids_sorted(), one_by_one.active_ids_sorted());
        }
    }
}
