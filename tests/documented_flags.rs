//! The commands the documentation shows exist, with the flags shown. Every line of a fenced code
//! block in README.md, docs/**/*.md and tutorials/**/*.md that runs `propulate-rs` (directly, or
//! after `mpirun`, `srun`, environment assignments, ...) has its long flags (`--name`,
//! `--name=value`, up to a standalone `--`, after which the user's trial command begins) checked
//! against the `--help` of the same (sub)command, and its subcommand must exist. The first cell of
//! a flag table's row that starts with a flag must name flags of `propulate-rs --help`. A renamed
//! or removed flag fails here, naming the file, the line and the flag. The other way round, every
//! flag of `propulate-rs --help` must be in a flag table of the docs, and every flag of a
//! subcommand somewhere in them: a new flag without docs fails here too. The flag reference's
//! tables (`docs/guide/cli.md`: flag, default, meaning) are generated from the flags' definitions
//! (`propulate_cli::flag_reference`) and must equal them; `UPDATE_DOCS=1` rewrites them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Programs that start `propulate-rs` when it follows them on a command line.
const LAUNCHERS: [&str; 6] = ["mpirun", "mpiexec", "srun", "torchrun", "timeout", "time"];

/// What the binary accepts: the long flags of a run, and the subcommands with theirs.
struct Help {
    run: BTreeSet<String>,
    subcommands: BTreeMap<String, BTreeSet<String>>,
}

impl Help {
    /// Read from the built binary's `--help` and each subcommand's.
    fn of_binary() -> Help {
        let top = help_text(&["--help"]);
        let subcommands = subcommand_names(&top)
            .into_iter()
            .filter(|name| name != "help")
            .map(|name| {
                let flags = defined_flags(&help_text(&[&name, "--help"]));
                (name, flags)
            })
            .collect();
        Help { run: defined_flags(&top), subcommands }
    }
}

/// The output of `propulate-rs ARGS`, which must succeed.
fn help_text(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_propulate-rs")).args(args).output().expect("run propulate-rs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "propulate-rs {args:?} failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// The long flags a clap help text defines: those at the start of its option lines (a description
/// that mentions a flag does not define it).
fn defined_flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter(|line| line.trim_start().starts_with('-'))
        .flat_map(|line| line.split_whitespace().map(|w| w.trim_end_matches(',')).take_while(|w| w.starts_with('-')))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_string)
        .collect()
}

/// The names in the `Commands:` section of a clap help text.
fn subcommand_names(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| line.trim() != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect()
}

/// A word of a command line and the line of the file it is on.
type Word<'a> = (usize, &'a str);

/// The lines of fenced code blocks (numbered from 1), a line ending in `\` joined with the next.
fn code_lines(text: &str) -> Vec<Vec<(usize, &str)>> {
    let mut lines = Vec::new();
    let mut in_code = false;
    let mut pending: Vec<(usize, &str)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        if fence.starts_with("```") || fence.starts_with("~~~") {
            in_code = !in_code;
            if !pending.is_empty() {
                lines.push(std::mem::take(&mut pending));
            }
            continue;
        }
        if !in_code {
            continue;
        }
        match line.trim_end().strip_suffix('\\') {
            Some(head) => pending.push((i + 1, head)),
            None => {
                pending.push((i + 1, line));
                lines.push(std::mem::take(&mut pending));
            }
        }
    }
    lines
}

/// The words of a command line split into shell commands at `;`, `&&` and `||`; a `#` word starts
/// a comment, which ends the line.
fn commands<'a>(pieces: &[(usize, &'a str)]) -> Vec<Vec<Word<'a>>> {
    let mut all = vec![Vec::new()];
    'line: for &(line, text) in pieces {
        for word in text.split_whitespace() {
            if word.starts_with('#') {
                break 'line;
            }
            match word {
                ";" | "&&" | "||" => all.push(Vec::new()),
                _ => match word.strip_suffix(';') {
                    Some(head) => {
                        if !head.is_empty() {
                            all.last_mut().expect("one").push((line, head));
                        }
                        all.push(Vec::new());
                    }
                    None => all.last_mut().expect("one").push((line, word)),
                },
            }
        }
    }
    all
}

/// `propulate-rs` or a path to it.
fn is_binary(word: &str) -> bool {
    word == "propulate-rs" || word.ends_with("/propulate-rs")
}

