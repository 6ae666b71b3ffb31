//! `propulate-rs report CHECKPOINT --watch SECONDS` beside a running job: it keeps report.html (in
//! the checkpoint directory) current while the run writes, ends by itself when the run has ended,
//! and the run, interrupted and resumed with a watcher beside it, records exactly what the same run
//! records without one.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, report_data, run_with_timeout};

const SPACE: &str = r#"
[params]
x = { type = "float", low = -5.0, high = 5.0 }
y = { type = "float", low = -5.0, high = 5.0 }
"#;

/// A command trial as cheap as one can be (a process per evaluation), so that the run lasts long
/// enough for a watcher to see it grow; deterministic, so that two runs can be compared.
const TRIAL: [&str; 5] =
    ["sh", "-c", r#"awk -v x="$0" -v y="$1" "BEGIN { print \"propulate: loss=\" x*x + y*y }""#, "{x}", "{y}"];

/// One segment of the run: one worker (so its trials follow from the seed alone), up to
/// `generations`, resuming the checkpoint in `dir` if it holds one.
fn run_segment(dir: &Path, space: &Path, generations: &str) {
    let mut run = Command::new(bin());
    run.args(["--local-ranks", "1", "--seed", "3", "-q", "--generations", generations])
        .arg("--space")
        .arg(space)
        .arg("--checkpoint")
        .arg(dir)
        .arg("--")
        .args(TRIAL);
    let out = run_with_timeout(run, Duration::from_secs(120));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The trials recorded in `dir` as `report` writes them, without the columns of time.
fn recorded_trials(dir: &Path, out: &Path) -> Vec<String> {
    let mut report = Command::new(bin());
    report.arg("report").arg(dir).arg("--out").arg(out);
    let done = run_with_timeout(report, Duration::from_secs(60));
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(!String::from_utf8_lossy(&done.stderr).contains("warning"), "{}", String::from_utf8_lossy(&done.stderr));
    let csv = std::fs::read_to_string(out.join("trials.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let timeless: Vec<usize> =
        (0..header.len()).filter(|&i| header[i] != "start" && header[i] != "duration_s").collect();
    csv.lines()
        .map(|row| {
            let fields: Vec<&str> = row.split(',').collect();
            timeless.iter().map(|&i| fields[i]).collect::<Vec<_>>().join(",")
        })
        .collect()
}

/// `report --watch` on `dir`, started before `segment` runs; returns what it printed once it has
/// ended by itself after the run.
fn watched(dir: &Path, segment: impl FnOnce()) -> String {
    let watcher = Command::new(bin())
        .arg("report")
        .arg(dir)
        .args(["--watch", "0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    segment();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut watcher = watcher;
    while watcher.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            watcher.kill().unwrap();
            panic!("the watcher did not end with the run");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = watcher.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("the run has ended"), "{stdout}");
    stdout
}

/// The evaluation counts of the watcher's "report: N evaluations" lines.
fn reported_counts(stdout: &str) -> Vec<usize> {
    stdout.lines().filter_map(|l| l.strip_prefix("report: ")?.split(' ').next()?.parse().ok()).collect()
}

#[test]
fn a_run_watched_while_it_runs_and_resumes_records_what_it_records_unwatched() {
    let tmp = tempfile::tempdir().unwrap();
    let space = tmp.path().join("space.toml");
    std::fs::write(&space, SPACE).unwrap();

    let plain = tmp.path().join("plain");
    run_segment(&plain, &space, "40");
    run_segment(&plain, &space, "80");

    let watched_dir = tmp.path().join("watched");
    let first = watched(&watched_dir, || run_segment(&watched_dir, &space, "40"));
    let second = watched(&watched_dir, || run_segment(&watched_dir, &space, "80"));
    let (first, second) = (reported_counts(&first), reported_counts(&second));
    assert_eq!(first.last(), Some(&40), "{first:?}");
    // Started on the ended first segment, the second watcher waits for the resume (unless the
    // resume has written before the watcher's first look).
    assert!(second.first().is_some_and(|&n| n >= 40) && second.last() == Some(&80), "{second:?}");
    for counts in [&first, &second] {
        assert!(counts.windows(2).all(|w| w[0] < w[1]), "a report only when the run has grown: {counts:?}");
    }
    let between = first.iter().chain(&second).filter(|&&n| n != 40 && n != 80).count();
    assert!(between > 0, "the watcher saw the run while it ran: {first:?} {second:?}");

    let report = report_data(&watched_dir);
    assert_eq!(report["total"], 80, "the watcher's last report has every evaluation");
    assert_eq!(report["settings"]["task"], "command");

    let unwatched = recorded_trials(&plain, &tmp.path().join("plain-out"));
    let with_watcher = recorded_trials(&watched_dir, &tmp.path().join("watched-out"));
    assert_eq!(with_watcher.len(), 81, "80 trials and the header");
    assert_eq!(with_watcher, unwatched, "the watcher changed what the run did");
}

#[test]
fn a_watch_interval_below_a_tenth_of_a_second_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["0", "0.01", "NaN", "-1"] {
        let mut cmd = Command::new(bin());
        cmd.arg("report").arg(tmp.path()).arg(format!("--watch={bad}"));
        let out = run_with_timeout(cmd, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--watch takes seconds, at least 0.1"), "{bad}: {stderr}");
    }
}

/// A directory that is no checkpoint (a stray file beside a manifest) stays one: the watch ends
/// with the error within its bound (10 s) instead of trying again for ever.
#[test]
fn a_watch_on_what_is_no_checkpoint_ends_with_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("manifest.json"), "").unwrap();
    let mut cmd = Command::new(bin());
    cmd.arg("report").arg(tmp.path()).arg("--watch=0.5");
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("manifest.json") && stderr.contains("--watch gives up"), "{stderr}");
}
