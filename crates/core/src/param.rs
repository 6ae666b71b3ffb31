//! One parameter of a search space: its name, its domain and the conditions under which it is
//! active, and the values a point gives it. The space (`space.rs`) validates and samples them; the
//! conditions are resolved in `condition.rs`; both build on this file, which needs neither.

use serde::{Deserialize, Serialize};

/// One condition of a parameter: the categorical `param` has one of `values`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Condition {
    /// The categorical parameter the condition reads.
    pub param: String,
    /// The choices of it under which the conditioned parameter is active.
    pub values: Vec<String>,
}

/// The domain of one parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Domain {
    /// A real number in `[lo, hi]`; with `log`, sampled and mutated uniformly in `ln` space.
    Float {
        /// Lower bound (inclusive).
        lo: f64,
        /// Upper bound (inclusive).
        hi: f64,
        /// Sample on a logarithmic scale (needs `lo > 0`).
        #[serde(default)]
        log: bool,
    },
    /// An integer in `[lo, hi]`, both ends included.
    Int {
        /// Lower bound (inclusive).
        lo: i64,
        /// Upper bound (inclusive).
        hi: i64,
    },
    /// One of a list of strings.
    Categorical {
        /// The choices, in order.
        choices: Vec<String>,
    },
}

/// One named parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// The parameter's name, unique in its space.
    pub name: String,
    /// Its domain.
    #[serde(flatten)]
    pub domain: Domain,
    /// The conditions under which it is active (all must hold); empty: always active. Absent
    /// from spaces saved before conditions existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<Condition>,
}

impl Param {
    /// An unconditional parameter.
    pub fn new(name: impl Into<String>, domain: Domain) -> Self {
        Param { name: name.into(), domain, when: Vec::new() }
    }
}

/// The value of one parameter in an individual. Categoricals are stored as an index into the choices.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Value {
    /// A float parameter's value.
    Float(f64),
    /// An int parameter's value.
    Int(i64),
    /// The index of a categorical parameter's choice.
    Cat(u32),
}

impl Value {
    /// The value as a number: floats as they are, ints converted, categoricals as their index.
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Float(x) => x,
            Value::Int(i) => i as f64,
            Value::Cat(c) => c as f64,
        }
    }
}
