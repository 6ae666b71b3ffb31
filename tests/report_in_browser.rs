//! report.html as a person sees it: a real search under mpirun (two islands, command trials with
//! learning curves, failures and pruning) writes it, and Debian's Chromium, headless, opens it
//! from the file: every chart is drawn (SVG paths in each), the table holds every trial sorted by
//! loss with failed and pruned ones giving their reason, and no script error is raised. A page with
//! a script error planted in it is caught the same way, so the check can fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{TRAINING, TRAINING_SPACE as SPACE, bin, mpirun, report_data, run_with_timeout};

/// Chromium: PROPULATE_CHROMIUM (the test command sets it), else scripts/install-chromium.sh's.
fn chromium() -> PathBuf {
    std::env::var_os("PROPULATE_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| {
        let out = Command::new("bash").arg("scripts/install-chromium.sh").output().expect("bash runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// The page's DOM after its scripts ran, and the browser's log (console messages included).
fn open_headless(page: &Path, profile: &Path) -> (String, String) {
    let mut cmd = Command::new(chromium());
    // The flags of a closed network: no background connections, no first-run work.
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
        "--dump-dom",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("file://{}", page.display()));
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    assert!(out.status.success(), "chromium: {}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Script errors the browser saw: uncaught exceptions in its console log, and the page's own record.
fn script_errors(dom: &str, log: &str) -> Vec<String> {
    let mut errors: Vec<String> =
        log.lines().filter(|l| l.contains(":CONSOLE") && l.contains("Uncaught")).map(str::to_string).collect();
    if let Some(at) = dom.find("data-report-errors=\"") {
        errors.push(dom[at..].lines().next().unwrap_or_default().to_string());
    }
    errors
}

/// SVG paths drawn in each chart (`data-chart` containers), by chart name, in page order.
fn paths_per_chart(dom: &str) -> Vec<(String, usize)> {
    let mut starts: Vec<(usize, String)> = dom
        .match_indices("data-chart=\"")
        .map(|(at, m)| (at, dom[at + m.len()..].split('"').next().unwrap().to_string()))
        .collect();
    // A chart ends where the next begins, the last where its section does.
    starts.push((dom.len(), String::new()));
    starts
        .windows(2)
        .map(|w| {
            let inside = &dom[w[0].0..w[1].0];
            let inside = &inside[..inside.find("</section>").unwrap_or(inside.len())];
            (w[0].1.clone(), inside.matches("<path").count())
        })
        .collect()
}

#[test]
fn the_report_of_a_real_search_draws_every_chart_in_chromium_without_script_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let (space, out) = (tmp.path().join("space.toml"), tmp.path().join("out"));
    std::fs::write(&space, SPACE).unwrap();
    let mut run = mpirun(4);
    run.arg(bin())
        .args(["--islands", "2", "--generations", "10", "--early-stop", "median", "-q"])
        .arg("--space")
        .arg(&space)
        .arg("--out")
        .arg(&out)
        .arg("--checkpoint")
        .arg(tmp.path().join("ck"))
        .args(["--", "python3", "-c", TRAINING, "{lr}", "{width}", "{layers}", "{act}"]);
    let ran = run_with_timeout(run, Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(ran.status.success(), "{stdout}{}", String::from_utf8_lossy(&ran.stderr));
    assert!(stdout.contains(&format!("the report: {}/report.html", out.display())), "{stdout}");
    let data = report_data(&out);
    let (failed, pruned) = (data["failed"].as_u64().unwrap(), data["pruned"].as_u64().unwrap());
    assert_eq!(data["total"], 40);
    assert!(failed > 0 && pruned > 0, "the search has failures and pruned trials to show: {data}");

    let page = out.join("report.html");
    let (dom, log) = open_headless(&page, &tmp.path().join("profile"));
    assert_eq!(script_errors(&dom, &log), Vec::<String>::new());
    assert!(dom.contains("data-report-state=\"drawn\""), "the script ran to its end");
    let charts = paths_per_chart(&dom);
    let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["time", "param:lr", "param:width", "param:layers", "param:act", "parallel", "curves"],
        "one chart per view and parameter"
    );
    for (name, paths) in &charts {
        // Axes, grid lines and the marks: a chart drawn with no data has its axes only.
        assert!(*paths > 20, "chart {name} has {paths} SVG paths: not drawn");
    }

    // The table: every trial, best first, failures last with their reason, pruned ones marked.
    let table = &dom[dom.find("<table id=\"trials\"").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    let rows: Vec<&str> = table.split("<tr class=\"").skip(1).collect();
    assert_eq!(rows.len(), 40, "one row per trial");
    let states: Vec<&str> = rows.iter().map(|r| r.split('"').next().unwrap()).collect();
    assert_eq!(states.iter().filter(|s| **s == "failed").count() as u64, failed);
    assert!(states[states.len() - failed as usize..].iter().all(|s| *s == "failed"), "failures sort last");
    let loss_of = |row: &str| -> f64 { row.split("<td>").nth(4).unwrap().split('<').next().unwrap().parse().unwrap() };
    let losses: Vec<f64> = rows[..rows.len() - failed as usize].iter().map(|r| loss_of(r)).collect();
    assert!(losses.windows(2).all(|w| w[0] <= w[1]), "sorted by loss: {losses:?}");
    assert!(table.contains("exited with status 1; its stderr ends: diverged"), "a failure's reason is shown");
    assert!(table.contains("stopped early after step"), "a pruned trial says where it stopped");
    assert!(dom.contains("<td>propagator</td>"), "the run's settings are listed");

    // The same check on a page with an error planted: it must be seen.
    let html = std::fs::read_to_string(&page).unwrap();
    let end = html.rfind("</body>").unwrap();
    let broken = tmp.path().join("broken.html");
    std::fs::write(&broken, format!("{}<script>noSuchFunction();</script>{}", &html[..end], &html[end..])).unwrap();
    let (dom, log) = open_headless(&broken, &tmp.path().join("profile"));
    let errors = script_errors(&dom, &log);
    assert!(errors.iter().any(|e| e.contains("noSuchFunction")), "{errors:?}");
}

/// Run `run` (which writes its results into `out`), open its report headless with a profile in
/// `work`, check that its script ran to the end without errors, and return the page's DOM.
fn run_and_open(run: Command, out: &Path, work: &Path) -> String {
    let ran = run_with_timeout(run, Duration::from_secs(300));
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let (dom, log) = open_headless(&out.join("report.html"), &work.join("profile"));
    assert_eq!(script_errors(&dom, &log), Vec::<String>::new());
    assert!(dom.contains("data-report-state=\"drawn\""), "the script ran to its end");
    dom
}

/// A run with three objectives: the Pareto front section comes first with one chart per pair of
/// objectives, each drawn, and the summary names the front instead of a best loss.
#[test]
fn the_report_of_a_three_objective_run_draws_a_front_chart_per_pair() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let mut run = mpirun(4);
    run.arg(bin())
        .args(["--function", "dtlz2", "--islands", "2", "--generations", "100", "--no-checkpoint", "-q"])
        .arg("--out")
        .arg(&out);
    let dom = run_and_open(run, &out, tmp.path());
    let charts = paths_per_chart(&dom);
    let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).take(4).collect();
    assert_eq!(names, ["front:f1:f2", "front:f1:f3", "front:f2:f3", "time"], "the front's pairs first");
    for (name, paths) in &charts[..3] {
        assert!(*paths > 20, "chart {name} has {paths} SVG paths: not drawn");
    }
    let front = report_data(&out)["front"].as_array().unwrap().len();
    assert!(
        dom.contains(&format!("Pareto front of <b>{front}</b> (f1 min, f2 min, f3 min)")),
        "the summary names the front"
    );
}

/// Population-based training: the members chart is drawn (each evaluation at the steps its
/// member reached, joined to the state it continued), after the learning curves.
#[test]
fn the_report_of_a_population_based_training_draws_its_members() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, ck) = (tmp.path().join("out"), tmp.path().join("ck"));
    let space = tmp.path().join("space.toml");
    std::fs::write(&space, "[params]\nlr = { type = \"float\", low = 0.01, high = 0.5, log = true }\n").unwrap();
    let toy = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trials/pbt_toy.sh");
    let mut run = mpirun(4);
    run.arg(bin()).arg("--space").arg(&space);
    run.args(["--propagator", "pbt", "--pbt-interval", "2", "--pbt-steps", "10", "--generations", "50", "-q"]);
    run.arg("--checkpoint").arg(&ck).arg("--out").arg(&out).arg("--").arg(&toy).arg("{lr}");
    let dom = run_and_open(run, &out, tmp.path());
    let charts = paths_per_chart(&dom);
    let members = charts.iter().find(|(n, _)| n == "members").expect("a members chart");
    assert!(members.1 > 20, "the members chart has {} SVG paths: not drawn", members.1);
    let trials = report_data(&out)["trials"].as_array().unwrap().clone();
    assert!(trials.iter().all(|t| t["lineage"]["steps"] == 2), "every trial carries its lineage");
}
