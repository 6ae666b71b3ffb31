//! Every file a run writes into its checkpoint directory is named by the registry
//! (`propulate::files`): real runs under mpirun (a command trial with two objectives, per-rank logs
//! inside the checkpoint and a snapshot at every end and resume; population-based training with its
//! states), their resume and `report`, then a walk of the whole directory. A file written under a
//! name the registry does not know fails here, naming it.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{bin, mpirun, run_with_timeout, succeeded};
use propulate::files::{Kind, OutputFile, classify};

/// Every path under `root`, relative to it, with whether it is a directory.
fn walk(root: &Path) -> Vec<(PathBuf, bool)> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let is_dir = path.is_dir();
            found.push((path.strip_prefix(root).unwrap().to_path_buf(), is_dir));
            if is_dir {
                pending.push(path);
            }
        }
    }
    found
}

/// The kinds of everything in `ck`; fails on a path the registry does not name.
fn kinds(ck: &Path) -> Vec<Kind> {
    walk(ck)
        .into_iter()
        .map(|(path, is_dir)| {
            classify(&path, is_dir).unwrap_or_else(|| {
                panic!(
                    "{} (a {}) is not named by the registry in crates/engine/src/files",
                    path.display(),
                    if is_dir { "directory" } else { "file" }
                )
            })
        })
        .collect()
}

fn job(np: usize, dir: &Path) -> std::process::Command {
    let mut c = mpirun(np);
    c.env("PROPULATE_SNAPSHOT_BYTES", "0").arg(bin());
    c.arg("--checkpoint").arg(dir.join("ck")).arg("--quiet");
    c
}

#[test]
fn every_file_of_a_command_trial_run_its_resume_and_report_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("space.toml"), common::TWO_OBJECTIVES_SPACE).unwrap();
    std::fs::write(dir.path().join("trial.py"), common::TWO_OBJECTIVES).unwrap();
    let ck = dir.path().join("ck");
    for generations in ["3", "5"] {
        let mut c = job(2, dir.path());
        c.arg("--space").arg(dir.path().join("space.toml")).arg("--log-dir").arg(ck.join("logs"));
        c.args(["--objectives", "accuracy:max,size:min", "--generations", generations]);
        c.args(["--", "python3"]).arg(dir.path().join("trial.py")).arg("{x}");
        succeeded(&run_with_timeout(c, Duration::from_secs(300)));
    }
    let mut report = std::process::Command::new(bin());
    report.arg("report").arg(&ck);
    succeeded(&run_with_timeout(report, Duration::from_secs(120)));

    let kinds = kinds(&ck);
    for expected in [
        Kind::Manifest,
        Kind::JournalSegment,
        Kind::Snapshot,
        Kind::Lock,
        Kind::Output(OutputFile::Front),
        Kind::Output(OutputFile::Report),
        Kind::LogDir,
        Kind::RankLog,
        Kind::TrialsDir,
        Kind::TrialDir,
    ] {
        assert!(
            kinds.contains(&expected),
            "no {expected:?} among {kinds:?}: the runs did not write what this test covers"
        );
    }
    // The program writes only its result file: nothing else in a trial's directory is its own.
    assert!(!kinds.contains(&Kind::TrialProgramFile), "{kinds:?}");
}

#[test]
fn every_file_of_a_population_based_training_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("space.toml"), "[params]\nlr = { type = \"float\", low = 0.01, high = 0.5 }\n")
        .unwrap();
    let toy = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trials/pbt_toy.sh");
    let mut c = job(2, dir.path());
    c.arg("--space").arg(dir.path().join("space.toml"));
    c.args(["--propagator", "pbt", "--pbt-interval", "2", "--pbt-steps", "6", "--seed", "1"]);
    c.arg("--").arg(toy).arg("{lr}");
    succeeded(&run_with_timeout(c, Duration::from_secs(300)));

    let kinds = kinds(&dir.path().join("ck"));
    for expected in [Kind::StatesDir, Kind::StateDir, Kind::StateContent, Kind::TrialProgramFile] {
        assert!(kinds.contains(&expected), "no {expected:?} among {kinds:?}");
    }
}
