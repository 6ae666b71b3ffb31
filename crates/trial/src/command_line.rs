//! The trial's command with a candidate filled in. `{name}` in any word of the command is replaced
//! by the parameter's value (`--lr={lr}`, `lr={lr}`); a command without any placeholder gets
//! `--name=value` appended for every parameter, in the space's order. Floats are written in full
//! (the shortest text that reads back as the same number), categoricals as their choice. An
//! inactive conditional parameter is left out (no `--name=value`, absent from
//! `PROPULATE_PARAMS`); a placeholder may not name one, as it would have nothing to hold.

use propulate_core::{SearchSpace, Value};

use crate::Error;

/// The command of a trial, as given after `--`.
#[derive(Debug, Clone)]
pub struct CommandTemplate {
    words: Vec<String>,
    /// True when a word holds a `{name}` of the space: then nothing is appended.
    placeholders: bool,
}

impl CommandTemplate {
    /// `words` for candidates of `space`: at least a program to run.
    pub fn new(words: Vec<String>, space: &SearchSpace) -> Result<Self, Error> {
        if words.first().is_none_or(|w| w.is_empty()) {
            return Err(Error::InvalidConfig(
                "no trial command: give the program after `--`, e.g. `-- python train.py`".into(),
            ));
        }
        let named = |p: &propulate_core::space::Param| words.iter().any(|w| w.contains(&format!("{{{}}}", p.name)));
        if let Some(p) = space.params().iter().find(|p| !p.when.is_empty() && named(p)) {
            return Err(Error::InvalidConfig(format!(
                "the trial command holds {{{}}}, a conditional parameter that is absent where its condition does not hold: \
                 leave the placeholders out (every active parameter is appended as --name=value) or read PROPULATE_PARAMS",
                p.name
            )));
        }
        let placeholders = space.params().iter().any(named);
        // Appended as one word `--name=value`: a name with a space, an `=` or a leading `-` would
        // reach the program as another flag or value than it is.
        let unsafe_name = |n: &str| n.starts_with('-') || n.contains('=') || n.chars().any(char::is_whitespace);
        if let Some(p) = space.params().iter().find(|p| !placeholders && unsafe_name(&p.name)) {
            return Err(Error::InvalidConfig(format!(
                "parameter '{}' cannot be passed as --{}=VALUE (a name with a space, an '=' or a leading '-' would \
                 reach the program as something else): rename it, or place each parameter with {{name}} in the command",
                p.name, p.name
            )));
        }
        Ok(CommandTemplate { words, placeholders })
    }

    /// The parameters of `space` that no placeholder names, where the command has placeholders:
    /// they are searched, but reach the program only in `PROPULATE_PARAMS`.
    pub fn unnamed<'a>(&self, space: &'a SearchSpace) -> Vec<&'a str> {
        if !self.placeholders {
            return Vec::new();
        }
        let named = |name: &str| self.words.iter().any(|w| w.contains(&format!("{{{name}}}")));
        space.params().iter().map(|p| p.name.as_str()).filter(|name| !named(name)).collect()
    }

    /// `{word}`s of the command that look like misspelt placeholders (a `{lrr}` for `{lr}`): they
    /// reach the program as written. A word counts where it is a name a few letters from a
    /// parameter's, or where the placeholders leave a parameter out (it may be that one's); so
    /// awk's `'{print}'` in a command without placeholders is no stray, nor is a `${NAME}` of a
    /// shell script, nor anything with other characters than a name's between the braces.
    pub fn strays<'a>(&'a self, space: &SearchSpace) -> Vec<&'a str> {
        let is_name = |n: &str| {
            n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let some_unnamed = !self.unnamed(space).is_empty();
        let near_a_parameter = |n: &str| {
            let n = n.to_lowercase();
            space.params().iter().any(|p| {
                let name = p.name.to_lowercase();
                strsim::levenshtein(&n, &name) <= (name.chars().count() / 3).max(1)
            })
        };
        let mut strays = Vec::new();
        for word in &self.words {
            let mut rest = word.as_str();
            while let Some(open) = rest.find('{') {
                let before = &rest[..open];
                let after = &rest[open + 1..];
                let Some(close) = after.find('}') else { break };
                let name = &after[..close];
                if !before.ends_with('$')
                    && is_name(name)
                    && space.index_of(name).is_none()
                    && (some_unnamed || near_a_parameter(name))
                    && !strays.contains(&name)
                {
                    strays.push(name);
                }
                rest = &after[close + 1..];
            }
        }
        strays
    }

    /// The command as given.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// The command for the candidate `values` of `space`.
    pub fn argv(&self, space: &SearchSpace, values: &[Value]) -> Vec<String> {
        let rendered: Vec<(&str, String)> =
            space.active_values(values).map(|(i, p, v)| (p.name.as_str(), space.render(i, v))).collect();
        if !self.placeholders {
            let mut argv = self.words.clone();
            argv.extend(rendered.iter().map(|(name, value)| format!("--{name}={value}")));
            return argv;
        }
        self.words
            .iter()
            .map(|w| rendered.iter().fold(w.clone(), |w, (name, value)| w.replace(&format!("{{{name}}}"), value)))
            .collect()
    }
}

