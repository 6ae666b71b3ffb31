//! The search space: named float, int and categorical parameters, their validation, sampling and
//! clipping. Every propagator goes through these functions, so every child respects bounds and types.

use std::collections::HashSet;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::condition::Activity;
use crate::error::{Error, Result};
pub use crate::param::{Condition, Domain, Param, Value};
use crate::rng::PropRng;

/// An ordered, validated set of named parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSpace {
    params: Vec<Param>,
}

impl SearchSpace {
    /// A validated space. Errors name the parameter and the problem.
    pub fn new(params: Vec<Param>) -> Result<Self> {
        let space = SearchSpace { params };
        space.validate()?;
        Ok(space)
    }

    /// Check the rules [`SearchSpace::new`] enforces again. A space deserialized from a file (a
    /// checkpoint's manifest) did not go through `new`, and sampling or clipping in a space with
    /// bad bounds would panic or produce garbage.
    pub fn validate(&self) -> Result<()> {
        if self.params.is_empty() {
            return Err(Error::InvalidSpace("the search space has no parameters".into()));
        }
        let mut seen = HashSet::new();
        for p in &self.params {
            if p.name.is_empty() {
                return Err(Error::InvalidSpace("a parameter has an empty name".into()));
            }
            if !seen.insert(p.name.as_str()) {
                return Err(Error::InvalidSpace(format!("parameter '{}' is defined twice", p.name)));
            }
            validate_domain(&p.name, &p.domain)?;
        }
        Activity::of(&self.params)?;
        Ok(())
    }

    /// The space's conditions resolved ([`crate::condition`]); `None` when every parameter is
    /// always active. A valid space's conditions always resolve.
    pub fn activity(&self) -> Option<Activity> {
        Activity::of(&self.params).ok().flatten()
    }

    /// True when some parameter is active only under a condition.
    pub fn is_conditional(&self) -> bool {
        self.params.iter().any(|p| !p.when.is_empty())
    }

    /// Whether each parameter is active at `values`: all true in a space without conditions.
    pub fn active(&self, values: &[Value]) -> Vec<bool> {
        match self.activity() {
            Some(activity) => activity.active(values),
            None => vec![true; self.params.len()],
        }
    }

