//! Ask and tell in one process, for any executor (a notebook, Dask, Ray, a Slurm array): the
//! island of one worker whose trials the caller runs. `ask` breeds a child from everything told
//! so far, with every trial asked and not yet told counting as running (the GP's fantasies, TPE's
//! lies), as the island's running evaluations do in a run; `tell` files its loss. The study is
//! saved as JSON: the space, the propagator with every setting, the seed, and every trial.

use std::collections::BTreeMap;
use std::sync::Mutex;

use pyo3::exceptions::{PyKeyError, PyOSError, PyValueError};
use pyo3::prelude::*;
use serde::{Deserialize, Serialize};

use propulate::individual::IndividualId;
use propulate::population::Population;
use propulate::propagator::{Breeder, Problem, Propagator, PropagatorSpec};
use propulate::rng::worker_rng;
use propulate::{Individual, SearchSpace, Value};

use crate::task::{params_dict, space_from_json};

/// What a saved study holds.
#[derive(Serialize, Deserialize)]
struct Saved {
    /// The format, for studies saved by later versions.
    format: u32,
    space: SearchSpace,
    propagator: PropagatorSpec,
    seed: u64,
    /// Trials asked so far (the next one's number).
    asked: u64,
    /// Trials told, in the order told.
    told: Vec<Individual>,
    /// Trials asked and not told yet.
    running: Vec<Individual>,
    /// Configurations enqueued and not asked yet, in order (`Study.enqueue`).
    #[serde(default)]
    enqueued: Vec<Vec<Value>>,
}

const FORMAT: u32 = 1;

/// The study's state.
struct State {
    saved: Saved,
    propagator: Box<dyn Propagator>,
    population: Population,
    running: BTreeMap<u64, Individual>,
}

impl State {
    fn new(saved: Saved) -> PyResult<State> {
        let propagator = saved.propagator.build(&saved.space).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mut population = Population::new();
        for ind in &saved.told {
            population.insert(ind.clone());
        }
        let mut running = BTreeMap::new();
        for ind in &saved.running {
            population.start_running(ind.clone());
            running.insert(ind.id.generation, ind.clone());
        }
        Ok(State { saved, propagator, population, running })
    }

    fn ask(&mut self) -> PyResult<Individual> {
        let generation = self.saved.asked;
        let mut rng = worker_rng(self.saved.seed, 0);
        // Trial n draws from block n of the stream, as a worker's generation n does.
        rng.set_word_pos(u128::from(generation) << 40);
        let breeder = Breeder { island: 0, worker: 0, generation, since: 0 };
        let mut children = if self.saved.enqueued.is_empty() {
            self.propagator
                .propagate_as(breeder, &self.population, &self.saved.space, &mut rng)
                .map_err(|e| PyValueError::new_err(e.to_string()))?
        } else {
            vec![Individual::new(self.saved.enqueued.remove(0))]
        };
        if children.is_empty() {
            return Err(PyValueError::new_err(format!("propagator {} bred no child", self.propagator.name())));
        }
        let mut child = children.swap_remove(0);
        child.id = IndividualId { island: 0, worker: 0, generation };
        child.loss = f64::INFINITY;
        child.failure = None;
        child.objectives.clear();
        child.metrics.clear();
        child.curve = None;
        child.responsible_worker = 0;
        child.migration_steps = 0;
        child.history = vec![0];
        child.start_us = now_us();
        self.saved.asked += 1;
        self.population.start_running(child.clone());
        self.running.insert(generation, child.clone());
        Ok(child)
    }

