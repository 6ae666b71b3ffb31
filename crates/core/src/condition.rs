//! Conditional parameters: a parameter that is active only while a categorical parameter has one
//! of given choices (`momentum` only for `optimizer = "sgd"`), as a space file writes it with
//! `when = { optimizer = "sgd" }`. Conditions may nest (the categorical may itself be
//! conditional); several conditions on one parameter must all hold.
//!
//! Every individual still carries a value for every parameter: an inactive one keeps a dormant
//! value (sampled, bred, journaled like any other) that no trial, output or model sees. The
//! genetic propagators and random search need nothing more; TPE models each group of parameters
//! that are active together from the evaluations where they were (Optuna's `group` decomposition),
//! and the GP fits a process per such group (propagator/bayesian/gp/groups.rs), whose kernel
//! compares a parameter only where it is active in both points.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
pub use crate::param::Condition;
use crate::param::{Domain, Param, Value};

/// One parameter's conditions resolved: per categorical it reads, its position and, per choice
/// of it, whether that choice makes the parameter active.
type Resolved = Vec<(usize, Vec<bool>)>;

/// The conditions of a space resolved to positions: which parameters are active at a point.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    /// Per parameter, its conditions.
    conditions: Vec<Resolved>,
    /// The positions in an order where every categorical comes before what depends on it.
    order: Vec<usize>,
}

impl Activity {
    /// The conditions of `params`, checked: each names another parameter of the space that is
    /// categorical, each value is one of its choices, and no parameter depends on itself through
    /// others. `None` when no parameter has a condition. Errors name the parameter.
    pub fn of(params: &[Param]) -> Result<Option<Activity>> {
        if params.iter().all(|p| p.when.is_empty()) {
            return Ok(None);
        }
        let position: BTreeMap<&str, usize> = params.iter().enumerate().map(|(i, p)| (p.name.as_str(), i)).collect();
        let mut conditions = Vec::with_capacity(params.len());
        for p in params {
            let bad = |msg: String| Error::InvalidSpace(format!("parameter '{}': {msg}", p.name));
            let mut resolved = Vec::with_capacity(p.when.len());
            for c in &p.when {
                let Some(&at) = position.get(c.param.as_str()) else {
                    return Err(bad(format!(
                        "its condition names '{}', which is not a parameter of the space",
                        c.param
                    )));
                };
                if c.param == p.name {
                    return Err(bad("its condition names the parameter itself".into()));
                }
                let Domain::Categorical { choices } = &params[at].domain else {
                    return Err(bad(format!(
                        "its condition names '{}', which is not categorical (conditions read a categorical's choice)",
                        c.param
                    )));
                };
                if c.values.is_empty() {
                    return Err(bad(format!("its condition on '{}' lists no choice", c.param)));
                }
                let mut allowed = vec![false; choices.len()];
                for v in &c.values {
                    let Some(k) = choices.iter().position(|choice| choice == v) else {
                        return Err(bad(format!(
                            "its condition on '{}' names '{v}', which is not one of its choices ({})",
                            c.param,
                            choices.join(", ")
                        )));
                    };
                    allowed[k] = true;
                }
                resolved.push((at, allowed));
            }
            conditions.push(resolved);
        }
        let order = dependency_order(params, &conditions)?;
        Ok(Some(Activity { conditions, order }))
    }

    /// Whether each parameter is active, given each categorical's choice (`choice(i)` for the
    /// categorical at position `i`).
    pub fn active_by(&self, choice: impl Fn(usize) -> usize) -> Vec<bool> {
        let mut active = vec![true; self.conditions.len()];
        for &i in &self.order {
            active[i] =
                self.conditions[i].iter().all(|(at, allowed)| active[*at] && allowed.get(choice(*at)) == Some(&true));
        }
        active
    }

    /// Whether each parameter is active at `values` (a categorical's value is its choice's index).
    pub fn active(&self, values: &[Value]) -> Vec<bool> {
        self.active_by(|i| match values[i] {
            Value::Cat(c) => c as usize,
            other => other.as_f64().max(0.0) as usize,
        })
    }

    /// The categoricals some condition reads: their choices decide which parameters are active.
    pub fn switches(&self) -> Vec<usize> {
        let mut at: Vec<usize> = self.conditions.iter().flatten().map(|(at, _)| *at).collect();
        at.sort_unstable();
        at.dedup();
        at
    }

    /// The parameters in groups that are active together, by their conditions: the unconditional
    /// ones first, then each set of conditions in the order its first parameter comes.
    pub fn groups(&self) -> Vec<Vec<usize>> {
        static NONE: Resolved = Vec::new();
        let mut groups: Vec<(&Resolved, Vec<usize>)> = vec![(&NONE, Vec::new())];
        for (i, c) in self.conditions.iter().enumerate() {
            match groups.iter_mut().find(|(key, _)| *key == c) {
                Some((_, members)) => members.push(i),
                None => groups.push((c, vec![i])),
            }
        }
        groups.into_iter().map(|(_, members)| members).filter(|m| !m.is_empty()).collect()
    }
}

