//! Earlier runs reused (`--warm-start PATH`): evaluations another run made, read by name from its
//! checkpoint, its `trials.csv` or an Optuna journal (the engine reads the files), turned into
//! individuals of this run's search space without evaluating them again. The space must match by
//! name: a parameter missing from the earlier run, one it has that this space has not, or one of
//! another type is an error naming it; a value outside this space's bounds (or a choice it lacks)
//! leaves its evaluation out, counted.

use serde_json::{Map, Value as Json};

use crate::enqueued::{Unusable, values_or_missing};
use crate::error::{Error, Result};
use crate::individual::{IMPORTED, Individual, IndividualId};
use crate::objective::{Direction, Objective};
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
/// string; an inactive conditional parameter absent), its loss, objective values and constraint
/// values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Earlier {
    /// Parameter name to value.
    pub params: Map<String, Json>,
    /// The loss, minimized (a maximized first objective negated); not finite for a failed
    /// evaluation, which is not imported.
    pub loss: f64,
    /// The values of the run's [objectives](EarlierRun::objectives), as reported, in their order.
    pub values: Vec<f64>,
    /// Its constraint values (empty: none reported).
    pub constraints: Vec<f64>,
    /// Pruned, or never finished (an Optuna trial running or waiting when the journal was read):
    /// left out, and counted apart from the failed ones.
    pub unfinished: bool,
}

/// An objective of an earlier run, as far as its source says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierObjective {
    /// Its name (`None`: an Optuna study that named no metrics).
    pub name: Option<String>,
    /// Minimized or maximized (`None`: a trials.csv, which does not say).
    pub direction: Option<Direction>,
}

/// What an earlier run holds: its parameters with their types (where the source says them), its
/// objectives (none: one loss) and its evaluations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EarlierRun {
    /// The parameters by name, with their kind where the source records it.
    pub params: Vec<(String, Option<Kind>)>,
    /// The objectives whose values each evaluation carries (empty: a run of one loss).
    pub objectives: Vec<EarlierObjective>,
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
    /// Evaluations left out: no value for a parameter active in this space (a conditional one
    /// that was inactive there, or a parameter made unconditional since).
    pub missing: usize,
    /// Failed evaluations (not imported: they say nothing of where the good points are).
    pub failed: usize,
    /// Pruned or unfinished evaluations ([`Earlier::unfinished`]), left out.
    pub unfinished: usize,
}

/// `run`'s evaluations in `space` for a run with `objectives` (none: one loss), numbered from
/// `first` (the identities of imported individuals, [`IMPORTED`]), or an error naming the
/// parameter or objective that does not match; `source` names the run in errors.
pub fn import(
    space: &SearchSpace,
    run: &EarlierRun,
    objectives: &[Objective],
    source: &str,
    first: u64,
) -> Result<Imported> {
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
    let columns = match objective_columns(run, objectives) {
        Ok(c) => c,
        Err(m) => return bad(m),
    };
    let (mut individuals, mut outside, mut missing, mut failed, mut unfinished) = (Vec::new(), 0, 0, 0, 0);
    for e in &run.evaluations {
        if e.unfinished {
            unfinished += 1;
            continue;
        }
        // This run's objective values (a column of `None`: the earlier run's one loss).
        let objective_values: Vec<f64> =
            columns.iter().map(|c| c.map_or(e.loss, |i| e.values.get(i).copied().unwrap_or(f64::NAN))).collect();
        if !e.loss.is_finite() || objective_values.iter().any(|v| !v.is_finite()) {
            failed += 1;
            continue;
        }
        match values_or_missing(space, &e.params) {
            Ok(v) => {
                let mut ind = Individual::new(v);
                ind.loss = match objectives.first() {
                    Some(o) => o.sign() * objective_values[0],
                    None => e.loss,
                };
                ind.objectives = objective_values;
                ind.constraints = e.constraints.clone();
                ind.id = IndividualId { island: 0, worker: IMPORTED, generation: first + individuals.len() as u64 };
                individuals.push(ind);
            }
            Err(Unusable::Missing(_)) => missing += 1,
            Err(Unusable::Invalid(_)) => outside += 1,
        }
    }
    Ok(Imported { individuals, outside, missing, failed, unfinished })
}