    fn tell(
        &mut self,
        number: u64,
        loss: Option<f64>,
        failure: Option<String>,
        constraints: Vec<f64>,
        metrics: BTreeMap<String, f64>,
    ) -> PyResult<()> {
        let Some(mut ind) = self.running.remove(&number) else {
            let told = self.saved.told.iter().any(|t| t.id.generation == number);
            return Err(PyKeyError::new_err(if told {
                format!("trial {number} was told already")
            } else {
                format!("trial {number} was never asked (asked so far: {})", self.saved.asked)
            }));
        };
        ind.duration_s = ((now_us() - ind.start_us) as f64 / 1e6).max(0.0);
        match (loss, failure) {
            (Some(x), None) if x.is_finite() => {
                ind.loss = x;
                ind.constraints = constraints;
                ind.metrics = metrics.into_iter().filter(|(_, v)| v.is_finite()).collect();
            }
            (Some(x), None) => {
                ind.loss = f64::INFINITY;
                ind.failure = Some(format!("the loss is {x}"));
            }
            (_, Some(why)) => {
                ind.loss = f64::INFINITY;
                ind.failure = Some(why);
            }
            (None, None) => {
                ind.loss = f64::INFINITY;
                ind.failure = Some("told without a loss".into());
            }
        }
        self.population.insert(ind.clone());
        self.saved.told.push(ind);
        Ok(())
    }

    fn to_saved(&self) -> Saved {
        Saved {
            format: FORMAT,
            space: self.saved.space.clone(),
            propagator: self.saved.propagator.clone(),
            seed: self.saved.seed,
            asked: self.saved.asked,
            told: self.saved.told.clone(),
            running: self.running.values().cloned().collect(),
            enqueued: self.saved.enqueued.clone(),
        }
    }
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The native study behind `propulate_rs.Study`.
#[pyclass(module = "propulate_rs", name = "_Study")]
pub struct Study {
    state: Mutex<State>,
}

impl Study {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> PyResult<T>) -> PyResult<T> {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[pymethods]
impl Study {
    /// A new study over `space` (JSON) breeding with `propagator` (a name, `auto`: picked for the
    /// space and `budget` trials) and its `settings` (JSON object), sized for `workers` trials
    /// running at once.
    #[new]
    fn new(space: &str, propagator: &str, settings: &str, seed: u64, budget: u64, workers: usize) -> PyResult<Study> {
        let space = space_from_json(space)?;
        let settings: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(settings).map_err(|e| PyValueError::new_err(format!("propagator settings: {e}")))?;
        let bad = |e: propulate::CoreError| PyValueError::new_err(e.to_string());
        if propagator == "pbt" {
            return Err(PyValueError::new_err(
                "pbt continues each member's training state, which ask/tell keeps none of (every trial would \
                 continue the first): run it with optimize(loss, space, propagator=\"pbt\")",
            ));
        }
        let spec = if propagator == propulate::propagator::AUTO {
            if !settings.is_empty() {
                let names: Vec<&str> = settings.keys().map(String::as_str).collect();
                return Err(PyValueError::new_err(format!(
                    "Study() got {}: Study takes space, propagator, seed, budget and workers, and a propagator's \
                     settings only with the propagator by name (Study(space, \"tpe\", gamma=0.1)), not with auto",
                    names.join(", ")
                )));
            }
            Problem::new(&space, budget, 1, 1).spec(workers).map_err(bad)?.0
        } else if settings.is_empty() {
            PropagatorSpec::with_defaults(propagator, workers).map_err(bad)?
        } else {
            let mut all = PropagatorSpec::with_defaults(propagator, workers).map_err(bad)?.settings();
            // A misspelt setting would otherwise be dropped and its default used without a word.
            if let Some(unknown) = settings.keys().find(|k| !all.contains_key(*k)) {
                let known: Vec<&str> = all.keys().map(String::as_str).filter(|k| *k != "name").collect();
                return Err(PyValueError::new_err(format!(
                    "propagator {propagator} has no setting '{unknown}'; its settings: {}",
                    known.join(", ")
                )));
            }
            all.extend(settings);
            PropagatorSpec::from_settings(propagator, all).map_err(bad)?
        };
        let saved = Saved {
            format: FORMAT,
            space,
            propagator: spec,
            seed,
            asked: 0,
            told: Vec::new(),
            running: Vec::new(),
            enqueued: Vec::new(),
        };
        Ok(Study { state: Mutex::new(State::new(saved)?) })
    }

    /// The study saved at `path`.
    #[staticmethod]
    fn load(path: &str) -> PyResult<Study> {
        let text = std::fs::read_to_string(path).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
        let saved: Saved = serde_json::from_str(&text)
            .map_err(|e| PyValueError::new_err(format!("{path} is not a saved study: {e}")))?;
        if saved.format != FORMAT {
            return Err(PyValueError::new_err(format!(
                "{path} is a study of format {}, this version reads format {FORMAT}",
                saved.format
            )));
        }
        Ok(Study { state: Mutex::new(State::new(saved)?) })
    }

