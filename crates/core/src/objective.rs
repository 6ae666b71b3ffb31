//! Declared objectives: what a run optimizes when it optimizes several things at once, each by
//! name and direction (validation loss down, accuracy up, training seconds down). A run that
//! declares none has one objective, its loss, minimized: today's runs, and their checkpoints.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Whether an objective is to be minimized or maximized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Lower is better.
    Min,
    /// Higher is better.
    Max,
}

impl Direction {
    /// `min` or `max`, as flags and the checkpoint write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Min => "min",
            Direction::Max => "max",
        }
    }
}

/// One objective: its name (a column of `front.csv`, a key of a command's result) and direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Objective {
    /// The name, as the evaluation reports it.
    pub name: String,
    /// Minimized or maximized.
    pub direction: Direction,
}

impl Objective {
    /// A minimized objective called `name`.
    pub fn min(name: &str) -> Objective {
        Objective { name: name.into(), direction: Direction::Min }
    }

    /// A maximized objective called `name`.
    pub fn max(name: &str) -> Objective {
        Objective { name: name.into(), direction: Direction::Max }
    }

    /// The factor that turns a reported value into one to minimize: 1, or -1 for a maximized one.
    pub fn sign(&self) -> f64 {
        match self.direction {
            Direction::Min => 1.0,
            Direction::Max => -1.0,
        }
    }

    /// A list as flags write it, `name:min,name:max` (a name without a direction is minimized),
    /// checked with [`check_objectives`].
    pub fn parse_list(text: &str) -> Result<Vec<Objective>> {
        let list = text
            .split(',')
            .map(|item| {
                let item = item.trim();
                let (name, direction) = match item.rsplit_once(':') {
                    Some((name, "min")) => (name, Direction::Min),
                    Some((name, "max")) => (name, Direction::Max),
                    Some((_, other)) => {
                        return Err(Error::InvalidConfig(format!(
                            "objective '{item}': the direction '{other}' is neither min nor max \
                             (write NAME:min or NAME:max)"
                        )));
                    }
                    None => (item, Direction::Min),
                };
                Ok(Objective { name: name.trim().to_string(), direction })
            })
            .collect::<Result<Vec<_>>>()?;
        check_objectives(&list)?;
        Ok(list)
    }
}

/// `name:min` or `name:max`, as `--objectives` takes it.
impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.name, self.direction.as_str())
    }
}

/// The most objectives a run may declare: Pareto fronts of more than a few objectives hold
/// almost every point, and the exact hypervolume grows exponentially with them.
pub const MAX_OBJECTIVES: usize = 6;

/// Names must be non-empty and distinct, and there may be at most [`MAX_OBJECTIVES`].
pub fn check_objectives(list: &[Objective]) -> Result<()> {
    if list.len() > MAX_OBJECTIVES {
        return Err(Error::InvalidConfig(format!(
            "{} objectives declared; at most {MAX_OBJECTIVES} are supported",
            list.len()
        )));
    }
    for (k, o) in list.iter().enumerate() {
        if o.name.is_empty() || o.name.contains(['\n', '\r']) {
            return Err(Error::InvalidConfig(format!("objective {}: the name is empty or holds a line break", k + 1)));
        }
        if list[..k].iter().any(|p| p.name == o.name) {
            return Err(Error::InvalidConfig(format!("objective '{}' is declared twice", o.name)));
        }
    }
    Ok(())
}

/// The minimizing factors of `list` ([`Objective::sign`]), in order.
pub fn signs(list: &[Objective]) -> Vec<f64> {
    list.iter().map(Objective::sign).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_with_directions_and_bad_ones_say_why() {
        let l = Objective::parse_list("val_loss:min, accuracy:max,seconds").unwrap();
        assert_eq!(l, vec![Objective::min("val_loss"), Objective::max("accuracy"), Objective::min("seconds")]);
        assert_eq!(signs(&l), vec![1.0, -1.0, 1.0]);
        let e = Objective::parse_list("a:up").unwrap_err().to_string();
        assert!(e.contains("'up' is neither min nor max"), "{e}");
        let e = Objective::parse_list("a,b:max,a:max").unwrap_err().to_string();
        assert!(e.contains("'a' is declared twice"), "{e}");
        let e = Objective::parse_list("a,,b").unwrap_err().to_string();
        assert!(e.contains("objective 2: the name is empty"), "{e}");
        let e = Objective::parse_list("a,b,c,d,e,f,g").unwrap_err().to_string();
        assert!(e.contains("at most 6"), "{e}");
        assert_eq!(
            l.iter().map(|o| o.to_string()).collect::<Vec<_>>().join(","),
            "val_loss:min,accuracy:max,seconds:min"
        );
        let json = serde_json::to_string(&Objective::max("acc")).unwrap();
        assert_eq!(json, r#"{"name":"acc","direction":"max"}"#);
    }
}