/// `NAME=value`: an environment assignment before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) && !name.starts_with('-')
    })
}

/// When the command runs `propulate-rs`: the words after the binary, up to a standalone `--`. A
/// command runs it when, after environment assignments (and `do`/`then`/`$`), it starts with the
/// binary or with a launcher whose words the binary follows; anything else (output, `cargo`, a
/// script) is not checked.
fn propulate_words<'a>(command: &[Word<'a>]) -> Option<Vec<Word<'a>>> {
    let start = command.iter().position(|(_, w)| !matches!(*w, "$" | "do" | "then" | "else") && !is_assignment(w))?;
    let first = command[start].1;
    let binary = if is_binary(first) {
        start
    } else if LAUNCHERS.contains(&first) {
        start + command[start..].iter().position(|(_, w)| is_binary(w))?
    } else {
        return None;
    };
    Some(command[binary + 1..].iter().take_while(|(_, w)| *w != "--").copied().collect())
}

/// The long flag a word names (`--name` of `--name` or `--name=value`), if it names one.
fn long_flag(word: &str) -> Option<&str> {
    let word = word.trim_matches(|c| matches!(c, '[' | ']' | '(' | ')' | '"' | '\'' | '`'));
    let name = word.split('=').next()?;
    let rest = name.strip_prefix("--")?;
    let valid = !rest.is_empty() && rest.starts_with(|c: char| c.is_ascii_alphabetic());
    (valid && rest.chars().all(|c| c == '-' || c.is_ascii_alphanumeric())).then_some(name)
}

/// Every long flag in the first cell of a table row, when that cell starts with a flag.
fn table_flags(row: &str) -> Vec<&str> {
    let Some(cells) = row.trim().strip_prefix('|') else { return Vec::new() };
    let first = cells.split(" | ").next().unwrap_or("").trim().trim_start_matches('`');
    let starts_with_flag = first.strip_prefix('-').is_some_and(|r| {
        let r = r.strip_prefix('-').unwrap_or(r);
        r.starts_with(|c: char| c.is_ascii_alphabetic())
    });
    if !starts_with_flag {
        return Vec::new();
    }
    first.split(|c: char| c.is_whitespace() || matches!(c, '`' | ',' | '/')).filter_map(long_flag).collect()
}

/// What the check found in one file: the problems, and how many commands and table flags it read.
#[derive(Default)]
struct Findings {
    problems: Vec<String>,
    commands: usize,
    table_flags: usize,
}

/// Check the markdown `text` of `file` against `help`.
fn check_markdown(file: &str, text: &str, help: &Help) -> Findings {
    let mut found = Findings::default();
    for pieces in code_lines(text) {
        for command in commands(&pieces) {
            let Some(words) = propulate_words(&command) else { continue };
            found.commands += 1;
            let (program, flags) = match words.first() {
                Some(&(line, sub)) if !sub.starts_with('-') => match help.subcommands.get(sub) {
                    Some(flags) => (format!("propulate-rs {sub}"), flags),
                    None => {
                        let valid: Vec<&str> = help.subcommands.keys().map(String::as_str).collect();
                        found.problems.push(format!(
                            "{file}:{line}: `propulate-rs {sub}`: no such subcommand (valid: {})",
                            valid.join(", ")
                        ));
                        continue;
                    }
                },
                _ => ("propulate-rs".to_string(), &help.run),
            };
            for &(line, word) in &words {
                if let Some(flag) = long_flag(word)
                    && !flags.contains(flag)
                {
                    found
                        .problems
                        .push(format!("{file}:{line}: `{flag}` is not a flag of `{program}` (see `{program} --help`)"));
                }
            }
        }
    }
    let mut in_code = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
        }
        if in_code {
            continue;
        }
        for flag in table_flags(line) {
            found.table_flags += 1;
            if !help.run.contains(flag) {
                found.problems.push(format!(
                    "{file}:{}: flag table: `{flag}` is not a flag of `propulate-rs` (see `propulate-rs --help`)",
                    i + 1
                ));
            }
        }
    }
    found
}

/// The markdown files under `dir`, recursively.
fn markdown_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            markdown_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "md") {
            into.push(path);
        }
    }
}