/// The candidate as one JSON object (`PROPULATE_PARAMS`): numbers, and strings for categoricals.
pub(crate) fn params_json(space: &SearchSpace, values: &[Value]) -> String {
    let map: serde_json::Map<String, serde_json::Value> =
        space.active_values(values).map(|(i, p, v)| (p.name.clone(), space.to_json(i, v))).collect();
    serde_json::Value::Object(map).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> SearchSpace {
        SearchSpace::builder()
            .log_float("lr", 1e-4, 1e-2)
            .int("layers", 2, 10)
            .categorical("act", &["relu", "tanh"])
            .build()
            .unwrap()
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    const VALUES: [Value; 3] = [Value::Float(0.000123), Value::Int(4), Value::Cat(1)];

    #[test]
    fn without_placeholders_every_parameter_is_appended() {
        let t = CommandTemplate::new(words(&["python", "train.py", "--epochs", "5"]), &space()).unwrap();
        assert_eq!(
            t.argv(&space(), &VALUES),
            ["python", "train.py", "--epochs", "5", "--lr=0.000123", "--layers=4", "--act=tanh"]
        );
    }

    #[test]
    fn placeholders_are_replaced_and_nothing_is_appended() {
        let t =
            CommandTemplate::new(words(&["./run", "--rate={lr}", "{act}", "{unknown}", "{layers}{layers}"]), &space())
                .unwrap();
        assert_eq!(t.argv(&space(), &VALUES), ["./run", "--rate=0.000123", "tanh", "{unknown}", "44"]);
    }

    #[test]
    fn floats_read_back_exactly_and_the_json_has_the_choices() {
        let x = 0.1 + 0.2;
        let values = [Value::Float(x), Value::Int(-3), Value::Cat(0)];
        let t = CommandTemplate::new(words(&["p"]), &space()).unwrap();
        let lr = t.argv(&space(), &values)[1].strip_prefix("--lr=").unwrap().parse::<f64>().unwrap();
        assert_eq!(lr, x);
        let json: serde_json::Value = serde_json::from_str(&params_json(&space(), &values)).unwrap();
        assert_eq!(json, serde_json::json!({"lr": x, "layers": -3, "act": "relu"}));
    }

    #[test]
    fn an_inactive_parameter_is_neither_an_argument_nor_in_the_json_nor_a_placeholder() {
        let space = SearchSpace::builder()
            .categorical("optimizer", &["sgd", "adam"])
            .float("momentum", 0.0, 1.0)
            .when("optimizer", &["sgd"])
            .build()
            .unwrap();
        let t = CommandTemplate::new(words(&["p"]), &space).unwrap();
        let (sgd, adam) = ([Value::Cat(0), Value::Float(0.5)], [Value::Cat(1), Value::Float(0.5)]);
        assert_eq!(t.argv(&space, &sgd), ["p", "--optimizer=sgd", "--momentum=0.5"]);
        assert_eq!(t.argv(&space, &adam), ["p", "--optimizer=adam"]);
        assert_eq!(params_json(&space, &adam), r#"{"optimizer":"adam"}"#);
        let e = CommandTemplate::new(words(&["p", "--m={momentum}"]), &space).unwrap_err().to_string();
        assert!(e.contains("{momentum}, a conditional parameter") && e.contains("PROPULATE_PARAMS"), "{e}");
        assert!(CommandTemplate::new(words(&["p", "{optimizer}"]), &space).is_ok());
    }

    #[test]
    fn an_empty_command_is_refused() {
        assert!(CommandTemplate::new(vec![], &space()).unwrap_err().to_string().contains("no trial command"));
        assert!(CommandTemplate::new(words(&[""]), &space()).is_err());
    }

    #[test]
    fn parameters_no_placeholder_names_are_told() {
        let t = CommandTemplate::new(words(&["train", "--lr={lr}"]), &space()).unwrap();
        assert_eq!(t.unnamed(&space()), ["layers", "act"]);
        let all = CommandTemplate::new(words(&["train"]), &space()).unwrap();
        assert!(all.unnamed(&space()).is_empty(), "without placeholders every parameter is appended");
    }

    #[test]
    fn placeholders_that_name_no_parameter_are_told() {
        let t = CommandTemplate::new(
            words(&[
                "train.sh",
                "--lr={rate}",
                "--act={act}",
                "--x={layrs}{lr}{rate}",
                "${HOME}",
                "{ print $1 }",
                "{2x}",
            ]),
            &space(),
        )
        .unwrap();
        assert_eq!(t.strays(&space()), ["rate", "layrs"], "`layers` has no placeholder: each may be it");
        // Every parameter placed: only names a few letters from one are strays.
        let t =
            CommandTemplate::new(words(&["train", "{lr}", "{layers}", "{act}", "{Act}", "{lrr}", "{rate}"]), &space())
                .unwrap();
        assert_eq!(t.strays(&space()), ["Act", "lrr"]);
        // No placeholders (every parameter appended): awk's program is no stray, a misspelling is.
        let t = CommandTemplate::new(words(&["awk", "{print}", "{layres}", "file"]), &space()).unwrap();
        assert_eq!(t.strays(&space()), ["layres"]);
    }

    #[test]
    fn a_name_that_is_no_flag_is_refused_where_it_would_be_appended() {
        for name in ["a b", "a=b", "-x"] {
            let space = SearchSpace::builder().float(name, 0.0, 1.0).build().unwrap();
            let e = CommandTemplate::new(words(&["train"]), &space).unwrap_err().to_string();
            assert!(e.contains(&format!("parameter '{name}' cannot be passed as --{name}=VALUE")), "{e}");
        }
        let space = SearchSpace::builder().float("a b", 0.0, 1.0).build().unwrap();
        assert!(CommandTemplate::new(words(&["train", "--ab={a b}"]), &space).is_ok(), "placed by hand, it is fine");
    }
}
