//! `scripts/libtorch-env.sh` with `PROPULATE_LIBTORCH`: an existing torch (a torch directory or a
//! virtual environment) is used as it is, nothing is installed, and the version check is bypassed
//! and libtorch_cuda kept linked exactly when that torch needs it. Stand-in torch directories
//! (version file, empty libraries) make it testable without downloading one.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A stand-in torch directory at `dir`: include/, lib/libtorch_cpu.so, optionally
/// lib/libtorch_cuda.so, and the version in `version_file` (`version.py` as in a wheel,
/// `build-version` as in a libtorch zip).
fn fake_torch(dir: &Path, version_file: &str, version: &str, cuda: bool) {
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::write(dir.join("lib/libtorch_cpu.so"), "").unwrap();
    if cuda {
        std::fs::write(dir.join("lib/libtorch_cuda.so"), "").unwrap();
    }
    let text = match version_file {
        "version.py" => format!("from typing import Optional\n__version__ = '{version}'\ndebug = False\n"),
        _ => format!("{version}\n"),
    };
    std::fs::write(dir.join(version_file), text).unwrap();
}

/// What sourcing the script leaves: its status, the variables it sets, and its stderr.
struct Sourced {
    ok: bool,
    /// Where the script was told to link libtorch's NCCL (PROPULATE_NCCL_LINK_DIR).
    nccl_link: PathBuf,
    vars: std::collections::HashMap<String, String>,
    stderr: String,
}

