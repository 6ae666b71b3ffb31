//! Configurations known in advance (`--enqueue FILE`, `Optimizer::enqueue`, Python's
//! `enqueue=`): points a researcher wants evaluated first, given by parameter name. They are
//! read from a CSV file with a header of parameter names or from JSON lines of objects, kept by
//! name (as the checkpoint records them), and turned into values of the search space once, with
//! every problem named: the configuration (its line), the parameter and what is wrong.

use serde_json::{Map, Value as Json};

use crate::error::{Error, Result};
use crate::space::{Domain, SearchSpace, Value};

/// One configuration by parameter name: numbers, or a categorical's choice as a string.
pub type Configuration = Map<String, Json>;

/// The configurations in `text`: JSON lines of objects when its first character that is not
/// blank is `{`, a JSON array of objects when it is `[`, else CSV whose first row names the
/// parameters (quoted fields read as CSV writers mean them). `source` names the text in errors (a
/// file's path).
pub fn parse(text: &str, source: &str) -> Result<Vec<Configuration>> {
    let object = |json: Json, line: usize| match json {
        Json::Object(object) => Ok(object),
        _ => Err(bad(source, line, "is not a JSON object of parameter names to values")),
    };
    let configurations: Vec<Configuration> = match text.trim_start().chars().next() {
        None => return Err(bad(source, 0, "holds no configuration")),
        Some('{') => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(no, line)| match serde_json::from_str::<Json>(line) {
                Ok(json) => object(json, no + 1),
                Err(e) => Err(bad(source, no + 1, &format!("is not JSON: {e}"))),
            })
            .collect::<Result<_>>()?,
        Some('[') => match serde_json::from_str::<Json>(text) {
            Ok(Json::Array(items)) => items.into_iter().map(|item| object(item, 0)).collect::<Result<_>>()?,
            Ok(_) => return Err(bad(source, 0, "is not a JSON array of objects")),
            Err(e) => return Err(bad(source, 0, &format!("is not JSON: {e}"))),
        },
        Some(_) => csv_configurations(text, source)?,
    };
    if configurations.is_empty() {
        return Err(bad(source, 0, "holds no configuration"));
    }
    Ok(configurations)
}

/// CSV: a header of parameter names (each once), then one configuration per row.
fn csv_configurations(text: &str, source: &str) -> Result<Vec<Configuration>> {
    let rows = crate::csv_rows::rows(text).map_err(|e| bad(source, 0, &format!("is not CSV: {e}")))?;
    let Some((header, rows)) = rows.split_first() else {
        return Err(bad(source, 0, "holds no configuration"));
    };
    let names = &header.fields;
    if let Some(empty) = names.iter().position(String::is_empty) {
        return Err(bad(source, header.line, &format!("(the header) has an empty name in column {}", empty + 1)));
    }
    if let Some(twice) = names.iter().enumerate().find_map(|(k, n)| names[..k].contains(n).then_some(n)) {
        return Err(bad(source, header.line, &format!("(the header) names '{twice}' twice")));
    }
    if rows.is_empty() {
        return Err(bad(source, 0, "holds no configuration (a header and no line under it)"));
    }
    rows.iter()
        .map(|row| {
            if row.fields.len() != names.len() {
                let m = format!("has {} fields for the header's {} names", row.fields.len(), names.len());
                return Err(bad(source, row.line, &m));
            }
            Ok(names.iter().zip(&row.fields).map(|(name, field)| (name.clone(), csv_value(field))).collect())
        })
        .collect()
}

/// A CSV field as JSON: a number where it reads as one (an integer where it is one), else the
/// text (a categorical's choice).
pub fn csv_value(field: &str) -> Json {
    if let Ok(n) = field.parse::<i64>() {
        return Json::from(n);
    }
    match field.parse::<f64>() {
        Ok(x) if x.is_finite() => Json::from(x),
        _ => Json::from(field),
    }
}

fn bad(source: &str, line: usize, what: &str) -> Error {
    let at = if line == 0 { String::new() } else { format!(", line {line},") };
    Error::InvalidConfig(format!("configurations to enqueue: {source}{at} {what}"))
}

