//! Light start-up: `propulate-rs` itself does not link libtorch; a CNN run is handed over to the
//! CNN executable beside it (`propulate-rs-cnn`), which does (with the `tch` feature). Everything
//! else (`--version`, `report`, `env`, functions, command trials) starts without it.

mod common;

use std::process::Command;

/// The shared libraries `binary` names as needed (its dynamic section).
fn needed(binary: &std::path::Path) -> String {
    let out = Command::new("readelf").arg("-d").arg(binary).output().expect("readelf runs (binutils)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("(NEEDED)")).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_main_binary_needs_no_libtorch_and_starts_without_it() {
    let main = needed(&common::bin());
    assert!(main.contains("libc.so"), "no dynamic section read: {main}");
    assert!(!main.contains("libtorch"), "propulate-rs links libtorch:\n{main}");
    // With no library path at all it still answers.
    let out = Command::new(common::bin()).arg("--version").env_remove("LD_LIBRARY_PATH").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("propulate-rs "));
}

/// The CNN executable is the one that links libtorch, when built with it.
#[cfg(feature = "tch")]
#[test]
fn the_cnn_executable_links_libtorch() {
    let cnn = common::bin().with_file_name("propulate-rs-cnn");
    let needs = needed(&cnn);
    assert!(needs.contains("libtorch"), "propulate-rs-cnn does not link libtorch:\n{needs}");
}

/// A CNN run of a `propulate-rs` without its CNN executable beside it says where it looked and how
/// to build it; with it there, the run is the CNN executable's (tests/cnn.rs runs the CNN task
/// through `propulate-rs`).
#[cfg(feature = "cnn")]
#[test]
fn a_cnn_run_without_the_cnn_executable_says_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("propulate-rs");
    std::fs::copy(common::bin(), &alone).unwrap();
    let out = Command::new(&alone).args(["--local-ranks", "1", "--no-checkpoint"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let beside = dir.path().join("propulate-rs-cnn");
    assert!(
        stderr.contains(&format!(
            "the CNN task runs in propulate-rs-cnn, which should be beside this binary ({})",
            beside.display()
        )) && stderr.contains("cargo build --release --features cnn,tch"),
        "{stderr}"
    );
    // Under mpirun, rank 0 alone says it (every rank met it before MPI started).
    let mut job = common::mpirun(3);
    job.arg(&alone).args(["--no-checkpoint"]);
    let out = common::run_with_timeout(job, std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.matches("the CNN task runs in propulate-rs-cnn").count(), 1, "{stderr}");
}
