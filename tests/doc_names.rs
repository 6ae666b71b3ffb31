//! The code the documentation names still exists. Every backticked path (`Optimizer::enqueue`,
//! `trust_region::side`) or call (`set_up_failure()`) in README.md and docs/**/*.md must have each
//! of its segments somewhere in the project's code (crates, src, tests, benches, scripts, python,
//! tutorials): a function renamed or removed without its docs fails here, naming the file and the
//! name. Cheap on purpose: a segment found anywhere counts, so a doc can still name something that
//! moved; what it catches is a name that is gone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where the code lives, relative to the repository root.
const CODE: [&str; 7] = ["crates", "src", "tests", "benches", "scripts", "python", "tutorials"];

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        // Build outputs and virtual environments are not the project's code.
        if name.to_string_lossy().starts_with('.') || name == "target" || name == "__pycache__" {
            continue;
        }
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

/// The backticked spans of `text` that name code: `a::b` paths and `name()` calls, as written.
fn named_code(text: &str) -> Vec<&str> {
    let is_ident = |s: &str| !s.is_empty() && identifiers(s).next() == Some(s);
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| {
            let (path, call) = match span.strip_suffix("()") {
                Some(path) => (path, true),
                None => (*span, false),
            };
            (call || path.contains("::")) && path.split("::").all(is_ident)
        })
        .collect()
}

#[test]
fn every_function_or_type_the_docs_name_exists_in_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut code = Vec::new();
    for dir in CODE {
        files_under(&root.join(dir), &mut code);
    }
    let mut known = BTreeSet::new();
    for file in &code {
        if let Ok(text) = std::fs::read_to_string(file) {
            known.extend(identifiers(&text).map(str::to_string));
        }
    }
    assert!(known.contains("Optimizer") && known.len() > 1000, "the code was not found under {}", root.display());
    let mut docs = vec![root.join("README.md")];
    files_under(&root.join("docs"), &mut docs);
    let mut checked = 0;
    let mut gone = Vec::new();
    for doc in docs.iter().filter(|d| d.extension().is_some_and(|e| e == "md")) {
        let text = std::fs::read_to_string(doc).unwrap();
        for span in named_code(&text) {
            checked += 1;
            let missing: Vec<&str> =
                span.trim_end_matches("()").split("::").filter(|segment| !known.contains(*segment)).collect();
            if !missing.is_empty() {
                gone.push(format!("{}: `{span}` ({} not in the code)", doc.display(), missing.join(", ")));
            }
        }
    }
    assert!(checked > 50, "only {checked} names found in the docs: the scan is broken");
    assert!(gone.is_empty(), "the docs name code that no longer exists:\n{}", gone.join("\n"));
}

#[test]
fn named_code_finds_paths_and_calls_and_nothing_else() {
    let text = "Use `Optimizer::enqueue` or `run()`; not `--flag`, `a b`, `x.y()` nor `3::4`.";
    assert_eq!(named_code(text), ["Optimizer::enqueue", "run()"]);
}
