//! A message of the command line in a front's words: where the engine or clap names a run flag
//! (`--reshape-from DIR`, `'--warm-start <PATH>'`, `--generations 5`), a Python user gave an
//! option (`reshape_from=DIR`, `warm_start=`, `generations=5`, a switch `pollination=True`). Flags that are no option of a front
//! (`--space`, `--function`) stay as they are: only the command line has them.

use crate::front::options;

/// `message` with every run flag that is a front's option written as that option.
pub fn in_option_words(message: &str) -> String {
    let options = options();
    // A switch is given as True (`pollination=True`).
    let name_of = |flag: &str| {
        options
            .iter()
            .find(|o| o.flag == flag)
            .map(|o| if o.switch { format!("{}=True", o.name) } else { format!("{}=", o.name) })
    };
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let len =
            after.find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')).unwrap_or(after.len());
        let Some(name) = name_of(&rest[at..at + 2 + len]).filter(|_| len > 0) else {
            out.push_str("--");
            rest = after;
            continue;
        };
        let switch = name.ends_with("=True");
        out.push_str(&name);
        rest = &after[len..];
        if switch {
            continue;
        }
        // Its value, where the message gives one: clap's `<PATH>`, a word in capitals (`DIR`), a
        // number.
        if let Some(value) = rest.strip_prefix(' ') {
            let end = value
                .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ')' | '\'' | '`'))
                .unwrap_or(value.len());
            let word = &value[..end];
            let placeholder = word.starts_with('<') && word.ends_with('>');
            let capitals = !word.is_empty() && word.chars().all(|c| c.is_ascii_uppercase() || c == '_');
            let number = !word.is_empty() && word.parse::<f64>().is_ok();
            if placeholder {
                rest = &value[end..];
            } else if capitals || number {
                out.push_str(word);
                rest = &value[end..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_flags_become_options_and_other_flags_stay() {
        assert_eq!(
            in_option_words("the argument '--no-checkpoint' cannot be used with '--warm-start <PATH>'"),
            "the argument 'no_checkpoint=True' cannot be used with 'warm_start='"
        );
        assert_eq!(
            in_option_words(
                "a job of another size continues it into a new directory: --reshape-from DIR --checkpoint NEW"
            ),
            "a job of another size continues it into a new directory: reshape_from=DIR checkpoint=NEW"
        );
        assert_eq!(
            in_option_words("(--generations 5; a larger value goes on) with --pollination and --space FILE"),
            "(generations=5; a larger value goes on) with pollination=True and --space FILE"
        );
        assert_eq!(in_option_words("no flag -- here, nor --"), "no flag -- here, nor --");
        assert_eq!(in_option_words("--generationsx"), "--generationsx", "a longer word is no flag");
    }
}