    /// The active parameters at `values` with their positions and values, in order: what a
    /// trial and the outputs see of a point.
    pub fn active_values<'s>(&'s self, values: &'s [Value]) -> impl Iterator<Item = (usize, &'s Param, Value)> + 's {
        let active = self.active(values);
        self.params.iter().enumerate().zip(values).filter(move |((i, _), _)| active[*i]).map(|((i, p), v)| (i, p, *v))
    }

    /// Start an empty builder.
    pub fn builder() -> SpaceBuilder {
        SpaceBuilder::default()
    }

    /// The parameters in order.
    pub fn params(&self) -> &[Param] {
        &self.params
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// Always false: a valid space has at least one parameter.
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// Position of the parameter called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }

    /// True if at least one parameter is a float (the default propagator then adds Gaussian mutation).
    pub fn has_float(&self) -> bool {
        self.params.iter().any(|p| matches!(p.domain, Domain::Float { .. }))
    }

    /// A uniformly random value for parameter `i`.
    pub fn sample_param(&self, i: usize, rng: &mut PropRng) -> Value {
        match &self.params[i].domain {
            Domain::Float { lo, hi, log: false } => Value::Float(rng.random_range(*lo..=*hi)),
            Domain::Float { lo, hi, log: true } => {
                Value::Float(rng.random_range(lo.ln()..=hi.ln()).exp().clamp(*lo, *hi))
            }
            Domain::Int { lo, hi } => Value::Int(rng.random_range(*lo..=*hi)),
            Domain::Categorical { choices } => Value::Cat(rng.random_range(0..choices.len() as u32)),
        }
    }

    /// A uniformly random point of the space.
    pub fn sample(&self, rng: &mut PropRng) -> Vec<Value> {
        (0..self.params.len()).map(|i| self.sample_param(i, rng)).collect()
    }

    /// Parameter `i`'s value moved by Gaussian noise of `sigma_factor` times the range (in log space
    /// for log-scale floats) and clipped back into bounds. Non-float parameters are returned unchanged.
    pub fn perturb(&self, i: usize, v: Value, sigma_factor: f64, rng: &mut PropRng) -> Value {
        match (&self.params[i].domain, v) {
            (Domain::Float { lo, hi, log: false }, Value::Float(x)) => {
                let y = x + standard_normal(rng) * sigma_factor * (hi - lo);
                Value::Float(y.clamp(*lo, *hi))
            }
            (Domain::Float { lo, hi, log: true }, Value::Float(x)) => {
                let (a, b) = (lo.ln(), hi.ln());
                let y = x.max(*lo).ln() + standard_normal(rng) * sigma_factor * (b - a);
                Value::Float(y.clamp(a, b).exp().clamp(*lo, *hi))
            }
            _ => v,
        }
    }

    /// True if `values` has one value per parameter, of the right type and inside its bounds.
    pub fn contains(&self, values: &[Value]) -> bool {
        self.check_values(values).is_ok()
    }

    /// Like [`SearchSpace::contains`], with the reason when `values` do not fit: the parameter, the
    /// value and what it should be. Values read back from a file go through this before anything
    /// indexes a choice list with them. Allocates only to describe a failure.
    pub fn check_values(&self, values: &[Value]) -> Result<()> {
        let bad = |msg: String| Err(Error::OutsideSpace(msg));
        if values.len() != self.params.len() {
            return bad(format!(
                "{} values for the {} parameters of the search space",
                values.len(),
                self.params.len()
            ));
        }
        for (p, v) in self.params.iter().zip(values) {
            let name = &p.name;
            match (&p.domain, *v) {
                (Domain::Float { lo, hi, .. }, Value::Float(x)) => {
                    if !(*lo <= x && x <= *hi) {
                        return bad(format!("parameter '{name}' has {x}, outside its bounds [{lo}, {hi}]"));
                    }
                }
                (Domain::Int { lo, hi }, Value::Int(x)) => {
                    if !(*lo <= x && x <= *hi) {
                        return bad(format!("parameter '{name}' has {x}, outside its bounds [{lo}, {hi}]"));
                    }
                }
                (Domain::Categorical { choices }, Value::Cat(c)) => {
                    if c as usize >= choices.len() {
                        return bad(format!(
                            "parameter '{name}' has choice index {c}, but it has only {} choices",
                            choices.len()
                        ));
                    }
                }
                (domain, v) => {
                    let (expected, got) = (kind_of_domain(domain), kind_of_value(v));
                    return bad(format!("parameter '{name}' is {expected} but has {got} value {}", v.as_f64()));
                }
            }
        }
        Ok(())
    }

    /// A value rendered for humans and tables: floats and ints as numbers, categoricals as their choice.
    pub fn render(&self, i: usize, v: Value) -> String {
        match (&self.params[i].domain, v) {
            // An index past the choices (only in values that skipped `check_values`) shows as a number.
            (Domain::Categorical { choices }, Value::Cat(c)) if (c as usize) < choices.len() => {
                choices[c as usize].clone()
            }
            (_, Value::Float(x)) => format!("{x}"),
            (_, Value::Int(x)) => format!("{x}"),
            (_, Value::Cat(c)) => format!("{c}"),
        }
    }

    /// A value rendered briefly for tables: floats with 5 significant digits.
    pub fn render_short(&self, i: usize, v: Value) -> String {
        match v {
            Value::Float(x) if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e5) => format!("{x:.4e}"),
            Value::Float(x) => format!("{:.*}", 4usize.saturating_sub(x.abs().log10().max(0.0) as usize), x),
            _ => self.render(i, v),
        }
    }

    /// A value as JSON: numbers for floats and ints, the choice string for categoricals.
    pub fn to_json(&self, i: usize, v: Value) -> serde_json::Value {
        match (&self.params[i].domain, v) {
            (Domain::Categorical { choices }, Value::Cat(c)) if (c as usize) < choices.len() => {
                choices[c as usize].clone().into()
            }
            (_, Value::Float(x)) => x.into(),
            (_, Value::Int(x)) => x.into(),
            (_, Value::Cat(c)) => c.into(),
        }
    }
}

fn kind_of_domain(d: &Domain) -> &'static str {
    match d {
        Domain::Float { .. } => "a float",
        Domain::Int { .. } => "an int",
        Domain::Categorical { .. } => "a categorical",
    }
}

fn kind_of_value(v: Value) -> &'static str {
    match v {
        Value::Float(_) => "a float",
        Value::Int(_) => "an int",
        Value::Cat(_) => "a categorical",
    }
}

