//! A search space written as TOML, for the CLI's `--space FILE` and for library users who keep
//! their space beside their training program:
//!
//! ```toml
//! [params]
//! lr = { type = "float", low = 1e-4, high = 1e-2, log = true }
//! layers = { type = "int", low = 2, high = 10 }
//! activation = { type = "categorical", choices = ["relu", "sigmoid", "tanh"] }
//! optimizer = { type = "categorical", choices = ["sgd", "adam"] }
//! momentum = { type = "float", low = 0.0, high = 0.99, when = { optimizer = "sgd" } }
//! ```
//!
//! `when` makes a parameter conditional ([`crate::condition`]): active only while the named
//! categorical has that choice (or one of a list of them); several keys must all hold.
//!
//! The parameters keep the file's order. The space is validated by [`SearchSpace::new`], the same
//! rules as the builder's; every error names the parameter and what is wrong with it, and keys the
//! format does not know are refused rather than ignored (a misspelt `log` would otherwise search a
//! learning rate linearly without a word).

use crate::condition::Condition;
use crate::error::{Error, Result};
use crate::space::{Domain, Param, SearchSpace};

impl SearchSpace {
    /// The space described by `text`, a TOML document with a `[params]` table (module docs).
    pub fn from_toml(text: &str) -> Result<SearchSpace> {
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            Error::InvalidSpace(format!("not valid TOML: {}", e.to_string().trim_end()))
        })?;
        if let Some(key) = doc.keys().find(|k| *k != "params") {
            return Err(Error::InvalidSpace(format!(
                "unknown top-level key '{key}'; a space file holds one table, [params]"
            )));
        }
        let params = match doc.get("params") {
            Some(toml::Value::Table(t)) => t,
            Some(_) => return Err(Error::InvalidSpace("'params' must be a table ([params])".into())),
            None => return Err(Error::InvalidSpace("no [params] table: the space has no parameters".into())),
        };
        let params = params.iter().map(|(name, spec)| param(name, spec)).collect::<Result<Vec<_>>>()?;
        SearchSpace::new(params)
    }

    /// The space in the file at `path` ([`SearchSpace::from_toml`]); errors name the file.
    pub fn from_toml_file(path: &std::path::Path) -> Result<SearchSpace> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::InvalidSpace(format!("cannot read the space file {}: {e}", path.display())))?;
        SearchSpace::from_toml_read_from(&text, path)
    }

    /// The space in `text`, read from the file at `path` by someone else (one rank reads it for
    /// all); errors name the file.
    pub fn from_toml_read_from(text: &str, path: &std::path::Path) -> Result<SearchSpace> {
        SearchSpace::from_toml(text).map_err(|e| match e {
            Error::InvalidSpace(m) => Error::InvalidSpace(format!("{}: {m}", path.display())),
            other => other,
        })
    }
}

/// One `name = { type = ..., ... }` entry.
fn param(name: &str, spec: &toml::Value) -> Result<Param> {
    let bad = |msg: String| Error::InvalidSpace(format!("parameter '{name}': {msg}"));
    let toml::Value::Table(spec) = spec else {
        return Err(bad("must be a table such as { type = \"float\", low = 0.0, high = 1.0 }".into()));
    };
    let kind = match spec.get("type") {
        Some(toml::Value::String(s)) => s.as_str(),
        Some(other) => return Err(bad(format!("'type' must be a string, got {other}"))),
        None => return Err(bad("no 'type' (float, int or categorical)".into())),
    };
    let allowed: &[&str] = match kind {
        "float" => &["type", "low", "high", "log", "when"],
        "int" => &["type", "low", "high", "when"],
        "categorical" => &["type", "choices", "when"],
        _ => return Err(bad(format!("unknown type '{kind}'; valid: float, int, categorical"))),
    };
    if let Some(key) = spec.keys().find(|k| !allowed.contains(&k.as_str())) {
        let article = if kind == "int" { "an" } else { "a" };
        return Err(bad(format!("unknown key '{key}' for {article} {kind} parameter; valid: {}", allowed.join(", "))));
    }
    let required = |key: &str| spec.get(key).ok_or_else(|| bad(format!("no '{key}'")));
    let domain = match kind {
        "float" => {
            let number = |key: &str| match required(key)? {
                toml::Value::Float(x) => Ok(*x),
                toml::Value::Integer(i) => Ok(*i as f64),
                other => Err(bad(format!("'{key}' must be a number, got {other}"))),
            };
            let log = match spec.get("log") {
                None => false,
                Some(toml::Value::Boolean(b)) => *b,
                Some(other) => return Err(bad(format!("'log' must be true or false, got {other}"))),
            };
            Domain::Float { lo: number("low")?, hi: number("high")?, log }
        }
        "int" => {
            let integer = |key: &str| match required(key)? {
                toml::Value::Integer(i) => Ok(*i),
                other => Err(bad(format!("'{key}' must be an integer, got {other}"))),
            };
            Domain::Int { lo: integer("low")?, hi: integer("high")? }
        }
        _ => {
            let toml::Value::Array(items) = required("choices")? else {
                return Err(bad("'choices' must be a list of strings".into()));
            };
            let choices = items
                .iter()
                .map(|c| match c {
                    toml::Value::String(s) => Ok(s.clone()),
                    other => Err(bad(format!("every choice must be a string, got {other}"))),
                })
                .collect::<Result<Vec<_>>>()?;
            Domain::Categorical { choices }
        }
    };
    let when = match spec.get("when") {
        None => Vec::new(),
        Some(when) => conditions(when).map_err(bad)?,
    };
    Ok(Param { name: name.to_string(), domain, when })
}