/// The values of `configuration` in `space`, or an error naming the parameter: every parameter
/// of the space given, no other name, each value of its parameter's kind and inside its bounds.
/// A conditional parameter that is inactive in the configuration may be left out (or left empty,
/// or null): it takes a dormant value, the middle of its range, which nothing sees.
pub fn values(space: &SearchSpace, configuration: &Configuration) -> Result<Vec<Value>> {
    values_or_missing(space, configuration).map_err(|e| match e {
        Unusable::Missing(m) | Unusable::Invalid(m) => Error::InvalidConfig(m),
    })
}

/// Why a configuration gives no values of a space.
#[derive(Debug)]
pub(crate) enum Unusable {
    /// A parameter active in the space has no value (its message).
    Missing(String),
    /// An unknown name, a value of another kind or outside its bounds (its message).
    Invalid(String),
}

/// [`values`], telling a missing value apart from a wrong one.
pub(crate) fn values_or_missing(
    space: &SearchSpace,
    configuration: &Configuration,
) -> std::result::Result<Vec<Value>, Unusable> {
    let bad = Unusable::Invalid;
    if let Some(unknown) = configuration.keys().find(|k| space.index_of(k).is_none()) {
        let names: Vec<&str> = space.params().iter().map(|p| p.name.as_str()).collect();
        return Err(bad(format!("no parameter '{unknown}' in the search space (it has {})", names.join(", "))));
    }
    let given = space
        .params()
        .iter()
        .map(|p| {
            let name = &p.name;
            let given = match configuration.get(name) {
                None | Some(Json::Null) => return Ok(None),
                Some(Json::String(s)) if s.is_empty() => return Ok(None),
                Some(given) => given,
            };
            match (&p.domain, given) {
                (Domain::Float { .. }, Json::Number(n)) => Ok(Value::Float(n.as_f64().unwrap_or(f64::NAN))),
                // 4.0 is 4: pandas writes an integer column with an empty cell (an inactive
                // conditional parameter) as floats.
                (Domain::Int { .. }, Json::Number(n)) => match n.as_i64().or_else(|| integral(n.as_f64()?)) {
                    Some(k) => Ok(Value::Int(k)),
                    None => Err(bad(format!("parameter '{name}' is an integer, not {n}"))),
                },
                (Domain::Categorical { choices }, Json::String(s)) => match choices.iter().position(|c| c == s) {
                    Some(k) => Ok(Value::Cat(k as u32)),
                    None => {
                        Err(bad(format!("parameter '{name}' has no choice '{s}' (choices: {})", choices.join(", "))))
                    }
                },
                // A choice that reads as a number ("32", "1e-3") arrives from a CSV cell as one:
                // the choice written alike, else the one of that value.
                (Domain::Categorical { choices }, Json::Number(n))
                    if let Some(k) = choices
                        .iter()
                        .position(|c| *c == n.to_string())
                        .or_else(|| choices.iter().position(|c| c.trim().parse::<f64>().ok() == n.as_f64())) =>
                {
                    Ok(Value::Cat(k as u32))
                }
                (Domain::Categorical { .. }, other) => {
                    Err(bad(format!("parameter '{name}' is categorical: give one of its choices, not {other}")))
                }
                (_, other) => Err(bad(format!("parameter '{name}' is a number, not {other}"))),
            }
            .map(Some)
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let values: Vec<Value> =
        given.iter().zip(space.params()).map(|(v, p)| v.unwrap_or_else(|| middle(&p.domain))).collect();
    let active = space.active(&values);
    if let Some(missing) = (0..values.len()).find(|&i| given[i].is_none() && active[i]) {
        let name = &space.params()[missing].name;
        let why = if space.params()[missing].when.is_empty() { "" } else { " (its condition holds)" };
        return Err(Unusable::Missing(format!("parameter '{name}' is not given{why}")));
    }
    space.check_values(&values).map_err(|e| match e {
        Error::OutsideSpace(m) => bad(m),
        other => bad(other.to_string()),
    })?;
    Ok(values)
}

/// `x` as an integer where it is one, exactly (within f64's integers).
fn integral(x: f64) -> Option<i64> {
    (x.fract() == 0.0 && x.abs() < 2f64.powi(53)).then_some(x as i64)
}

/// The middle of a domain: the dormant value of an inactive parameter left out.
fn middle(domain: &Domain) -> Value {
    match domain {
        Domain::Float { lo, hi, log: true } => {
            Value::Float((lo.ln() + (hi.ln() - lo.ln()) / 2.0).exp().clamp(*lo, *hi))
        }
        Domain::Float { lo, hi, log: false } => Value::Float(lo + (hi - lo) / 2.0),
        Domain::Int { lo, hi } => Value::Int(lo + (hi - lo) / 2),
        Domain::Categorical { .. } => Value::Cat(0),
    }
}

/// What to tell where enqueued configurations give a value to a parameter that is inactive in
/// them (`momentum` beside `optimizer = adam`): the value is left out, as a trial never sees it,
/// but a row whose `optimizer` was meant to be `sgd` would otherwise pass unnoticed. `values` are
/// the configurations' values ([`all_values`]).
pub fn inactive_given(space: &SearchSpace, configurations: &[Configuration], values: &[Vec<Value>]) -> Option<String> {
    let given = |j: &Json| !matches!(j, Json::Null) && j.as_str() != Some("");
    let mut first: Option<(usize, String)> = None;
    let mut count = 0;
    for (k, (c, v)) in configurations.iter().zip(values).enumerate() {
        let active = space.active(v);
        let inactive = c.iter().find(|(name, j)| given(j) && space.index_of(name).is_some_and(|i| !active[i]));
        if let Some((name, _)) = inactive {
            count += 1;
            first.get_or_insert((k + 1, name.clone()));
        }
    }
    let (k, name) = first?;
    let others = if count > 1 { format!(" ({count} configurations in all)") } else { String::new() };
    Some(format!(
        "enqueued configuration {k} gives a value to '{name}', which its other values make inactive: left out{others}"
    ))
}

/// The values of every configuration, or the first problem with the configuration's number
/// (1-based, as in its file).
pub fn all_values(space: &SearchSpace, configurations: &[Configuration]) -> Result<Vec<Vec<Value>>> {
    configurations
        .iter()
        .enumerate()
        .map(|(i, c)| {
            values(space, c).map_err(|e| match e {
                Error::InvalidConfig(m) => Error::InvalidConfig(format!("enqueued configuration {}: {m}", i + 1)),
                other => other,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> SearchSpace {
        SearchSpace::builder()
            .log_float("lr", 1e-4, 1e-1)
            .int("layers", 1, 8)
            .categorical("act", &["relu", "tanh"])
            .build()
            .unwrap()
    }

    #[test]
    fn csv_and_json_lines_give_the_same_configurations() {
        let csv = parse("lr, layers, act\n0.01, 3, relu\n\n0.001,8,tanh\n", "a.csv").unwrap();
        let jsonl = parse(
            "{\"lr\": 0.01, \"layers\": 3, \"act\": \"relu\"}\n{\"lr\": 0.001, \"layers\": 8, \"act\": \"tanh\"}\n",
            "a.jsonl",
        )
        .unwrap();
        assert_eq!(csv, jsonl);
        let values = all_values(&space(), &csv).unwrap();
        assert_eq!(values[0], vec![Value::Float(0.01), Value::Int(3), Value::Cat(0)]);
        assert_eq!(values[1], vec![Value::Float(0.001), Value::Int(8), Value::Cat(1)]);
    }

    /// A value given to a parameter its configuration makes inactive is left out, and said once.
    #[test]
    fn a_value_for_an_inactive_parameter_is_told() {
        let space = crate::propagator::test_pools::two_branches();
        let configs = parse("branch,xa,xb\na,0.5,\nb,0.25,0.5\nb,,0.5\na,0.1,0.9\n", "f").unwrap();
        let values = all_values(&space, &configs).unwrap();
        let told = inactive_given(&space, &configs, &values).unwrap();
        assert_eq!(
            told,
            "enqueued configuration 2 gives a value to 'xa', which its other values make inactive: left out \
             (2 configurations in all)"
        );
        assert_eq!(inactive_given(&space, &configs[..1], &values[..1]), None, "an empty cell is not given");
    }

    #[test]
    fn a_categorical_choice_that_reads_as_a_number_is_found_from_a_csv_cell() {
        let space = SearchSpace::builder().categorical("bs", &["16", "32", "0.5", "1e-3"]).build().unwrap();
        let configs = parse("bs\n32\n0.5\n1e-3\n", "f").unwrap();
        let expected = [vec![Value::Cat(1)], vec![Value::Cat(2)], vec![Value::Cat(3)]];
        assert_eq!(all_values(&space, &configs).unwrap(), expected);
        let e = all_values(&space, &parse("bs\n64\n", "f").unwrap()).unwrap_err().to_string();
        assert!(e.contains("'bs' is categorical: give one of its choices, not 64"), "{e}");
    }

    #[test]
    fn every_problem_names_the_configuration_and_the_parameter() {
        let e = |text: &str| {
            let configs = match parse(text, "f") {
                Ok(c) => c,
                Err(e) => return e.to_string(),
            };
            all_values(&space(), &configs).unwrap_err().to_string()
        };
        assert!(e("lr,layers,act\n0.5,3,relu\n").contains("configuration 1: parameter 'lr' has 0.5, outside"));
        assert!(e("lr,layers,act\n0.01,3,relu\n0.01,9,relu\n").contains("configuration 2: parameter 'layers'"));
        assert!(e("lr,layers,act\n0.01,3,gelu\n").contains("no choice 'gelu'"));
        assert!(e("lr,layers,act\n0.01,3.5,relu\n").contains("'layers' is an integer"));
        assert!(e("lr,layers\n0.01,3\n").contains("parameter 'act' is not given"));
        assert!(e("lr,layers,act,depth\n0.01,3,relu,2\n").contains("no parameter 'depth'"));
        assert!(e("lr,layers,act\n0.01,3\n").contains("f, line 2, has 2 fields"));
        assert!(e("{\"lr\": 0.01}\n[1]\n").contains("line 2, is not a JSON object"));
        assert!(e("{\"lr\": 0.01, \"layers\": 3, \"act\": 1}\n").contains("'act' is categorical"));
        assert!(e("\n\n").contains("holds no configuration"));
        assert!(e("lr,layers,act\n").contains("holds no configuration (a header and no line under it)"));
        assert!(e("lr,lr,layers,act\n0.01,0.02,3,relu\n").contains("line 1, (the header) names 'lr' twice"));
        assert!(e("[]").contains("holds no configuration"));
        assert!(e("[{\"lr\": 0.01}, 2]").contains("is not a JSON object"));
    }

    /// What pandas and Python's csv module write: quoted fields (`csv.QUOTE_ALL`), an integer
    /// column as floats where a cell is empty, a JSON array (`json.dump(records)`).
    #[test]
    fn tables_as_python_writes_them() {
        let quoted = parse("\"lr\",\"layers\",\"act\"\n\"0.01\",\"3\",\"relu\"\n", "f").unwrap();
        let floats = parse("lr,layers,act\n0.01,3.0,relu\n", "f").unwrap();
        let array = parse("[{\"lr\": 0.01, \"layers\": 3.0, \"act\": \"relu\"}]", "f").unwrap();
        let expected = vec![Value::Float(0.01), Value::Int(3), Value::Cat(0)];
        for configs in [quoted, floats, array] {
            assert_eq!(all_values(&space(), &configs).unwrap(), std::slice::from_ref(&expected));
        }
    }

    #[test]
    fn an_inactive_parameter_may_be_left_out_and_an_active_one_may_not() {
        let space = SearchSpace::builder()
            .categorical("optimizer", &["sgd", "adam"])
            .float("momentum", 0.0, 1.0)
            .when("optimizer", &["sgd"])
            .build()
            .unwrap();
        let configs = parse("optimizer,momentum\nadam,\nsgd,0.9\n", "f").unwrap();
        let values = all_values(&space, &configs).unwrap();
        assert_eq!(values[0], vec![Value::Cat(1), Value::Float(0.5)], "adam: momentum dormant at the middle");
        assert_eq!(values[1], vec![Value::Cat(0), Value::Float(0.9)]);
        let adam = parse("{\"optimizer\": \"adam\"}\n", "f").unwrap();
        assert_eq!(all_values(&space, &adam).unwrap()[0][0], Value::Cat(1));
        let sgd = parse("{\"optimizer\": \"sgd\"}\n", "f").unwrap();
        let e = all_values(&space, &sgd).unwrap_err().to_string();
        assert!(e.contains("parameter 'momentum' is not given (its condition holds)"), "{e}");
    }
}