#[test]
fn documented_commands_use_flags_the_binary_has() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let help = Help::of_binary();
    assert!(help.run.contains("--islands") && help.subcommands.contains_key("report"), "help not understood");
    let mut files = vec![root.join("README.md")];
    markdown_files(&root.join("docs"), &mut files);
    markdown_files(&root.join("tutorials"), &mut files);
    files.sort();
    let mut total = Findings::default();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read markdown");
        let name = path.strip_prefix(root).unwrap_or(path).display().to_string();
        let found = check_markdown(&name, &text, &help);
        total.problems.extend(found.problems);
        total.commands += found.commands;
        total.table_flags += found.table_flags;
    }
    assert!(total.problems.is_empty(), "documented flags the binary does not have:\n{}", total.problems.join("\n"));
    // The check must have read something: a parser that finds no commands would pass vacuously.
    assert!(total.commands >= 20, "only {} documented propulate-rs commands found", total.commands);
    assert!(total.table_flags >= 30, "only {} flags found in flag tables", total.table_flags);
}

/// The flags of `help` that `docs` (file name, text) leave out: a run's flag must be in a flag
/// table, a subcommand's anywhere in the text as `` `--flag`` or followed by a space or `=`.
fn undocumented(help: &Help, docs: &[(String, String)]) -> Vec<String> {
    let in_tables: BTreeSet<&str> = docs.iter().flat_map(|(_, text)| text.lines().flat_map(table_flags)).collect();
    let mentioned = |flag: &str| {
        docs.iter().any(|(_, text)| [" ", "=", "`", "\n"].iter().any(|end| text.contains(&format!("{flag}{end}"))))
    };
    let mut missing: Vec<String> = help
        .run
        .iter()
        .filter(|f| !matches!(f.as_str(), "--help" | "--version") && !in_tables.contains(f.as_str()))
        .map(|f| format!("`propulate-rs {f}` is in no flag table of the docs"))
        .collect();
    for (sub, flags) in &help.subcommands {
        missing.extend(
            flags
                .iter()
                .filter(|f| f.as_str() != "--help" && !mentioned(f))
                .map(|f| format!("`propulate-rs {sub} {f}` is not in the docs")),
        );
    }
    missing
}

#[test]
fn every_flag_the_binary_has_is_documented() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    markdown_files(&root.join("docs"), &mut files);
    let docs: Vec<(String, String)> =
        files.iter().map(|p| (p.display().to_string(), std::fs::read_to_string(p).expect("read markdown"))).collect();
    let help = Help::of_binary();
    let missing = undocumented(&help, &docs);
    assert!(missing.is_empty(), "flags without docs (add them to docs/guide/cli.md):\n{}", missing.join("\n"));
    // And the check sees a flag left out: the docs without the row of --quiet.
    let without: Vec<(String, String)> = docs
        .iter()
        .map(|(f, t)| {
            (f.clone(), t.lines().filter(|l| !l.starts_with("| `-q, --quiet`")).collect::<Vec<_>>().join("\n"))
        })
        .collect();
    assert_eq!(undocumented(&help, &without), ["`propulate-rs --quiet` is in no flag table of the docs"]);
}

/// The line before each generated table of the flag reference: `<!-- flags: HEADING -->`, the
/// heading as `--help` groups the flags.
const MARKER: &str = "<!-- flags: ";

/// `text` (the flag reference) with the table after each marker replaced by the generated table of
/// its heading, and the headings of `tables` that no marker names.
fn with_generated_tables(text: &str, tables: &[(String, String)]) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut placed = BTreeSet::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        let Some(heading) = line.strip_prefix(MARKER).and_then(|rest| rest.strip_suffix(" -->")) else { continue };
        while lines.peek().is_some_and(|l| l.starts_with('|')) {
            lines.next();
        }
        match tables.iter().find(|(h, _)| h == heading) {
            Some((_, table)) => {
                out.push_str(table);
                placed.insert(heading.to_string());
            }
            None => out.push_str(&format!("| no flags have the heading `{heading}` |\n")),
        }
    }
    let unplaced = tables.iter().map(|(h, _)| h.clone()).filter(|h| !placed.contains(h)).collect();
    (out, unplaced)
}

/// The first line where `a` and `b` differ: its number and both versions.
fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    (1..).find_map(|n| match (la.next(), lb.next()) {
        (None, None) => Some(None),
        (x, y) if x != y => Some(Some((n, x.unwrap_or("").to_string(), y.unwrap_or("").to_string()))),
        _ => None,
    })?
}

