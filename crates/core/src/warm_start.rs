//! Earlier runs reused (`--warm-start PATH`): evaluations another run made, read by name from its
//! checkpoint, its `trials.csv` or an Optuna journal (the engine reads the files), turned into
//! individuals of this run's search space without evaluating them again. The space must match by
//! name: a parameter missing from the earlier run, one it has that this space has not, or one of
//! another type is an error naming it; a value outside this space's bounds (or a choice it lacks)
//! leaves its evaluation out, counted.

use serde_json::{Map, Value as Json};

use crate::enqueued::values;
use crate::error::{Error, Result};
use crate::individual::{IMPORTED, Individual, IndividualId};
use crate::space::{Domain, SearchSpace};

/// The type of a parameter as an earlier run declared it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A real number.
    Float,
    /// An integer.
    Int,
    /// One of a list of strings.
    Categorical,
}

impl Kind {
    /// The kind of a domain.
    pub fn of(domain: &Domain) -> Kind {
        match domain {
            Domain::Float { .. } => Kind::Float,
            Domain::Int { .. } => Kind::Int,
            Domain::Categorical { .. } => Kind::Categorical,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Float => "a float",
            Kind::Int => "an int",
            Kind::Categorical => "a categorical",
        }
    }
}

/// One evaluation of an earlier run: its parameters by name (numbers, a categorical's choice as a
/// string; an inactive conditional parameter absent), its loss and constraint values.
#[derive(Debug, Clone, PartialEq)]
pub struct Earlier {
    /// Parameter name to value.
    pub params: Map<String, Json>,
    /// The loss; not finite for a failed evaluation, which is not imported.
    pub loss: f64,
    /// Its constraint values (empty: none reported).
    pub constraints: Vec<f64>,
}

/// What an earlier run holds: its parameters with their types (where the source says them) and
/// its evaluations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EarlierRun {
    /// The parameters by name, with their kind where the source records it.
    pub params: Vec<(String, Option<Kind>)>,
    /// The evaluations, in the order the source lists them.
    pub evaluations: Vec<Earlier>,
}

/// What a warm start takes from an earlier run.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The evaluations as individuals of this space, numbered `first..` among the imported.
    pub individuals: Vec<Individual>,
    /// Evaluations left out: a value outside this space.
    pub outside: usize,
    /// Failed evaluations (not imported: they say nothing of where the good points are).
    pub failed: usize,
}

/// `run`'s evaluations in `space`, numbered from `first` (the identities of imported individuals,
/// [`IMPORTED`]), or an error naming the parameter that does not match; `source` names the run in
/// errors.
pub fn import(space: &SearchSpace, run: &EarlierRun, source: &str, first: u64) -> Result<Imported> {
    let bad = |m: String| Err(Error::InvalidConfig(format!("--warm-start {source}: {m}")));
    let theirs: Vec<&str> = run.params.iter().map(|(n, _)| n.as_str()).collect();
    for p in space.params() {
        match run.params.iter().find(|(n, _)| *n == p.name) {
            None => {
                return bad(format!(
                    "parameter '{}' of the search space is not in the earlier run (it has {})",
                    p.name,
                    theirs.join(", ")
                ));
            }
            Some((_, Some(kind))) if *kind != Kind::of(&p.domain) => {
                return bad(format!(
                    "parameter '{}' is {} here but {} in the earlier run",
                    p.name,
                    Kind::of(&p.domain).name(),
                    kind.name()
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = theirs.iter().find(|n| space.index_of(n).is_none()) {
        return bad(format!("the earlier run has parameter '{extra}', which the search space has not"));
    }
    let (mut individuals, mut outside, mut failed) = (Vec::new(), 0, 0);
    for e in &run.evaluations {
        if !e.loss.is_finite() {
            failed += 1;
            continue;
        }
        match values(space, &e.params) {
            Ok(v) => {
                let mut ind = Individual::new(v);
                ind.loss = e.loss;
                ind.constraints = e.constraints.clone();
                ind.id = IndividualId { island: 0, worker: IMPORTED, generation: first + individuals.len() as u64 };
                individuals.push(ind);
            }
            Err(_) => outside += 1,
        }
    }
    Ok(Imported { individuals, outside, failed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn earlier(params: &[(&str, Option<Kind>)], evaluations: Vec<(Json, f64)>) -> EarlierRun {
        EarlierRun {
            params: params.iter().map(|(n, k)| (n.to_string(), *k)).collect(),
            evaluations: evaluations
                .into_iter()
                .map(|(p, loss)| Earlier { params: p.as_object().unwrap().clone(), loss, constraints: vec![] })
                .collect(),
        }
    }

    #[test]
    fn evaluations_are_imported_by_name_and_values_outside_are_counted() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).int("n", 1, 4).build().unwrap();
        let run = earlier(
            &[("n", Some(Kind::Int)), ("x", None)],
            vec![
                (json!({"x": 0.5, "n": 2}), 1.0),
                (json!({"x": 1.5, "n": 2}), 0.5),
                (json!({"x": 0.25, "n": 3}), f64::INFINITY),
                (json!({"x": 0.75, "n": 4}), 2.0),
            ],
        );
        let imported = import(&space, &run, "old", 10).unwrap();
        assert_eq!((imported.outside, imported.failed), (1, 1));
        let ids: Vec<u64> = imported.individuals.iter().map(|i| i.id.generation).collect();
        assert_eq!(ids, [10, 11]);
        assert!(imported.individuals.iter().all(|i| i.id.is_imported()));
        assert_eq!(imported.individuals[1].loss, 2.0);
    }

    #[test]
    fn a_space_that_does_not_match_is_an_error_naming_the_parameter() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).int("n", 1, 4).build().unwrap();
        let cases = [
            (earlier(&[("x", None)], vec![]), "parameter 'n' of the search space is not in the earlier run (it has x)"),
            (
                earlier(&[("x", None), ("n", None), ("z", None)], vec![]),
                "the earlier run has parameter 'z', which the search space has not",
            ),
            (
                earlier(&[("x", None), ("n", Some(Kind::Float))], vec![]),
                "parameter 'n' is an int here but a float in the earlier run",
            ),
        ];
        for (run, expected) in cases {
            let e = import(&space, &run, "old/ck", 0).unwrap_err().to_string();
            assert!(e.contains("--warm-start old/ck: ") && e.contains(expected), "{e}");
        }
    }
}
