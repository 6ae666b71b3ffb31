//! An individual: a point of the search space with its loss, a unique identity and its history.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::curve::Curve;
pub use crate::identity::{IMPORTED, IndividualId};
use crate::lineage::Lineage;
use crate::space::{SearchSpace, Value};

/// An evaluated (or to-be-evaluated) point of the search space.
///
/// Serialized by hand ([`Serialize`] below) so that JSON (the journal) leaves out `objectives` and
/// `constraints` when there are none and `lineage` when it is not population-based training,
/// keeping other checkpoints as they were, while the binary wire
/// format, which has no field names and cannot skip, always carries every field.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Individual {
    /// One value per parameter of the search space, in order.
    pub values: Vec<Value>,
    /// The loss; `+inf` until evaluated and for failed evaluations (`null` in JSON).
    #[serde(deserialize_with = "inf_as_null::deserialize")]
    pub loss: f64,
    /// Why the evaluation failed (error, panic, NaN), if it did.
    pub failure: Option<String>,
    /// The value of each declared objective as the evaluation reported it (a maximized one not
    /// negated), in declaration order, when the run declares objectives; `loss` is then the first
    /// one, minimized. Empty otherwise and for failed evaluations (and absent from the journal).
    #[serde(default)]
    pub objectives: Vec<f64>,
    /// The constraint values the evaluation reported, in its order: feasible when every one is at
    /// most 0 (Optuna's convention). Empty when it reported none (feasible) and for failed
    /// evaluations; absent from the journal then.
    #[serde(default)]
    pub constraints: Vec<f64>,
    /// Unique identity (birth island, worker, generation).
    pub id: IndividualId,
    /// Island-local index of the worker responsible for it on its current island: the only one
    /// that may move it (migration) or replace one of its own for it (pollination). Stored as
    /// `current` in journals, as before the rename.
    #[serde(rename = "current")]
    pub responsible_worker: u32,
    /// How many times it (or the copy of it) has moved between islands.
    pub migration_steps: u32,
    /// Islands it has been on, oldest first: the island it was born on, then at most the last
    /// [`HISTORY_KEPT`]` - 1` it moved to (`migration_steps` counts every move). An island's best
    /// individual can move thousands of times in a long run; a whole history in every migrant and
    /// journal record made both grow with the run.
    pub history: Vec<u32>,
    /// Wall-clock start of its evaluation, microseconds since the Unix epoch.
    pub start_us: i64,
    /// Duration of its evaluation, seconds.
    pub duration_s: f64,
    /// What the loss reported besides the loss (validation accuracy, epochs trained, ...), by name;
    /// finite values only. Absent in journals written before metrics existed.
    #[serde(default)]
    pub metrics: BTreeMap<String, f64>,
    /// The values the loss reported while it ran and whether an early stopper ended it; `None`
    /// when it reported nothing (and in journals written before curves existed).
    #[serde(default)]
    pub curve: Option<Curve>,
    /// Population-based training only: the training state it continues and the steps it trains.
    #[serde(default)]
    pub lineage: Option<Box<Lineage>>,
}

/// The fields in declaration order, which the binary format, reading by position, relies on.
impl Serialize for Individual {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        struct InfAsNull(f64);
        impl Serialize for InfAsNull {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                inf_as_null::serialize(&self.0, s)
            }
        }
        let objectives = !s.is_human_readable() || !self.objectives.is_empty();
        let constraints = !s.is_human_readable() || !self.constraints.is_empty();
        let lineage = !s.is_human_readable() || self.lineage.is_some();
        let optional = usize::from(objectives) + usize::from(constraints) + usize::from(lineage);
        let mut st = s.serialize_struct("Individual", 11 + optional)?;
        st.serialize_field("values", &self.values)?;
        st.serialize_field("loss", &InfAsNull(self.loss))?;
        st.serialize_field("failure", &self.failure)?;
        if objectives {
            st.serialize_field("objectives", &self.objectives)?;
        } else {
            st.skip_field("objectives")?;
        }
        if constraints {
            st.serialize_field("constraints", &self.constraints)?;
        } else {
            st.skip_field("constraints")?;
        }
        st.serialize_field("id", &self.id)?;
        st.serialize_field("current", &self.responsible_worker)?;
        st.serialize_field("migration_steps", &self.migration_steps)?;
        st.serialize_field("history", &self.history)?;
        st.serialize_field("start_us", &self.start_us)?;
        st.serialize_field("duration_s", &self.duration_s)?;
        st.serialize_field("metrics", &self.metrics)?;
        st.serialize_field("curve", &self.curve)?;
        if lineage {
            st.serialize_field("lineage", &self.lineage)?;
        } else {
            st.skip_field("lineage")?;
        }
        st.end()
    }
}