fn source_env(propulate_libtorch: &Path, venv: &Path) -> Sourced {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/libtorch-env.sh");
    // `return 1` in the script must leave the sourcing shell running: it prints the variables after.
    let shell = format!(
        "source '{}'; status=$?; echo status=$status; for v in LIBTORCH LIBTORCH_BYPASS_VERSION_CHECK \
         PROPULATE_LINK_TORCH_CUDA LD_LIBRARY_PATH; do echo \"$v=${{!v-<unset>}}\"; done",
        script.display()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(shell)
        .env("PROPULATE_LIBTORCH", propulate_libtorch)
        // Where the default route would install: it must stay untouched.
        .env("PROPULATE_TORCH_VENV", venv)
        .env("LD_LIBRARY_PATH", "/before")
        .env("PROPULATE_NCCL_LINK_DIR", venv.with_file_name("nccl-link"))
        .env_remove("LIBTORCH_BYPASS_VERSION_CHECK")
        .env_remove("PROPULATE_LINK_TORCH_CUDA")
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let vars: std::collections::HashMap<String, String> =
        stdout.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert!(!venv.exists(), "nothing may be installed when PROPULATE_LIBTORCH is given");
    Sourced {
        ok: vars.get("status").map(String::as_str) == Some("0"),
        nccl_link: venv.with_file_name("nccl-link"),
        vars,
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    }
}

impl Sourced {
    fn var(&self, name: &str) -> &str {
        self.vars.get(name).unwrap_or_else(|| panic!("{name} not printed: {:?}", self.vars))
    }

    /// LIBTORCH is `torch`, put first on LD_LIBRARY_PATH (after a link to the wheel's NCCL beside
    /// it, where it has one); bypass and cuda linking as expected.
    fn check(&self, torch: &Path, bypass: bool, link_cuda: bool) {
        assert!(self.ok, "{}", self.stderr);
        assert_eq!(self.var("LIBTORCH"), torch.to_str().unwrap());
        let nccl = torch.join("../nvidia/nccl/lib/libnccl.so.2");
        if nccl.exists() {
            let link = self.nccl_link.join("libnccl.so");
            assert_eq!(std::fs::canonicalize(&link).unwrap(), std::fs::canonicalize(&nccl).unwrap());
            let want = format!("{}:{}/lib:/before", self.nccl_link.display(), torch.display());
            assert_eq!(self.var("LD_LIBRARY_PATH"), want);
        } else {
            assert_eq!(self.var("LD_LIBRARY_PATH"), format!("{}/lib:/before", torch.display()));
            assert!(!self.nccl_link.exists(), "no NCCL beside the torch: no link");
        }
        let set = |yes: bool| if yes { "1" } else { "<unset>" };
        assert_eq!(self.var("LIBTORCH_BYPASS_VERSION_CHECK"), set(bypass), "{}", self.stderr);
        assert_eq!(self.var("PROPULATE_LINK_TORCH_CUDA"), set(link_cuda), "{}", self.stderr);
    }
}

#[test]
fn a_torch_2_11_venv_gets_the_bypass_and_the_cuda_link() {
    let work = tempfile::tempdir().unwrap();
    let venv = work.path().join("opt/torch/.venv");
    let torch = venv.join("lib/python3.12/site-packages/torch");
    fake_torch(&torch, "version.py", "2.11.0+cu130", true);
    source_env(&venv, &work.path().join("no-install")).check(&torch, true, true);
    // With the wheel's NCCL beside it, as on the GPU machine: linked as libnccl.so, first.
    let nccl = venv.join("lib/python3.12/site-packages/nvidia/nccl/lib");
    std::fs::create_dir_all(&nccl).unwrap();
    std::fs::write(nccl.join("libnccl.so.2"), "").unwrap();
    let with_nccl = work.path().join("with-nccl");
    std::fs::create_dir(&with_nccl).unwrap();
    source_env(&venv, &with_nccl.join("no-install")).check(&torch, true, true);
    assert!(with_nccl.join("nccl-link/libnccl.so").exists());
    // The torch directory itself works as well.
    source_env(&torch, &work.path().join("no-install")).check(&torch, true, true);
}

#[test]
fn a_torch_2_9_0_elsewhere_needs_no_bypass() {
    let work = tempfile::tempdir().unwrap();
    let torch = work.path().join("elsewhere/lib/python3.11/site-packages/torch");
    fake_torch(&torch, "version.py", "2.9.0+cu128", true);
    source_env(&work.path().join("elsewhere"), &work.path().join("no-install")).check(&torch, false, true);
    // A CPU libtorch zip of another version: the bypass, nothing CUDA to link.
    let zip = work.path().join("libtorch");
    fake_torch(&zip, "build-version", "2.9.1+cpu", false);
    source_env(&zip, &work.path().join("no-install")).check(&zip, true, false);
}

/// The real 2.9.0 install of scripts/install-libtorch.sh, reached by another path (a symbolic
/// link), when this checkout has one (CI installs it before the tests).
#[test]
fn the_installed_torch_by_another_path_needs_no_bypass() {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join(".torch");
    if !installed.join(".complete").exists() {
        // CI's test command installs it first (scripts/test.sh): there, its absence is a failure.
        assert!(std::env::var_os("CI").is_none(), "CI without .torch/: scripts/test.sh installs it before the tests");
        eprintln!("SKIPPED: no .torch/ install in this checkout (scripts/install-libtorch.sh makes one)");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let link = work.path().join("torch-venv");
    std::os::unix::fs::symlink(&installed, &link).unwrap();
    let torch: PathBuf = std::fs::read_dir(link.join("lib"))
        .unwrap()
        .map(|e| e.unwrap().path().join("site-packages/torch"))
        .find(|t| t.join("lib/libtorch_cpu.so").exists())
        .expect("torch in .torch/lib/python3*/site-packages");
    source_env(&link, &work.path().join("no-install")).check(&torch, false, true);
}

#[test]
fn a_directory_without_torch_is_a_clear_error() {
    let work = tempfile::tempdir().unwrap();
    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let missing = work.path().join("missing");
    let unversioned = work.path().join("unversioned");
    fake_torch(&unversioned, "version.py", "2.11.0", true);
    std::fs::remove_file(unversioned.join("version.py")).unwrap();
    for (dir, message) in [
        (&empty, "is neither a torch directory"),
        (&missing, "is not a directory"),
        (&unversioned, "cannot tell its version"),
    ] {
        let s = source_env(dir, &work.path().join("no-install"));
        assert!(!s.ok, "{dir:?} was accepted");
        assert!(s.stderr.contains(message), "{dir:?}: {}", s.stderr);
        assert_eq!(s.var("LIBTORCH"), "<unset>");
        assert_eq!(s.var("LD_LIBRARY_PATH"), "/before");
    }
}