fn validate_domain(name: &str, d: &Domain) -> Result<()> {
    let bad = |msg: String| Err(Error::InvalidSpace(format!("parameter '{name}': {msg}")));
    match d {
        Domain::Float { lo, hi, log } => {
            if !lo.is_finite() || !hi.is_finite() {
                return bad(format!("bounds must be finite, got [{lo}, {hi}]"));
            }
            if lo >= hi {
                return bad(format!("lower bound {lo} must be below upper bound {hi}"));
            }
            // Breeding works on the range's width: one that overflows would make every child NaN.
            if !(hi - lo).is_finite() {
                return bad(format!("the range [{lo:e}, {hi:e}] is wider than a float holds; narrow it"));
            }
            if *log && *lo <= 0.0 {
                return bad(format!("a log-scale parameter needs a positive lower bound, got {lo}"));
            }
        }
        Domain::Int { lo, hi } => {
            if lo >= hi {
                return bad(format!("lower bound {lo} must be below upper bound {hi}"));
            }
        }
        Domain::Categorical { choices } => {
            if choices.is_empty() {
                return bad("a categorical parameter needs at least one choice".into());
            }
            let mut seen = HashSet::new();
            if let Some(dup) = choices.iter().find(|c| !seen.insert(c.as_str())) {
                return bad(format!("choice '{dup}' is listed twice"));
            }
        }
    }
    Ok(())
}

/// A standard normal sample (Box-Muller), so that no extra distribution crate is needed.
pub(crate) fn standard_normal(rng: &mut PropRng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1], keeps ln finite
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Builds a [`SearchSpace`] parameter by parameter; `build` validates.
#[derive(Debug, Default, Clone)]
pub struct SpaceBuilder {
    params: Vec<Param>,
}