impl Individual {
    /// A fresh, unevaluated individual at `values`, with a placeholder identity the driver overwrites.
    pub fn new(values: Vec<Value>) -> Self {
        Individual {
            values,
            loss: f64::INFINITY,
            failure: None,
            objectives: Vec::new(),
            constraints: Vec::new(),
            id: IndividualId { island: 0, worker: 0, generation: 0 },
            responsible_worker: 0,
            migration_steps: 0,
            history: Vec::new(),
            start_us: 0,
            duration_s: 0.0,
            metrics: BTreeMap::new(),
            curve: None,
            lineage: None,
        }
    }

    /// Record a move to `island`: append it to the history, dropping the oldest move beyond
    /// [`HISTORY_KEPT`] entries (the birth island stays first).
    pub fn record_move(&mut self, island: u32) {
        self.history.push(island);
        if self.history.len() > HISTORY_KEPT {
            self.history.remove(1);
        }
    }

    /// A child derived from `self`: same values, loss, history and lineage reset.
    pub fn child(&self) -> Self {
        Individual::new(self.values.clone())
    }

    /// True when every constraint value is at most 0 (and when it reported none).
    pub fn is_feasible(&self) -> bool {
        self.constraints.iter().all(|c| *c <= 0.0)
    }

    /// Where it ranks, lowest best: evaluated and feasible by its loss, then infeasible by its
    /// violation (feasibility first, as Deb's rules and Optuna's constrained samplers rank), then
    /// failed and unevaluated ones.
    pub fn rank_key(&self) -> RankKey {
        RankKey::of(self.loss, &self.constraints)
    }

    /// A named view of the values, for loss functions and reports.
    pub fn params<'a>(&'a self, space: &'a SearchSpace) -> Params<'a> {
        Params { space, values: &self.values }
    }

    /// True when an early stopper ended its evaluation.
    pub fn pruned(&self) -> bool {
        self.curve.as_ref().is_some_and(|c| c.pruned)
    }

    /// The start time as a UTC timestamp.
    pub fn start_time(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp_micros(self.start_us).unwrap_or_default()
    }
}

/// An individual's place in the ranking ([`Individual::rank_key`]): a class (0 feasible, 1
/// infeasible, 2 failed), then the loss or the violation; a total order (`f64::total_cmp`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankKey(pub u8, pub f64);

impl RankKey {
    /// The rank of a `loss` with its `constraints` ([`Individual::rank_key`]).
    pub fn of(loss: f64, constraints: &[f64]) -> RankKey {
        if !loss.is_finite() {
            RankKey(2, loss)
        } else if constraints.iter().all(|c| *c <= 0.0) {
            RankKey(0, loss)
        } else {
            RankKey(1, constraints.iter().map(|c| c.max(0.0)).sum())
        }
    }

    /// Whether the evaluation failed (a loss that is not finite).
    pub fn failed(&self) -> bool {
        self.0 == 2
    }
}

/// The rank of a loss without constraints.
impl From<f64> for RankKey {
    fn from(loss: f64) -> Self {
        RankKey::of(loss, &[])
    }
}

impl Eq for RankKey {}
impl PartialOrd for RankKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for RankKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0).then(self.1.total_cmp(&other.1))
    }
}

/// The most islands an individual's history holds.
pub const HISTORY_KEPT: usize = 32;

/// Named read access to an individual's values: what a loss closure receives.
#[derive(Debug, Clone, Copy)]
pub struct Params<'a> {
    space: &'a SearchSpace,
    values: &'a [Value],
}

impl<'a> Params<'a> {
    /// A view of `values` in `space`.
    pub fn new(space: &'a SearchSpace, values: &'a [Value]) -> Self {
        Params { space, values }
    }