/// The parameters ordered so that each comes after every categorical its conditions read; an
/// error naming the parameters of a cycle where there is one.
fn dependency_order(params: &[Param], conditions: &[Resolved]) -> Result<Vec<usize>> {
    // 0: not visited, 1: on the current path, 2: placed.
    let mut state = vec![0u8; params.len()];
    let mut order = Vec::with_capacity(params.len());
    fn visit(
        i: usize,
        conditions: &[Resolved],
        state: &mut [u8],
        order: &mut Vec<usize>,
        path: &mut Vec<usize>,
    ) -> std::result::Result<(), Vec<usize>> {
        match state[i] {
            2 => return Ok(()),
            1 => {
                let start = path.iter().position(|&p| p == i).unwrap_or(0);
                let mut cycle = path[start..].to_vec();
                cycle.push(i);
                return Err(cycle);
            }
            _ => {}
        }
        state[i] = 1;
        path.push(i);
        for (at, _) in &conditions[i] {
            visit(*at, conditions, state, order, path)?;
        }
        path.pop();
        state[i] = 2;
        order.push(i);
        Ok(())
    }
    for i in 0..params.len() {
        visit(i, conditions, &mut state, &mut order, &mut Vec::new()).map_err(|cycle| {
            let names: Vec<&str> = cycle.iter().map(|&k| params[k].name.as_str()).collect();
            Error::InvalidSpace(format!(
                "parameter '{}': its conditions form a cycle ({}); a condition must name a parameter that does not depend on it",
                names[0],
                names.join(" -> ")
            ))
        })?;
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use crate::space::{SearchSpace, Value};

    fn space() -> SearchSpace {
        SearchSpace::builder()
            .categorical("optimizer", &["sgd", "adam", "adadelta"])
            .float("lr", 1e-4, 1.0)
            .float("momentum", 0.0, 0.99)
            .when("optimizer", &["sgd"])
            .categorical("betas", &["default", "custom"])
            .when("optimizer", &["adam"])
            .float("beta2", 0.9, 0.9999)
            .when("betas", &["custom"])
            .float("eps", 1e-9, 1e-6)
            .when("optimizer", &["adam", "adadelta"])
            .build()
            .unwrap()
    }

    #[test]
    fn nested_conditions_decide_what_is_active() {
        let s = space();
        let at = |opt: u32, betas: u32| {
            let v = [
                Value::Cat(opt),
                Value::Float(0.1),
                Value::Float(0.5),
                Value::Cat(betas),
                Value::Float(0.95),
                Value::Float(1e-8),
            ];
            s.active(&v)
        };
        assert_eq!(at(0, 1), [true, true, true, false, false, false], "sgd: momentum; betas and beta2 dormant");
        assert_eq!(at(1, 1), [true, true, false, true, true, true], "adam with custom betas");
        assert_eq!(at(1, 0), [true, true, false, true, false, true], "adam with default betas");
        assert_eq!(at(2, 1), [true, true, false, false, false, true], "beta2 needs betas active");
        let groups = s.activity().unwrap().groups();
        assert_eq!(groups, vec![vec![0, 1], vec![2], vec![3], vec![4], vec![5]]);
        assert!(SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap().activity().is_none());
    }

    #[test]
    fn bad_conditions_are_refused_naming_the_parameter() {
        let base = || SearchSpace::builder().categorical("opt", &["sgd", "adam"]).float("lr", 0.0, 1.0);
        let cases = [
            (
                base().float("m", 0.0, 1.0).when("optimizer", &["sgd"]),
                "parameter 'm': its condition names 'optimizer', which is not a parameter",
            ),
            (
                base().float("m", 0.0, 1.0).when("lr", &["1"]),
                "parameter 'm': its condition names 'lr', which is not categorical",
            ),
            (
                base().float("m", 0.0, 1.0).when("opt", &["rmsprop"]),
                "names 'rmsprop', which is not one of its choices (sgd, adam)",
            ),
            (base().float("m", 0.0, 1.0).when("opt", &[]), "lists no choice"),
            (base().categorical("c", &["x"]).when("c", &["x"]), "'c': its condition names the parameter itself"),
            (
                SearchSpace::builder()
                    .categorical("a", &["x", "y"])
                    .when("b", &["x"])
                    .categorical("b", &["x", "y"])
                    .when("a", &["y"]),
                "parameter 'a': its conditions form a cycle (a -> b -> a)",
            ),
        ];
        for (builder, expected) in cases {
            let e = builder.build().unwrap_err().to_string();
            assert!(e.contains(expected), "expected {expected:?} in {e:?}");
        }
    }
}