impl SpaceBuilder {
    /// A float in `[lo, hi]`.
    pub fn float(mut self, name: &str, lo: f64, hi: f64) -> Self {
        self.params.push(Param::new(name, Domain::Float { lo, hi, log: false }));
        self
    }
    /// A float in `[lo, hi]` sampled on a log scale.
    pub fn log_float(mut self, name: &str, lo: f64, hi: f64) -> Self {
        self.params.push(Param::new(name, Domain::Float { lo, hi, log: true }));
        self
    }
    /// An int in `[lo, hi]`, both included.
    pub fn int(mut self, name: &str, lo: i64, hi: i64) -> Self {
        self.params.push(Param::new(name, Domain::Int { lo, hi }));
        self
    }
    /// A categorical parameter.
    pub fn categorical(mut self, name: &str, choices: &[&str]) -> Self {
        let choices = choices.iter().map(|c| c.to_string()).collect();
        self.params.push(Param::new(name, Domain::Categorical { choices }));
        self
    }
    /// Make the parameter added last active only while the categorical `param` has one of
    /// `values` (call again for more conditions, which must all hold); checked by `build`.
    pub fn when(mut self, param: &str, values: &[&str]) -> Self {
        if let Some(last) = self.params.last_mut() {
            last.when.push(Condition { param: param.into(), values: values.iter().map(|v| v.to_string()).collect() });
        }
        self
    }
    /// Validate and build.
    pub fn build(self) -> Result<SearchSpace> {
        SearchSpace::new(self.params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::worker_rng;

    #[test]
    fn invalid_spaces_name_the_parameter() {
        let e = SearchSpace::builder().build().unwrap_err().to_string();
        assert!(e.contains("no parameters"), "{e}");
        let e = SearchSpace::builder().float("lr", 1.0, 1.0).build().unwrap_err().to_string();
        assert!(e.contains("'lr'") && e.contains("below"), "{e}");
        let e = SearchSpace::builder().float("x", f64::NAN, 1.0).build().unwrap_err().to_string();
        assert!(e.contains("'x'") && e.contains("finite"), "{e}");
        let e = SearchSpace::builder().int("n", 3, 2).build().unwrap_err().to_string();
        assert!(e.contains("'n'"), "{e}");
        let e = SearchSpace::builder().categorical("act", &[]).build().unwrap_err().to_string();
        assert!(e.contains("'act'") && e.contains("choice"), "{e}");
        let e = SearchSpace::builder().int("a", 0, 1).float("a", 0.0, 1.0).build().unwrap_err();
        assert!(e.to_string().contains("'a' is defined twice"), "{e}");
        let e = SearchSpace::builder().log_float("lr", 0.0, 1.0).build().unwrap_err();
        assert!(e.to_string().contains("positive"), "{e}");
        let e = SearchSpace::builder().float("w", -1e308, 1e308).build().unwrap_err();
        assert!(e.to_string().contains("'w': the range [-1e308, 1e308] is wider than a float holds"), "{e}");
    }

    #[test]
    fn a_deserialized_space_is_validated_on_request() {
        let bad: SearchSpace =
            serde_json::from_str(r#"{"params":[{"name":"x","type":"float","lo":1.0,"hi":0.0}]}"#).unwrap();
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("'x'") && e.contains("below"), "{e}");
        let empty: SearchSpace = serde_json::from_str(r#"{"params":[]}"#).unwrap();
        assert!(empty.validate().unwrap_err().to_string().contains("no parameters"));
        let dup: SearchSpace = serde_json::from_str(
            r#"{"params":[{"name":"a","type":"int","lo":0,"hi":1},{"name":"a","type":"categorical","choices":["u"]}]}"#,
        )
        .unwrap();
        assert!(dup.validate().unwrap_err().to_string().contains("'a' is defined twice"));
        let no_choice: SearchSpace =
            serde_json::from_str(r#"{"params":[{"name":"act","type":"categorical","choices":[]}]}"#).unwrap();
        assert!(no_choice.validate().unwrap_err().to_string().contains("'act'"));
    }

    #[test]
    fn check_values_names_the_parameter_and_the_problem() {
        let s = SearchSpace::builder()
            .float("x", -1.0, 1.0)
            .int("n", 2, 4)
            .categorical("act", &["relu", "tanh"])
            .build()
            .unwrap();
        let ok = [Value::Float(1.0), Value::Int(2), Value::Cat(1)];
        assert!(s.check_values(&ok).is_ok() && s.contains(&ok));
        let cases: [(&[Value], &[&str]); 7] = [
            (&ok[..2], &["2 values", "3 parameters"]),
            (&[Value::Float(1.5), Value::Int(2), Value::Cat(0)], &["'x'", "1.5", "[-1, 1]"]),
            (&[Value::Float(f64::NAN), Value::Int(2), Value::Cat(0)], &["'x'", "NaN"]),
            (&[Value::Float(0.0), Value::Int(5), Value::Cat(0)], &["'n'", "5", "[2, 4]"]),
            (&[Value::Float(0.0), Value::Int(3), Value::Cat(2)], &["'act'", "index 2", "2 choices"]),
            (&[Value::Int(0), Value::Int(3), Value::Cat(0)], &["'x'", "is a float", "an int value"]),
            (&[Value::Float(0.0), Value::Int(3), Value::Float(0.0)], &["'act'", "categorical", "a float value"]),
        ];
        for (values, expected) in cases {
            let e = s.check_values(values).unwrap_err().to_string();
            assert!(!s.contains(values));
            for part in expected {
                assert!(e.contains(part), "'{part}' missing in: {e}");
            }
        }
        // Rendering a value that skipped the check shows the bad index instead of panicking.
        assert_eq!(s.render(2, Value::Cat(7)), "7");
        assert_eq!(s.to_json(2, Value::Cat(7)), serde_json::json!(7));
    }

    #[test]
    fn samples_respect_bounds_and_int_bounds_are_inclusive() {
        let s = SearchSpace::builder()
            .float("x", -1.0, 1.0)
            .log_float("lr", 1e-5, 1e-1)
            .int("n", 2, 4)
            .categorical("act", &["relu", "tanh"])
            .build()
            .unwrap();
        let mut rng = worker_rng(1, 0);
        let mut seen_ints = HashSet::new();
        for _ in 0..2000 {
            let v = s.sample(&mut rng);
            assert!(s.contains(&v));
            if let Value::Int(n) = v[2] {
                seen_ints.insert(n);
            }
        }
        assert_eq!(seen_ints, HashSet::from([2, 3, 4]));
    }

    #[test]
    fn log_scale_sampling_covers_decades_evenly() {
        let s = SearchSpace::builder().log_float("lr", 1e-6, 1.0).build().unwrap();
        let mut rng = worker_rng(7, 0);
        let below_1e3 = (0..6000).filter(|_| s.sample(&mut rng)[0].as_f64() < 1e-3).count();
        // Half of the six decades lie below 1e-3; a linear sampler would put ~0.1% there.
        assert!((2500..3500).contains(&below_1e3), "{below_1e3}");
    }
}
