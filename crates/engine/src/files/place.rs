//! Where a path leads: the one answer to "are these the same directory" and "is this inside that"
//! for paths that may not exist yet (an `--out` a run will make) as well as for links to a
//! checkpoint (`ck` and a link to it are one place).

use std::path::{Component, Path, PathBuf};

/// `path` made absolute against the working directory, its longest existing ancestor resolved by
/// the file system (links followed, `..` taken physically) and the rest, which does not exist
/// yet, taken as the words say (`.` dropped, `..` the parent).
pub fn resolved(path: &Path) -> PathBuf {
    let absolute =
        if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    let mut out = loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            break real;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => break PathBuf::new(),
        }
    };
    for c in rest.into_iter().rev() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether `a` and `b` lead to one place ([`resolved`]).
pub fn same_place(a: &Path, b: &Path) -> bool {
    resolved(a) == resolved(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_and_links_of_one_directory_are_one_place() {
        let root = tempfile::tempdir().unwrap();
        let ck = root.path().join("ck");
        std::fs::create_dir(&ck).unwrap();
        assert!(same_place(&ck, &root.path().join("./x/../ck/")));
        assert!(!same_place(&ck, &root.path().join("ck2")));
        #[cfg(unix)]
        {
            let link = root.path().join("link");
            std::os::unix::fs::symlink(&ck, &link).unwrap();
            assert!(same_place(&ck, &link));
            // A place that does not exist yet, reached through the link, is inside the checkpoint.
            assert!(resolved(&link.join("results/./a")).starts_with(resolved(&ck)));
            assert_eq!(resolved(&link.join("new/../b")), resolved(&ck).join("b"));
        }
    }
}