    /// Save to `path` (written to a temporary file beside it, then renamed: a crash leaves the
    /// old file or the new one).
    fn save(&self, path: &str) -> PyResult<()> {
        let text =
            self.with(|s| serde_json::to_string(&s.to_saved()).map_err(|e| PyValueError::new_err(e.to_string())))?;
        propulate::output::write_atomically(std::path::Path::new(path), text.as_bytes())
            .map_err(|e| PyOSError::new_err(e.to_string()))
    }

    /// The next trial: its number and its params (a dict). Breeds without the GIL.
    fn ask<'py>(&self, py: Python<'py>) -> PyResult<(u64, Bound<'py, pyo3::types::PyDict>)> {
        let child = py.detach(|| self.with(State::ask))?;
        let space = self.with(|s| Ok(s.saved.space.clone()))?;
        Ok((child.id.generation, params_dict(py, &space, &child.values)?))
    }

    /// File trial `number`'s loss, or its failure (`loss` None, or not finite), with the constraint values
    /// it measured (feasible when each is at most 0) and its other numbers (metrics, by name).
    #[pyo3(signature = (number, loss, failure = None, constraints = None, metrics = None))]
    fn tell(
        &self,
        number: u64,
        loss: Option<f64>,
        failure: Option<String>,
        constraints: Option<Vec<f64>>,
        metrics: Option<BTreeMap<String, f64>>,
    ) -> PyResult<()> {
        self.with(|s| s.tell(number, loss, failure, constraints.unwrap_or_default(), metrics.unwrap_or_default()))
    }

    /// Every trial told, as JSON records (params, loss, failure, number, duration).
    fn trials(&self) -> PyResult<String> {
        self.with(|s| {
            let space = &s.saved.space;
            let records: Vec<serde_json::Value> = s
                .saved
                .told
                .iter()
                .map(|ind| {
                    let mut j = propulate::output::individual_json(space, &[], ind);
                    if let Some(o) = j.as_object_mut() {
                        o.insert("number".into(), ind.id.generation.into());
                        o.insert("duration_s".into(), ind.duration_s.into());
                    }
                    j
                })
                .collect();
            Ok(serde_json::Value::from(records).to_string())
        })
    }

    /// Ask `configuration` (JSON: parameter name to value) before anything is bred, after those
    /// enqueued before it; an error names what does not fit the space.
    fn enqueue(&self, configuration: &str) -> PyResult<()> {
        let configuration: propulate::enqueued::Configuration =
            serde_json::from_str(configuration).map_err(|e| PyValueError::new_err(format!("configuration: {e}")))?;
        self.with(|s| {
            let values = propulate::enqueued::values(&s.saved.space, &configuration)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            s.saved.enqueued.push(values);
            Ok(())
        })
    }

    /// The parameters' names, in the space's order.
    fn names(&self) -> PyResult<Vec<String>> {
        self.with(|s| Ok(s.saved.space.params().iter().map(|p| p.name.clone()).collect()))
    }

    /// The numbers of the trials asked and not told yet.
    fn running(&self) -> PyResult<Vec<u64>> {
        self.with(|s| Ok(s.running.keys().copied().collect()))
    }

    /// The trials asked and not told yet, each its number and its params (a dict), as `ask` gave
    /// them: after `load`, what to run again.
    fn running_trials<'py>(&self, py: Python<'py>) -> PyResult<Vec<(u64, Bound<'py, pyo3::types::PyDict>)>> {
        let (space, running) = self.with(|s| Ok((s.saved.space.clone(), s.running.clone())))?;
        running.iter().map(|(number, ind)| Ok((*number, params_dict(py, &space, &ind.values)?))).collect()
    }

    /// The propagator with every setting, as JSON (`name` among them).
    fn propagator(&self) -> PyResult<String> {
        self.with(|s| {
            let mut settings = s.saved.propagator.settings();
            settings.insert("name".into(), s.saved.propagator.name().into());
            Ok(serde_json::Value::from(settings).to_string())
        })
    }
}