/// Text as the terminal wraps it does not matter: runs of white space as one space.
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_flag_reference_is_generated_from_the_flags_help() {
    use clap::CommandFactory;
    use propulate_cli::flag_reference;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("docs/guide/cli.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let tables = flag_reference::tables(&propulate_cli::args::documented(propulate_cli::args::Cli::command()));
    let headings: Vec<&str> = tables.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(
        headings,
        ["Options", "CNN task", "Training (CNN task, command trials)", "Command trials", "Propagator"]
    );
    let (generated, unplaced) = with_generated_tables(&text, &tables);
    assert!(unplaced.is_empty(), "docs/guide/cli.md has no `{MARKER}HEADING -->` line for {unplaced:?}");
    if generated != text {
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &generated).unwrap();
            eprintln!("rewrote the flag tables of {}", path.display());
        } else {
            let (line, doc, help) = first_difference(&text, &generated).unwrap_or_default();
            panic!(
                "docs/guide/cli.md's flag tables are not those of the flags' help (line {line}):\n  docs: {doc}\n  help: {help}\n\
                 A flag's text lives in crates/cli/src/args.rs (its doc comment) or crates/cli/src/propagator_flags.rs; \
                 `UPDATE_DOCS=1 cargo test --test documented_flags` rewrites the tables from it"
            );
        }
    }
    // The terminal shows the same meanings (links as their text) and defaults.
    let help = squeezed(&help_text(&["--help"]));
    let mut rows = 0;
    for row in tables.iter().flat_map(|(_, t)| t.lines().skip(2)) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let meaning = flag_reference::for_terminal(&cells[2].trim_end_matches(" |").replace("\\|", "|"));
        assert!(help.contains(&squeezed(&meaning)), "--help does not show `{meaning}`");
        rows += 1;
    }
    assert!(rows >= 70, "only {rows} flags in the tables");
    // The check sees a changed meaning or default.
    for (from, to) in [
        ("| Best individuals to show per island |", "| Best individuals |"),
        ("| `--seed SEED` | 0 |", "| `--seed SEED` | 1 |"),
    ] {
        assert!(generated.contains(from), "{from}");
        let changed = generated.replacen(from, to, 1);
        assert_eq!(with_generated_tables(&changed, &tables).0, generated, "{to} is rewritten");
    }
}

#[test]
fn a_made_up_flag_is_reported_with_file_and_line() {
    let help = Help::of_binary();
    let doc = r#"Some prose with `propulate-rs --not-checked-in-prose`.

```sh
mpirun -np 2 target/release/propulate-rs --islands 2 \
    --no-such-flag 3 -- python train.py --not-ours
propulate-rs report DIR --out x --bogus-report-flag
propulate-rs env --function sphere
propulate-rs frobnicate --islands 2
SEED=1 srun -n 4 propulate-rs --function sphere --seed=3 --typo-flag=1   # --in-a-comment
for s in 1 2; do mpirun -np 2 propulate-rs --islands 2 --wrong; done
cargo run -- --not-ours-either
```

```
propulate-rs: error: --not-a-command-line
```

| flag | default | meaning |
|---|---|---|
| `--no-such-table-flag N` | 1 | made up |
| `--islands N` / `--island-sizes 3,5` | 1 | real |
| `-- COMMAND ...` | | the user's command |
"#;
    let found = check_markdown("doc.md", doc, &help);
    let expected = [
        "doc.md:5: `--no-such-flag` is not a flag of `propulate-rs` (see `propulate-rs --help`)",
        "doc.md:6: `--bogus-report-flag` is not a flag of `propulate-rs report` (see `propulate-rs report --help`)",
        "doc.md:7: `--function` is not a flag of `propulate-rs env` (see `propulate-rs env --help`)",
        "doc.md:8: `propulate-rs frobnicate`: no such subcommand (valid: env, report)",
        "doc.md:9: `--typo-flag` is not a flag of `propulate-rs` (see `propulate-rs --help`)",
        "doc.md:10: `--wrong` is not a flag of `propulate-rs` (see `propulate-rs --help`)",
        "doc.md:20: flag table: `--no-such-table-flag` is not a flag of `propulate-rs` (see `propulate-rs --help`)",
    ];
    assert_eq!(found.problems, expected);
    assert_eq!(found.commands, 6);
    assert_eq!(found.table_flags, 3);
}
