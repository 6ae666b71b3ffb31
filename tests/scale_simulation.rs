//! The scale simulation (`benches/scale_sim.py`) on the measured data in `benches/scale-data/`: it
//! reproduces the real runs it is checked against, and what it counts per evaluation follows from
//! the island's size.

use std::process::Command;

fn sim(args: &[&str], costs: &str, calibration: &str) -> (bool, String, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg(format!("{root}/benches/scale_sim.py"))
        .args(args)
        .env("COSTS", format!("{root}/benches/scale-data/{costs}"))
        .env("CALIBRATION", format!("{root}/benches/scale-data/{calibration}"))
        .output()
        .expect("python3 runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_simulation_reproduces_the_measured_runs() {
    for (costs, calibration) in
        [("rank_costs-h200.jsonl", "utilization-h200.jsonl"), ("rank_costs-vm.jsonl", "utilization-vm.jsonl")]
    {
        let (ok, stdout, stderr) = sim(&["check", "--max-error", "0.05"], costs, calibration);
        assert!(ok, "{calibration}:\n{stdout}\n{stderr}");
        let rows = stdout.lines().filter(|l| l.contains(" mpi ") || l.contains(" local ")).count();
        assert!(rows >= 4, "every real run is compared:\n{stdout}");
    }
}

#[test]
fn a_worker_sends_each_result_to_its_island_and_waits_for_the_slowest_at_the_end() {
    let one = |spread: &str| {
        let args = ["one", "--workers", "256", "--island", "32", "--eval-s", "60", "--generations", "20"];
        let (ok, stdout, stderr) =
            sim(&[&args[..], &["--spread", spread]].concat(), "rank_costs-h200.jsonl", "utilization-h200.jsonl");
        assert!(ok, "{stdout}\n{stderr}");
        let figure = |key: &str| -> f64 {
            let line = stdout.lines().find(|l| l.contains(&format!("\"{key}\""))).expect(key);
            line.split(':').nth(1).unwrap().trim().trim_end_matches(',').parse().unwrap()
        };
        (figure("messages_per_eval"), figure("end_wait_share"), figure("utilization"))
    };
    let (messages, wait_equal, util_equal) = one("0");
    assert_eq!(messages, 31.0, "one message to each of the 31 other workers of the island");
    assert!(wait_equal < 1e-3, "equal evaluations end together: {wait_equal}");
    let (_, wait_spread, util_spread) = one("0.5");
    assert!(wait_spread > 0.01, "evaluations of 30-90 s leave workers waiting for the last: {wait_spread}");
    assert!(util_spread < util_equal);
}