/// A `when = { optimizer = "sgd" }` or `when = { optimizer = ["sgd", "adam"] }` table: one
/// condition per key, all of which must hold ([`crate::condition`]).
fn conditions(when: &toml::Value) -> std::result::Result<Vec<Condition>, String> {
    const FORM: &str = "such as { optimizer = \"sgd\" } or { optimizer = [\"sgd\", \"adam\"] }";
    let toml::Value::Table(table) = when else {
        return Err(format!("'when' must be a table {FORM}, got {when}"));
    };
    if table.is_empty() {
        return Err(format!("'when' names no condition; write one {FORM}, or leave 'when' out"));
    }
    table
        .iter()
        .map(|(param, choices)| {
            let values = match choices {
                toml::Value::String(s) => vec![s.clone()],
                toml::Value::Array(items) => items
                    .iter()
                    .map(|c| match c {
                        toml::Value::String(s) => Ok(s.clone()),
                        other => Err(format!("'when' on '{param}': every choice must be a string, got {other}")),
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()?,
                other => return Err(format!("'when' on '{param}' must be a choice or a list of choices, got {other}")),
            };
            Ok(Condition { param: param.clone(), values })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses_in_file_order() {
        let space = SearchSpace::from_toml(
            r#"
            [params]
            lr = { type = "float", low = 1e-4, high = 1e-2, log = true }
            layers = { type = "int", low = 2, high = 10 }
            activation = { type = "categorical", choices = ["relu", "sigmoid", "tanh"] }
            momentum = { type = "float", low = 0, high = 1 }
            "#,
        )
        .unwrap();
        let names: Vec<&str> = space.params().iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["lr", "layers", "activation", "momentum"]);
        assert_eq!(space.params()[0].domain, Domain::Float { lo: 1e-4, hi: 1e-2, log: true });
        assert_eq!(space.params()[1].domain, Domain::Int { lo: 2, hi: 10 });
        assert_eq!(space.params()[3].domain, Domain::Float { lo: 0.0, hi: 1.0, log: false });
        let same = SearchSpace::builder()
            .log_float("lr", 1e-4, 1e-2)
            .int("layers", 2, 10)
            .categorical("activation", &["relu", "sigmoid", "tanh"])
            .float("momentum", 0.0, 1.0)
            .build()
            .unwrap();
        assert_eq!(space, same);
    }

    #[test]
    fn errors_name_the_parameter_and_what_is_wrong() {
        let cases = [
            ("", "no [params]"),
            ("params = 3", "must be a table"),
            ("[params]\n", "no parameters"),
            ("[param]\nx = 1", "unknown top-level key 'param'"),
            ("[params]\nx = 1", "parameter 'x': must be a table"),
            ("[params]\nx = { low = 0, high = 1 }", "parameter 'x': no 'type'"),
            ("[params]\nx = { type = \"real\", low = 0, high = 1 }", "parameter 'x': unknown type 'real'"),
            ("[params]\nx = { type = \"float\", low = 0 }", "parameter 'x': no 'high'"),
            ("[params]\nx = { type = \"float\", low = 1, high = 0 }", "parameter 'x': lower bound 1 must be below"),
            ("[params]\nx = { type = \"float\", low = 0, high = 1, lgo = true }", "parameter 'x': unknown key 'lgo'"),
            ("[params]\nx = { type = \"float\", low = \"a\", high = 1 }", "parameter 'x': 'low' must be a number"),
            ("[params]\nx = { type = \"float\", low = 0, high = 1, log = 1 }", "'log' must be true or false"),
            ("[params]\nx = { type = \"float\", low = 0, high = 1, log = true }", "positive lower bound"),
            ("[params]\nn = { type = \"int\", low = 0.5, high = 3 }", "parameter 'n': 'low' must be an integer"),
            (
                "[params]\nn = { type = \"int\", low = 0, high = 3, log = true }",
                "unknown key 'log' for an int parameter",
            ),
            ("[params]\na = { type = \"categorical\", choices = [] }", "parameter 'a': a categorical parameter needs"),
            ("[params]\na = { type = \"categorical\", choices = [1] }", "every choice must be a string"),
            ("[params]\na = { type = \"categorical\", choices = \"relu\" }", "'choices' must be a list"),
            ("[params]\na = { type = \"categorical\", choices = [\"x\", \"x\"] }", "choice 'x' is listed twice"),
            ("[params\n", "not valid TOML"),
            (
                "[params]\nx = { type = \"float\", low = 0, high = 1, when = \"sgd\" }",
                "parameter 'x': 'when' must be a table",
            ),
            (
                "[params]\nx = { type = \"float\", low = 0, high = 1, when = {} }",
                "parameter 'x': 'when' names no condition",
            ),
            (
                "[params]\nx = { type = \"float\", low = 0, high = 1, when = { o = 1 } }",
                "'when' on 'o' must be a choice or a list",
            ),
            (
                "[params]\nx = { type = \"float\", low = 0, high = 1, when = { o = [1] } }",
                "'when' on 'o': every choice must be a string",
            ),
            (
                "[params]\nx = { type = \"float\", low = 0, high = 1, when = { o = \"a\" } }",
                "parameter 'x': its condition names 'o', which is not a parameter",
            ),
        ];
        for (text, expected) in cases {
            let e = SearchSpace::from_toml(text).unwrap_err().to_string();
            assert!(e.contains(expected), "{text:?}: expected {expected:?} in {e:?}");
        }
    }

    #[test]
    fn conditions_parse_as_the_builder_writes_them() {
        let space = SearchSpace::from_toml(
            r#"
            [params]
            optimizer = { type = "categorical", choices = ["sgd", "adam", "adadelta"] }
            momentum = { type = "float", low = 0.0, high = 0.99, when = { optimizer = "sgd" } }
            eps = { type = "float", low = 1e-9, high = 1e-6, log = true, when = { optimizer = ["adam", "adadelta"] } }
            "#,
        )
        .unwrap();
        let same = SearchSpace::builder()
            .categorical("optimizer", &["sgd", "adam", "adadelta"])
            .float("momentum", 0.0, 0.99)
            .when("optimizer", &["sgd"])
            .log_float("eps", 1e-9, 1e-6)
            .when("optimizer", &["adam", "adadelta"])
            .build()
            .unwrap();
        assert_eq!(space, same);
        // A space saved with its conditions (a checkpoint's manifest) reads back with them; one
        // saved before conditions existed has none.
        let json = serde_json::to_string(&space).unwrap();
        assert!(json.contains(r#""when":[{"param":"optimizer","values":["sgd"]}]"#), "{json}");
        assert_eq!(serde_json::from_str::<SearchSpace>(&json).unwrap(), space);
        let plain = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
        assert!(!serde_json::to_string(&plain).unwrap().contains("when"));
    }

    #[test]
    fn a_file_error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("space.toml");
        let e = SearchSpace::from_toml_file(&path).unwrap_err().to_string();
        assert!(e.contains("cannot read the space file") && e.contains("space.toml"), "{e}");
        std::fs::write(&path, "[params]\nx = { type = \"float\", low = 2, high = 1 }").unwrap();
        let e = SearchSpace::from_toml_file(&path).unwrap_err().to_string();
        assert!(e.contains("space.toml: ") && e.contains("parameter 'x'"), "{e}");
    }
}