    /// The raw values in parameter order, the dormant values of inactive parameters included
    /// ([`Params::is_active`]).
    pub fn values(&self) -> &'a [Value] {
        self.values
    }

    /// All values as numbers (floats, ints, categorical indices), in parameter order, inactive
    /// parameters' dormant values included.
    pub fn to_vec(&self) -> Vec<f64> {
        self.values.iter().map(|v| v.as_f64()).collect()
    }

    /// False when `name` is a conditional parameter whose condition does not hold here
    /// ([`crate::condition`]): its value is then not part of this configuration. True for every
    /// parameter of a space without conditions; panics (a failed evaluation) for an unknown name.
    pub fn is_active(&self, name: &str) -> bool {
        let i = self.index(name);
        self.space.activity().is_none_or(|a| a.active(self.values)[i])
    }

    fn index(&self, name: &str) -> usize {
        match self.space.index_of(name) {
            Some(i) => i,
            None => panic!(
                "no parameter '{name}' in the search space; known: {}",
                self.space.params().iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    fn lookup(&self, name: &str) -> Value {
        let i = self.index(name);
        if !self.is_active(name) {
            panic!(
                "parameter '{name}' is inactive here (its condition does not hold): check is_active(\"{name}\") first"
            );
        }
        self.values[i]
    }

    /// The value of float parameter `name`. Panics (recorded as a failed evaluation) if unknown or
    /// inactive ([`Params::is_active`]).
    pub fn float(&self, name: &str) -> f64 {
        self.lookup(name).as_f64()
    }

    /// The value of int parameter `name`. Panics (recorded as a failed evaluation) if unknown or
    /// inactive.
    pub fn int(&self, name: &str) -> i64 {
        match self.lookup(name) {
            Value::Int(i) => i,
            other => other.as_f64() as i64,
        }
    }

    /// The chosen string of categorical parameter `name`. Panics (recorded as a failed evaluation)
    /// if unknown, inactive or not categorical.
    pub fn category(&self, name: &str) -> &'a str {
        let i = self.index(name);
        match (&self.space.params()[i].domain, self.lookup(name)) {
            (crate::space::Domain::Categorical { choices }, Value::Cat(c)) => &choices[c as usize],
            _ => panic!("parameter '{name}' is not categorical"),
        }
    }
}

/// Losses in JSON: `+inf` (unevaluated or failed) is written as `null`, which JSON can represent.
mod inf_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        x.is_finite().then_some(*x).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON leaves `objectives` out when empty (single-objective journals as before) and
    /// `lineage` when there is none, and reads them back; the binary format always carries both,
    /// field by field in order.
    #[test]
    fn objectives_round_trip_in_json_and_in_the_binary_format() {
        let mut ind = Individual::new(vec![Value::Float(0.5)]);
        ind.loss = 2.0;
        ind.metrics.insert("acc".into(), 0.5);
        let text = serde_json::to_string(&ind).unwrap();
        assert!(!text.contains("objectives") && !text.contains("lineage"), "{text}");
        assert!(text.starts_with(r#"{"values":[{"Float":0.5}],"loss":2.0,"failure":null,"id":"#), "{text}");
        assert_eq!(serde_json::from_str::<Individual>(&text).unwrap(), ind);
        ind.objectives = vec![2.0, 0.5];
        let text = serde_json::to_string(&ind).unwrap();
        assert!(text.contains(r#""failure":null,"objectives":[2.0,0.5],"id""#), "{text}");
        assert_eq!(serde_json::from_str::<Individual>(&text).unwrap(), ind);
        let lineage = crate::lineage::Lineage { parent: Some(ind.id), step: 4, steps: 2, exploited: true };
        ind.lineage = Some(Box::new(lineage));
        let text = serde_json::to_string(&ind).unwrap();
        assert!(
            text.ends_with(
                r#""lineage":{"parent":{"island":0,"worker":0,"generation":0},"step":4,"steps":2,"exploited":true}}"#
            ),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Individual>(&text).unwrap(), ind);
        ind.lineage = None;
        ind.objectives.clear();
        ind.constraints = vec![0.5, -1.0];
        let text = serde_json::to_string(&ind).unwrap();
        assert!(text.contains(r#""failure":null,"constraints":[0.5,-1.0],"id""#), "{text}");
        assert_eq!(serde_json::from_str::<Individual>(&text).unwrap(), ind);
        for (objectives, lineage) in [(vec![], None), (vec![1.0, 2.0], Some(lineage))] {
            let mut i = ind.clone();
            i.objectives = objectives;
            i.lineage = lineage.map(Box::new);
            i.loss = f64::INFINITY;
            let bytes = postcard::to_allocvec(&vec![i.clone(), i.clone()]).unwrap();
            assert_eq!(postcard::from_bytes::<Vec<Individual>>(&bytes).unwrap(), vec![i.clone(), i]);
        }
    }

    #[test]
    fn a_history_keeps_the_birth_island_and_the_latest_moves() {
        let mut ind = Individual::new(vec![Value::Float(0.0)]);
        ind.history = vec![7];
        for hop in 0..1000u32 {
            ind.record_move(hop % 3);
        }
        assert_eq!(ind.history.len(), HISTORY_KEPT);
        assert_eq!(ind.history[0], 7, "the birth island stays first");
        let latest: Vec<u32> = (1000 - (HISTORY_KEPT as u32 - 1)..1000).map(|h| h % 3).collect();
        assert_eq!(&ind.history[1..], &latest[..]);
    }
}
