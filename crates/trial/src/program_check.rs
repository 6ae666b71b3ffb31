//! Whether the trial's program can be started at all, checked on every rank when the run is set
//! up: a program that is not there, not executable, or names an interpreter that is not there is
//! one clear error before anything is evaluated, instead of every trial of the run failing with
//! "could not be started". The program is the command's first word, found as the process start
//! finds it: a path relative to the rank's directory if it holds a `/`, else on `PATH`.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Check `program` with `path` as the search path (`PATH`).
pub(crate) fn check_program(program: &str, path: Option<&OsStr>) -> Result<(), String> {
    let found = if program.contains('/') {
        PathBuf::from(program)
    } else {
        find_on_path(program, path).ok_or_else(|| {
            format!(
                "the trial program `{program}` is not on PATH ({}): give its path (e.g. `-- ./{program}`) or install it",
                path.map_or_else(|| "unset".into(), |p| p.to_string_lossy().into_owned())
            )
        })?
    };
    let meta = std::fs::metadata(&found).map_err(|e| format!("the trial program `{program}`: {e}"))?;
    if meta.is_dir() {
        return Err(format!("the trial program `{program}` is a directory"));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "the trial program `{program}` is not executable: `chmod +x {program}`, or run it through its \
             interpreter (e.g. `-- bash {program}`, `-- python3 {program}`)"
        ));
    }
    check_interpreter(program, &found, path)
}

/// A script's `#!` line names an interpreter that must exist (`#!/usr/bin/env NAME`: NAME on PATH).
fn check_interpreter(program: &str, script: &Path, path: Option<&OsStr>) -> Result<(), String> {
    let Ok(bytes) = std::fs::read(script).map(|b| b.into_iter().take(256).collect::<Vec<u8>>()) else {
        // Executable but unreadable (mode --x): the start itself will tell.
        return Ok(());
    };
    let Some(line) = bytes.strip_prefix(b"#!") else { return Ok(()) };
    let line = String::from_utf8_lossy(line.split(|&b| b == b'\n').next().unwrap_or_default()).into_owned();
    let mut words = line.split_whitespace();
    let Some(interpreter) = words.next() else { return Ok(()) };
    let missing = |what: &str| format!("the trial program `{program}` starts with `#!{}`, but {what}", line.trim());
    if !Path::new(interpreter).is_file() {
        return Err(missing(&format!("{interpreter} does not exist")));
    }
    if Path::new(interpreter).file_name() == Some(OsStr::new("env"))
        && let Some(name) = words.find(|w| !w.starts_with('-'))
        && !name.contains('=')
        && find_on_path(name, path).is_none()
    {
        return Err(missing(&format!("`{name}` is not on PATH")));
    }
    Ok(())
}

/// The first executable file named `name` in the directories of `path`.
fn find_on_path(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?).map(|dir| dir.join(name)).find(|candidate| {
        std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> String {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path.display().to_string()
    }

    #[test]
    fn programs_that_can_start_pass_and_the_others_are_named_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = std::env::var_os("PATH");
        let path = path.as_deref();
        assert_eq!(check_program("sh", path), Ok(()));
        assert_eq!(check_program(&write(dir, "ok.sh", "#!/bin/sh\necho hi\n", 0o755), path), Ok(()));
        assert_eq!(check_program(&write(dir, "env.sh", "#!/usr/bin/env sh\necho hi\n", 0o755), path), Ok(()));
        assert_eq!(check_program(&write(dir, "binary", "\x7fELF...", 0o755), path), Ok(()));

        let e = check_program("no-such-program-x", path).unwrap_err();
        assert!(e.contains("`no-such-program-x` is not on PATH") && e.contains("-- ./no-such-program-x"), "{e}");
        let e = check_program(&dir.join("missing.sh").display().to_string(), path).unwrap_err();
        assert!(e.contains("missing.sh`: No such file"), "{e}");
        let e = check_program(&write(dir, "plain.sh", "echo hi\n", 0o644), path).unwrap_err();
        assert!(e.contains("is not executable: `chmod +x") && e.contains("-- bash"), "{e}");
        let e = check_program(&dir.display().to_string(), path).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let e = check_program(&write(dir, "gone.sh", "#!/no/such/bash -e\necho\n", 0o755), path).unwrap_err();
        assert!(e.contains("starts with `#!/no/such/bash -e`, but /no/such/bash does not exist"), "{e}");
        let e = check_program(&write(dir, "envgone.py", "#!/usr/bin/env no-such-python-x\n", 0o755), path);
        assert!(e.unwrap_err().contains("but `no-such-python-x` is not on PATH"));
        let e = check_program("sh", Some(OsStr::new(""))).unwrap_err();
        assert!(e.contains("is not on PATH ()"), "{e}");
    }
}
