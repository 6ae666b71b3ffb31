//! The flag reference (the flag tables of `docs/guide/cli.md`) generated from the command line's
//! own definition, so that each flag's name, value, default and meaning are written once: in the
//! doc comments of `args.rs`, or in the table of `propagator_flags.rs`. Help texts are markdown;
//! the terminal's help shows their links as the links' text ([`for_terminal`]), the reference keeps
//! them. `tests/documented_flags.rs` compares the docs with [`tables`] (and rewrites them on
//! request).

use clap::{Arg, ArgAction, Command};

/// The heading of the flags that have none of their own.
pub const GENERAL: &str = "Options";

/// One markdown table (`| flag | default | meaning |`) per help heading, in the order the help
/// shows them: (heading, table).
pub fn tables(command: &Command) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for arg in
        command.get_arguments().filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
    {
        let heading = arg.get_help_heading().unwrap_or(GENERAL).to_string();
        let table = match out.iter_mut().find(|(h, _)| *h == heading) {
            Some((_, table)) => table,
            None => {
                out.push((heading, "| flag | default | meaning |\n|---|---|---|\n".to_string()));
                &mut out.last_mut().expect("just pushed").1
            }
        };
        let (meaning, default) = meaning_and_default(arg);
        table.push_str(&format!("| `{}` | {} | {} |\n", cell(&flag(arg)), cell(&default), cell(&meaning)));
    }
    out
}

/// How the flag is written: `-q, --quiet`, `--islands N`, `--lr-scale log|linear`, `-- COMMAND ...`.
fn flag(arg: &Arg) -> String {
    let value = || {
        let values: Vec<String> =
            arg.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| v.get_name().to_string()).collect();
        if values.is_empty() {
            arg.get_value_names().and_then(|names| names.first()).map(|n| n.to_string()).unwrap_or_default()
        } else {
            values.join("|")
        }
    };
    match arg.get_long() {
        None => format!("-- {} ...", value()),
        Some(long) => {
            let short = arg.get_short().map(|c| format!("-{c}, ")).unwrap_or_default();
            match arg.get_action().takes_values() {
                true => format!("{short}--{long} {}", value()),
                false => format!("{short}--{long}"),
            }
        }
    }
}

/// The help text without its default, and the default: the text's own `[default: ...]` at its end
/// (a rule in words), else clap's default value (as the terminal's help shows it), `off` for a
/// switch, `none` without one.
fn meaning_and_default(arg: &Arg) -> (String, String) {
    let help = arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
    if let Some(start) = help.rfind(" [default: ").filter(|_| help.ends_with(']')) {
        let rule = &help[start + " [default: ".len()..help.len() - 1];
        return (help[..start].to_string(), rule.to_string());
    }
    let default = if matches!(arg.get_action(), ArgAction::SetTrue) {
        "off".to_string()
    } else if arg.get_default_values().is_empty() {
        if arg.get_long().is_some() { "none" } else { "" }.to_string()
    } else {
        let values: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
        values.join(",")
    };
    (help, default)
}

/// A table cell: a `|` would end it, even inside code.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// A help text for the terminal: each markdown link `[text](target)` becomes its text.
pub fn for_terminal(help: &str) -> String {
    let mut out = String::with_capacity(help.len());
    let mut rest = help;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let link = after.find("](").and_then(|close| {
            let text = &after[..close];
            let target = &after[close + 2..];
            (!text.contains('[')).then_some(())?;
            target.find(')').map(|end| (text, close + 2 + end + 1))
        });
        match link {
            Some((text, used)) => {
                out.push_str(&rest[..open]);
                out.push_str(text);
                rest = &after[used..];
            }
            None => {
                out.push_str(&rest[..=open]);
                rest = after;
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
    fn links_show_as_their_text_and_other_brackets_stay() {
        assert_eq!(
            for_terminal("see [early stopping](early-stopping.md); `t10k-images[.gz]` [default: none]"),
            "see early stopping; `t10k-images[.gz]` [default: none]"
        );
        assert_eq!(for_terminal("[a](x.md#y) and [b](z)"), "a and b");
        assert_eq!(for_terminal("[unclosed](x"), "[unclosed](x");
    }

    #[test]
    fn a_flag_row_shows_its_value_default_and_meaning() {
        let command = Command::new("x")
            .arg(Arg::new("islands").long("islands").value_name("N").default_value("1").help("Number of islands"))
            .arg(
                Arg::new("gens")
                    .long("generations")
                    .value_name("G")
                    .help("Evaluations per worker, see [b](b.md) [default: 4 or 10]"),
            )
            .arg(
                Arg::new("scale")
                    .long("scale")
                    .value_parser(["log", "linear"])
                    .default_value("log")
                    .help_heading("Task")
                    .help("How"),
            )
            .arg(Arg::new("quiet").long("quiet").short('q').action(ArgAction::SetTrue).help("No lines"))
            .arg(Arg::new("out").long("out").value_name("DIR").help("Where"));
        let tables = tables(&command);
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].0, GENERAL);
        assert_eq!(
            tables[0].1,
            "| flag | default | meaning |\n|---|---|---|\n\
             | `--islands N` | 1 | Number of islands |\n\
             | `--generations G` | 4 or 10 | Evaluations per worker, see [b](b.md) |\n\
             | `-q, --quiet` | off | No lines |\n\
             | `--out DIR` | none | Where |\n"
        );
        assert_eq!(tables[1].0, "Task");
        assert!(tables[1].1.ends_with("| `--scale log\\|linear` | log | How |\n"), "{}", tables[1].1);
    }
}