/// Where each of this run's `objectives` is among the earlier run's values: by name, by position
/// when the earlier run named none and has as many, or (`None`) its one loss for an objective
/// `loss` minimized; an error when one is missing or runs the other way.
fn objective_columns(run: &EarlierRun, objectives: &[Objective]) -> std::result::Result<Vec<Option<usize>>, String> {
    let unnamed = run.objectives.iter().all(|o| o.name.is_none()) && run.objectives.len() == objectives.len();
    let theirs = if run.objectives.is_empty() {
        "it has one loss".to_string()
    } else {
        let names: Vec<&str> = run.objectives.iter().map(|o| o.name.as_deref().unwrap_or("(unnamed)")).collect();
        format!("its objectives: {}", names.join(", "))
    };
    objectives
        .iter()
        .enumerate()
        .map(|(k, o)| {
            let at = run.objectives.iter().position(|t| t.name.as_deref() == Some(o.name.as_str()));
            match at.or((unnamed && !run.objectives.is_empty()).then_some(k)) {
                Some(i) => match run.objectives[i].direction {
                    Some(d) if d != o.direction => Err(format!(
                        "objective '{}' is {}imized here but {}imized in the earlier run",
                        o.name,
                        o.direction.as_str(),
                        d.as_str()
                    )),
                    _ => Ok(Some(i)),
                },
                None if run.objectives.is_empty() && o.name == "loss" && o.direction == Direction::Min => Ok(None),
                None => Err(format!("objective '{}' is not in the earlier run ({theirs})", o.name)),
            }
        })
        .collect()
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
                .map(|(p, loss)| Earlier { params: p.as_object().unwrap().clone(), loss, ..Earlier::default() })
                .collect(),
            objectives: vec![],
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
        let imported = import(&space, &run, &[], "old", 10).unwrap();
        assert_eq!((imported.outside, imported.failed), (1, 1));
        let ids: Vec<u64> = imported.individuals.iter().map(|i| i.id.generation).collect();
        assert_eq!(ids, [10, 11]);
        assert!(imported.individuals.iter().all(|i| i.id.is_imported()));
        assert_eq!(imported.individuals[1].loss, 2.0);
    }

    /// A value missing for a parameter active here, and a pruned or unfinished evaluation, are
    /// counted apart from values outside the space and from failures.
    #[test]
    fn missing_values_and_unfinished_evaluations_are_counted_apart() {
        let space = SearchSpace::builder()
            .categorical("opt", &["sgd", "adam"])
            .float("momentum", 0.0, 1.0)
            .when("opt", &["sgd"])
            .build()
            .unwrap();
        let mut run = earlier(
            &[("opt", None), ("momentum", None)],
            vec![
                (json!({"opt": "sgd", "momentum": 0.5}), 1.0),
                (json!({"opt": "sgd"}), 0.5),
                (json!({"opt": "adam"}), 0.7),
                (json!({"opt": "adam"}), 0.2),
                (json!({"opt": "sgd", "momentum": 2.0}), 0.9),
            ],
        );
        run.evaluations[3].unfinished = true;
        let imported = import(&space, &run, &[], "old", 0).unwrap();
        assert_eq!(imported.individuals.len(), 2);
        assert_eq!((imported.outside, imported.missing, imported.failed, imported.unfinished), (1, 1, 0, 1));
    }

    #[test]
    fn objectives_are_taken_by_name_or_position_and_checked_for_direction() {
        let space = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        let named = |name: Option<&str>, direction| EarlierObjective { name: name.map(String::from), direction };
        let mut run = earlier(&[("x", None)], vec![(json!({"x": 0.5}), -0.9), (json!({"x": 0.25}), -0.8)]);
        run.objectives = vec![named(Some("acc"), Some(Direction::Max)), named(Some("size"), None)];
        run.evaluations[0].values = vec![0.9, 3.0];
        run.evaluations[1].values = vec![0.8, f64::NAN]; // no size: not imported
        let ours = [Objective::min("size"), Objective::max("acc")];
        let imported = import(&space, &run, &ours, "old", 0).unwrap();
        assert_eq!((imported.individuals.len(), imported.failed), (1, 1));
        assert_eq!((imported.individuals[0].objectives.clone(), imported.individuals[0].loss), (vec![3.0, 0.9], 3.0));
        let imported = import(&space, &run, &[Objective::max("acc")], "old", 0).unwrap();
        assert_eq!(imported.individuals.iter().map(|i| i.loss).collect::<Vec<_>>(), [-0.9, -0.8]);
        let e = import(&space, &run, &[Objective::min("acc")], "old", 0).unwrap_err().to_string();
        assert!(e.contains("objective 'acc' is minimized here but maximized in the earlier run"), "{e}");
        let e = import(&space, &run, &[Objective::min("f1")], "old", 0).unwrap_err().to_string();
        assert!(e.contains("objective 'f1' is not in the earlier run (its objectives: acc, size)"), "{e}");
        // An Optuna study without metric names: by position.
        run.objectives = vec![named(None, Some(Direction::Max)), named(None, Some(Direction::Min))];
        let imported = import(&space, &run, &[Objective::max("a"), Objective::min("b")], "old", 0).unwrap();
        assert_eq!(imported.individuals[0].objectives, [0.9, 3.0]);
        // A run of one loss: only `loss` minimized is in it.
        let plain = earlier(&[("x", None)], vec![(json!({"x": 0.5}), 2.0)]);
        let imported = import(&space, &plain, &[Objective::min("loss")], "old", 0).unwrap();
        assert_eq!((imported.individuals[0].objectives.clone(), imported.individuals[0].loss), (vec![2.0], 2.0));
        let e = import(&space, &plain, &[Objective::max("acc")], "old", 0).unwrap_err().to_string();
        assert!(e.contains("objective 'acc' is not in the earlier run (it has one loss)"), "{e}");
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
            let e = import(&space, &run, &[], "old/ck", 0).unwrap_err().to_string();
            assert!(e.contains("--warm-start old/ck: ") && e.contains(expected), "{e}");
        }
    }
}
