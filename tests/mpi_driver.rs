//! Driver tests against the built binary: the same scenarios under `mpirun` (MPI transport) and with
//! in-process ranks (local transport). They check results, not just that nothing crashed.

mod common;

use common::{BOTH, Transport, f64_of, propulate, propulate_raw, report_data};
use propulate::functions::{PAPER_NAMES, benchmark};
use propulate::journal::{Replay, island_population, read_checkpoint};
use propulate::population::ALL_COPIES;
use propulate::rng::worker_rng;
use std::collections::HashSet;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// Checks shared by every successful run: budget, table rows, unique identities, consistency.
fn check_run(best: &serde_json::Value, dir: &std::path::Path, workers: u64, generations: u64) {
    assert_eq!(best["evaluations"].as_u64(), Some(workers * generations), "{best}");
    assert_eq!(best["consistent"], serde_json::json!(true), "island populations differ: {best}");
    let csv = std::fs::read_to_string(dir.join("trials.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len() as u64, workers * generations);
    let ids: HashSet<(String, String)> = rows
        .iter()
        .map(|r| {
            let f: Vec<&str> = r.split(',').collect();
            (f[1].to_string(), f[2].to_string())
        })
        .collect();
    assert_eq!(ids.len(), rows.len(), "an evaluation was recorded twice");
    let jsonl = std::fs::read_to_string(dir.join("trials.jsonl")).unwrap();
    assert_eq!(jsonl.lines().count(), rows.len());
    let report = report_data(dir);
    assert_eq!(report["total"], rows.len(), "the report shows every evaluation");
    assert_eq!(report["evaluations"], rows.len());
}

/// Whether the median best loss of `run` over seeds 0, 1 and 2 is below `threshold`, stopping once
/// two runs agree; with the losses seen. Message timing makes one run's result vary, so a single
/// run cannot decide.
fn median_of_3_below(threshold: f64, mut run: impl FnMut(&str) -> f64) -> (bool, Vec<f64>) {
    let (mut below, mut losses) = (0, Vec::new());
    for seed in ["0", "1", "2"] {
        let loss = run(seed);
        losses.push(loss);
        below += usize::from(loss < threshold);
        if below == 2 || losses.len() - below == 2 {
            break;
        }
    }
    (below >= 2, losses)
}

/// The median over 3 seeds decides: a single seed ended at 1.06e-3 once in CI.
#[test]
fn sphere_on_two_islands_converges_below_1e_3() {
    for t in BOTH {
        let (below, losses) = median_of_3_below(1e-3, |seed| {
            let dir = tmp();
            let args = ["--islands", "2", "--generations", "256", "--seed", seed];
            let (best, stdout) = propulate(t, 8, &args, dir.path());
            check_run(&best, dir.path(), 8, 256);
            assert!(best["emigrated"].as_u64().unwrap() > 0, "no migration happened: {best}");
            assert!(stdout.contains("islands consistent: yes"), "{stdout}");
            assert_eq!(best["islands"].as_array().unwrap().len(), 2);
            f64_of(&best, "loss")
        });
        assert!(below, "{t:?}: sphere's median best loss is not below 1e-3: {losses:?}");
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seeds per function. On 2-D rosenbrock about one run in five (10 of 48 seeds measured, zero-cost
/// loss, 8 ranks on 2 cores) ends above random search's median: the default propagator's fixed-width,
/// one-parameter mutations crawl along the curved valley. A median over 3 seeds then fails about one
/// test run in nine; over 15 seeds about one in 200 (binomial tail).
const SEEDS: u64 = 15;

/// Median over `seeds` seeds of the best of `budget` uniform samples.
fn random_search_median(name: &str, budget: usize, seeds: u64) -> f64 {
    let b = benchmark(name).unwrap();
    median(
        (0..seeds)
            .map(|seed| {
                let mut rng = worker_rng(1000 + seed, 0);
                (0..budget)
                    .map(|k| {
                        let x: Vec<f64> = b.space.sample(&mut rng).iter().map(|v| v.as_f64()).collect();
                        (b.f)(&x, k as u64)
                    })
                    .fold(f64::INFINITY, f64::min)
            })
            .collect(),
    )
}

/// The paper's functions of 20 and 30 dimensions, where uniform sampling is hopeless.
const HIGH_DIMENSIONAL: [&str; 4] = ["quartic", "rastrigin", "bisphere", "birastrigin"];

/// In 20 and 30 dimensions the optimizer must beat random search given 100 times its budget (8 x
/// 256 evaluations against 204,800 samples). Measured (seeds 0-2 against the median of 15 random
/// searches of 204,800): quartic 0.005-0.020 vs 30.9, rastrigin 33-70 vs 177, bisphere 37-42 vs
/// 105, birastrigin 104-134 vs 341, and every run below the best of the 15 random searches; so one
/// seed against the median of 3 decides, with an error too small to measure.
#[test]
fn in_20_and_30_dimensions_the_optimizer_beats_random_search_with_100_times_its_budget() {
    for name in HIGH_DIMENSIONAL {
        let random = random_search_median(name, 100 * 8 * 256, 3);
        let dir = tmp();
        let args = ["--islands", "2", "--generations", "256", "--function", name, "--seed", "0"];
        let (best, _) = propulate(Transport::Mpi, 8, &args, dir.path());
        check_run(&best, dir.path(), 8, 256);
        let loss = f64_of(&best, "loss");
        assert!(loss < random, "{name}: best loss {loss} is not below 100x-budget random search's median {random}");
    }
}

#[test]
fn paper_functions_of_2_to_10_dimensions_beat_random_search_with_the_same_budget() {
    // The median of SEEDS runs is below `random` exactly when a majority of runs is, so the seeds run
    // in order and stop as soon as either side has a majority: the same verdict as running them all.
    // The high-dimensional ones face a far stronger baseline in the test above.
    let majority = SEEDS / 2 + 1;
    for name in PAPER_NAMES.into_iter().filter(|n| !HIGH_DIMENSIONAL.contains(n)) {
        let random = random_search_median(name, 8 * 256, SEEDS);
        let (mut below, mut losses) = (0, Vec::new());
        for seed in 0..SEEDS {
            if below == majority || losses.len() as u64 - below == majority {
                break;
            }
            let dir = tmp();
            let seed = seed.to_string();
            let args = ["--islands", "2", "--generations", "256", "--function", name, "--seed", &seed];
            let (best, _) = propulate(Transport::Mpi, 8, &args, dir.path());
            check_run(&best, dir.path(), 8, 256);
            let loss = f64_of(&best, "loss");
            below += u64::from(loss < random);
            losses.push(loss);
        }
        assert_eq!(
            below, majority,
            "{name}: the optimizer's median over {SEEDS} seeds did not beat random search's median {random}; \
             best losses of the seeds run: {losses:?}"
        );
    }
}

/// With pollination every immigrant that becomes active on an island replaces one individual of the
/// worker responsible for it there, whatever order the messages arrive in: each island ends with
/// exactly as many active individuals as its workers evaluated, and the journals hold one
/// replacement per foreign identity the island took in.
#[test]
fn pollination_replaces_one_individual_per_immigrant_and_ends_consistent() {
    for t in BOTH {
        for (islands, per_island) in [(2usize, 4u64), (4, 2)] {
            let dir = tmp();
            let n = islands.to_string();
            let args = ["--islands", &n, "--generations", "200", "--pollination", "--seed", "3"];
            let (best, _) = propulate(t, 8, &args, dir.path());
            check_run(&best, dir.path(), 8, 200);
            assert!(best["emigrated"].as_u64().unwrap() > 0);
            let active: Vec<u64> =
                best["active_per_island"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            assert_eq!(active, vec![per_island * 200; islands], "{t:?}, {islands} islands: {best}");
            let replay = read_checkpoint(&dir.path().join("checkpoint")).unwrap().unwrap();
            let mut took_in = 0;
            for island in 0..islands {
                let pop = island_population(&replay, island);
                assert_eq!(pop.active_len() as u64, per_island * 200, "{t:?}: island {island} read back");
                let immigrants = pop.known_len() as u64 - per_island * 200;
                let replaced: usize = replay
                    .layout
                    .island_workers(island)
                    .map(|w| replay.workers[w].deactivations.iter().filter(|(_, s)| *s == ALL_COPIES).count())
                    .sum();
                assert_eq!(replaced as u64, immigrants, "{t:?}: island {island}: one replacement per immigrant");
                took_in += immigrants;
            }
            // Not per island: an island that runs far ahead of the others (8 ranks on 2 cores) can
            // hold the best everywhere, so that all it gets back are its own identities.
            assert!(took_in > 0, "{t:?}, {islands} islands: no island took in an immigrant");
        }
    }
}

/// Every propagator the CLI offers, and the default genetic one, runs under mpirun with the driver's
/// guarantees (budget, unique identities, consistent islands) and finds sphere's minimum far better
/// than random search would (its median best of 1,024 samples is about 2e-2); their search quality
/// on harder functions is tested in `propulate-core` and `propulate-engine`. An unknown name is an
/// error listing the valid ones.
#[test]
fn every_propagator_runs_under_mpirun_and_finds_spheres_minimum() {
    // The median over 3 seeds decides. Nelder-Mead's result hangs on message timing: 10 runs here
    // gave 3e-20 to 8e-5, but one CI run (2026-11-25) gave 0.016, 3e-17 and 5.8e-4 for seeds
    // 0-2; its bar is therefore "well below random search" (whose median best of 1,024 samples
    // is about 0.023), until its timing dependence is understood.
    // TPE samples from densities of the good and the bad points; it does not refine a minimum as
    // the others do: its bar is "far better than random search" (Optuna 5's multivariate model,
    // the default since 2026-11-27: measured 2.1e-5 to 4.5e-5, seeds 0-2, in a release build; the
    // univariate one before it 5.4e-7 to 6.9e-4).
    // GP fits a Gaussian process on every breeding, which costs far more per child than the others
    // (and more still in a debug build): it gets 16 generations, 128 evaluations, and still beats
    // random search's 1,024 (random search's median best of 128 is about 0.18; GP measured 6e-5
    // to 6.4e-3, seeds 0-4).
    // The default genetic settings (no --propagator: differential children, steps over 3 decades)
    // refine sphere's minimum below the reference's fixed step's (measured: 5e-15 to 3e-8 in
    // release runs, seeds 0-5; the reference's settings end near 1e-4); one run of a single seed
    // ended at 6.4e-5 (2026-11-27, a debug build beside other work), so the median decides here too.
    let bars = [("pso", 1e-4, 128), ("pso-clamping", 1e-4, 128), ("pso-constriction", 1e-4, 128)]
        .into_iter()
        .chain([("pso-canonical", 1e-4, 128), ("cmaes", 1e-4, 128), ("cmaes-basic", 1e-4, 128), ("nm", 1e-2, 128)])
        .chain([("tpe", 5e-3, 128), ("gp", 1e-2, 16)])
        .map(|(name, bar, generations)| (Some(name), bar, generations))
        .chain([(None, 1e-5, 128)]);
    for (name, bar, generations) in bars {
        let (below, losses) = median_of_3_below(bar, |seed| {
            let dir = tmp();
            let generations = generations.to_string();
            let mut args = vec!["--islands", "2", "--generations", &generations, "--seed", seed];
            if let Some(name) = name {
                args.extend(["--propagator", name]);
            }
            let (best, _) = propulate(Transport::Mpi, 8, &args, dir.path());
            check_run(&best, dir.path(), 8, generations.parse().unwrap());
            f64_of(&best, "loss")
        });
        let name = name.unwrap_or("the default");
        assert!(
            below,
            "{name}: median best loss on sphere after 8 x {generations} evaluations not below {bar}: {losses:?}"
        );
    }
    let out = propulate_raw(Transport::Local, 2, &["--propagator", "de"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown propagator 'de'; valid: ga, pso,"), "{stderr}");
}

#[test]
fn unequal_island_sizes() {
    for t in BOTH {
        let dir = tmp();
        let (best, _) = propulate(t, 8, &["--island-sizes", "3,5", "--generations", "150"], dir.path());
        check_run(&best, dir.path(), 8, 150);
        let workers_per_island: Vec<HashSet<String>> = (0..2)
            .map(|i| {
                std::fs::read_to_string(dir.path().join("trials.csv"))
                    .unwrap()
                    .lines()
                    .skip(1)
                    .filter(|r| r.starts_with(&format!("{i},")))
                    .map(|r| r.split(',').nth(1).unwrap().to_string())
                    .collect()
            })
            .collect();
        assert_eq!(workers_per_island[0].len(), 3);
        assert_eq!(workers_per_island[1].len(), 5);
    }
}

#[test]
fn two_ranks_per_worker() {
    for t in BOTH {
        let dir = tmp();
        let args = ["--ranks-per-worker", "2", "--islands", "2", "--generations", "150"];
        let (best, _) = propulate(t, 8, &args, dir.path());
        check_run(&best, dir.path(), 4, 150);
    }
}

/// Every migrant batch a worker of island `from` sent, as (target island, batch size).
fn emigrations_from(replay: &Replay, from: usize) -> Vec<(usize, usize)> {
    replay
        .layout
        .island_workers(from)
        .flat_map(|w| replay.workers[w].emigrations.iter().map(|(to, inds)| (*to as usize, inds.len())))
        .collect()
}

#[test]
fn ring_and_matrix_topologies_send_migrants_only_where_they_say_and_no_migration_sends_none() {
    let dir = tmp();
    let (best, _) =
        propulate(Transport::Mpi, 6, &["--islands", "3", "--topology", "ring", "--generations", "100"], dir.path());
    check_run(&best, dir.path(), 6, 100);
    assert!(best["emigrated"].as_u64().unwrap() > 0);
    let replay = read_checkpoint(&dir.path().join("checkpoint")).unwrap().unwrap();
    for from in 0..3 {
        let sent = emigrations_from(&replay, from);
        assert!(!sent.is_empty(), "ring: island {from} sent nothing");
        assert!(sent.iter().all(|&(to, n)| to == (from + 1) % 3 && n == 1), "ring: island {from} sent {sent:?}");
    }

    // Island 0 sends 2 to island 1, island 1 one to island 2, island 2 one to island 0.
    let m = dir.path().join("topology.txt");
    std::fs::write(&m, "0 2 0\n0 0 1\n1 0 0\n").unwrap();
    let matrix = [[0, 2, 0], [0, 0, 1], [1, 0, 0]];
    let out = dir.path().join("m");
    let (best, _) = propulate(
        Transport::Mpi,
        6,
        &["--islands", "3", "--topology", m.to_str().unwrap(), "--generations", "100"],
        &out,
    );
    check_run(&best, &out, 6, 100);
    let replay = read_checkpoint(&out.join("checkpoint")).unwrap().unwrap();
    for (from, row) in matrix.iter().enumerate() {
        let sent = emigrations_from(&replay, from);
        assert!(!sent.is_empty(), "matrix: island {from} sent nothing");
        for (to, n) in sent {
            assert_eq!(n, row[to], "matrix: island {from} sent {n} to island {to}; its row is {row:?}");
        }
    }

    let out = dir.path().join("none");
    let (best, _) = propulate(
        Transport::Local,
        4,
        &["--islands", "2", "--migration-probability", "0", "--generations", "50"],
        &out,
    );
    assert_eq!(best["emigrated"].as_u64(), Some(0));
}

#[test]
fn bad_input_is_a_clear_error() {
    let cases: [(usize, &[&str], &str); 7] = [
        (2, &["--bogus"], "unexpected argument '--bogus' found"),
        (2, &["--function", "spehre"], "valid: sphere, rosenbrock"),
        (4, &["--island-sizes", "1,2"], "add up to 3 workers, but there are 4"),
        (3, &["--ranks-per-worker", "2"], "multiple of 2"),
        (2, &["--islands", "3"], "3 islands need at least 3 workers"),
        (2, &["--migration-probability", "1.5"], "migration probability"),
        (2, &["--generations", "0"], "generations must be at least 1"),
    ];
    for t in BOTH {
        for (np, args, expected) in cases {
            let out = propulate_raw(t, np, args, None);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{args:?} should fail");
            // Once: rank 0 alone prints what every rank found (the parser's errors too).
            assert_eq!(stderr.matches(expected).count(), 1, "{t:?} {args:?}: expected '{expected}' once in:\n{stderr}");
        }
    }
}

/// Results that could not be written are found out before the run, not after it (this run would
/// take days), and too many in-process ranks are refused instead of exhausting the threads.
#[test]
fn an_unwritable_out_dir_and_too_many_local_ranks_fail_before_the_run() {
    let dir = tmp();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let out = file.join("results");
    for t in BOTH {
        let args = [
            "--generations",
            "100000000",
            "--eval-delay-ms",
            "1000",
            "--no-checkpoint",
            "--out",
            out.to_str().unwrap(),
        ];
        let mut cmd = match t {
            Transport::Mpi => {
                let mut c = common::mpirun(2);
                c.arg(common::bin());
                c
            }
            Transport::Local => {
                let mut c = std::process::Command::new(common::bin());
                c.args(["--local-ranks", "2"]);
                c
            }
        };
        cmd.args(args).args(["--function", "sphere", "-q"]);
        let output = common::run_with_timeout(cmd, std::time::Duration::from_secs(120));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{t:?}: {stderr}");
        assert!(stderr.contains("--out") && stderr.contains("could not be written there"), "{t:?}: {stderr}");
    }
    let output = propulate_raw(Transport::Local, 100_000_000, &[], None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("at most 1024 run as threads"), "{stderr}");
    let output = propulate_raw(Transport::Local, 0, &[], None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the in-process ranks (--local-ranks N, Optimizer::run_local) must be at least 1"),
        "{stderr}"
    );
    // The file itself as --out: said so, not "File exists".
    let output = propulate_raw(Transport::Local, 1, &["--out", file.to_str().unwrap()], None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("a-file: a file, not a directory"), "{stderr}");
}

#[test]
fn failing_losses_are_recorded_and_the_run_goes_on() {
    let dir = tmp();
    let mut cmd = common::mpirun(4);
    cmd.arg(common::example("faulty_loss")).arg(dir.path());
    let out = common::run_with_timeout(cmd, std::time::Duration::from_secs(120));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("best.json")).unwrap()).unwrap();
    assert_eq!(best["evaluations"].as_u64(), Some(400));
    assert!(best["failed"].as_u64().unwrap() > 0);
    assert!(f64_of(&best, "loss") < 0.05, "optimisation went on: {best}");
    let csv = std::fs::read_to_string(dir.path().join("trials.csv")).unwrap();
    for reason in ["the loss returned an error: x = ", "the loss panicked: x = ", "the loss is NaN", "the loss is inf"]
    {
        assert!(csv.contains(reason), "no '{reason}' row in trials.csv");
    }
    for row in csv.lines().skip(1).filter(|r| r.contains("the loss")) {
        assert!(row.contains(",inf,"), "a failed evaluation must have loss inf: {row}");
    }
    // Each rank's log names every failure of its worker, with the generation.
    let logged: usize = (0..4)
        .map(|rank| {
            let log = std::fs::read_to_string(dir.path().join(format!("logs/rank-{rank:05}.log"))).unwrap();
            assert!(
                log.contains(&format!("rank {rank} (worker {rank}, island {}): start: 4 ranks", rank / 2)),
                "{log}"
            );
            assert!(log.contains("generation 50: 50 evaluations ("), "{log}");
            assert!(log.contains("done after generation 100: 100 evaluations"), "{log}");
            log.lines().filter(|l| l.contains(" failed: the loss")).count()
        })
        .sum();
    assert_eq!(logged as u64, best["failed"].as_u64().unwrap());
}

#[test]
fn halving_hears_a_running_evaluation_of_another_process() {
    let dir = tmp();
    let mut cmd = common::mpirun(4);
    cmd.arg(common::example("running_reports")).arg(dir.path());
    let out = common::run_with_timeout(cmd, std::time::Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // Worker 1 heard worker 0's report at rung 1 while worker 0 was still training, and both of
    // its ranks stopped there (a rank going on alone would have failed or hung the evaluation).
    assert!(stdout.contains("worker 0: pruned false after step 2, failure none"), "{stdout}");
    assert!(stdout.contains("worker 1: pruned true after step 1, failure none"), "{stdout}");
}

#[test]
fn a_loss_failing_on_one_rank_of_a_worker_fails_the_evaluation() {
    let dir = tmp();
    let mut cmd = common::mpirun(4);
    cmd.arg(common::example("faulty_loss")).arg(dir.path()).arg("2");
    let out = common::run_with_timeout(cmd, std::time::Duration::from_secs(120));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("trials.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 200, "2 workers x 100 generations");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut rank_local = 0;
    for row in csv.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        // Unless the root failed too (it then reports first), the follower's reason is recorded.
        if f[col("failure")].starts_with("rank 1 of the worker: the loss returned an error: seed ") {
            assert_eq!(f[col("loss")], "inf", "{row}");
            rank_local += 1;
        }
    }
    assert!(rank_local > 0, "no evaluation recorded the follower's failure:\n{csv}");
    for worker in 0..2 {
        let follower =
            std::fs::read_to_string(dir.path().join(format!("logs/rank-{:05}.log", 2 * worker + 1))).unwrap();
        assert!(follower.contains(&format!("(worker {worker} rank 1, island {worker}): start")), "{follower}");
        assert!(follower.contains("failed on this rank: the loss returned an error: seed "), "{follower}");
        assert!(follower.contains("done: took part in 100 evaluations"), "{follower}");
    }
}

#[test]
fn per_rank_logs_that_cannot_be_written_stop_the_run_before_it_starts() {
    let dir = tmp();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "a file").unwrap();
    let args = ["--generations", "5", "--log-dir", blocker.to_str().unwrap()];
    let out = propulate_raw(Transport::Mpi, 2, &args, Some(dir.path()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("per-rank log: ") && stderr.contains("rank-00000.log"), "{stderr}");
    assert!(!dir.path().join("best.json").exists());
}

#[test]
fn tutorials_run_under_mpirun() {
    for (name, np) in [("custom_loss", 4), ("multi_rank_worker", 8), ("data_parallel", 4), ("pbt", 4)] {
        let mut cmd = common::mpirun(np);
        cmd.arg(common::example(name));
        let checkpoint = tempfile::tempdir().unwrap();
        if name == "pbt" {
            cmd.arg(checkpoint.path().join("ck"));
        }
        let out = common::run_with_timeout(cmd, std::time::Duration::from_secs(120));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("islands consistent: yes"), "{name}: {stdout}");
        if name == "data_parallel" {
            // Every training ran to the end with bit-identical replicas and reached the noise level.
            assert!(stdout.contains("evaluations: 24 (0 failed)"), "{stdout}");
            assert!(stdout.contains("evaluations whose replicas diverged: 0"), "{stdout}");
            let best = stdout.lines().find_map(|l| l.strip_prefix("best loss ")).unwrap();
            let best: f64 = best.split(' ').next().unwrap().parse().unwrap();
            assert!(best < 0.02, "data-parallel training did not learn: {best}");
        }
        if name == "pbt" {
            // The best member's schedule: from a fresh member, each interval starting where the one
            // before ended. The best need not be a member that ran all 200 steps: one at 180 can
            // beat those at 200 on the noisy validation set.
            let spans: Vec<(u64, u64)> = stdout
                .lines()
                .filter_map(|l| l.strip_prefix("steps "))
                .map(|l| {
                    let (from, to) = l.split_whitespace().next().unwrap().split_once('-').unwrap();
                    (from.parse().unwrap(), to.parse().unwrap())
                })
                .collect();
            assert!(stdout.contains("steps   0-20  fresh"), "{stdout}");
            assert!(spans.windows(2).all(|w| w[0].1 == w[1].0), "{stdout}");
            assert!(spans.last().unwrap().1 <= 200 && spans.len() >= 2, "{stdout}");
            let best = stdout.lines().find_map(|l| l.strip_prefix("best loss ")).unwrap();
            let best: f64 = best.split(' ').next().unwrap().parse().unwrap();
            assert!(best < 0.05, "population-based training did not learn: {best} (a fresh member: about 4.6)");
        }
    }
}

#[test]
fn a_panic_outside_the_loss_ends_the_job_with_its_message() {
    let mut cmd = common::mpirun(4);
    cmd.arg(common::example("panicking_propagator"));
    let out = common::run_with_timeout(cmd, std::time::Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("aborts the job: panic: propagator invariant broken on purpose"), "{stderr}");
}

#[test]
fn a_rank_that_cannot_read_its_topology_file_fails_the_job_instead_of_hanging_it() {
    // MPMD: rank 0 gets a valid topology, rank 1 a file that does not exist. Each rank reads its
    // own flags; the ranks agree before any collective, so both exit with rank 1's error.
    let mut cmd = std::process::Command::new("mpirun");
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .args(["--bind-to", "none"]);
    let common = ["--function", "sphere", "--islands", "2", "--generations", "5", "--no-checkpoint", "-q"];
    cmd.args(["-np", "1"]).arg(common::bin()).args(common).args(["--topology", "ring"]);
    cmd.arg(":").args(["-np", "1"]).arg(common::bin()).args(common).args(["--topology", "/nonexistent/topology"]);
    let out = common::run_with_timeout(cmd, std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("rank 1: ") && stderr.contains("/nonexistent/topology"), "{stderr}");
}

/// A topology given as a fifo is read once, by rank 0, for every rank: with one writer the job
/// runs (were every rank to read it, the first would take the matrix and the others would wait
/// for a writer for ever). A fifo nobody writes to ends every rank with one clear error within
/// seconds instead of hanging the job.
#[test]
fn a_topology_fifo_is_read_once_and_one_nobody_writes_fails_the_job_within_seconds() {
    let dir = tmp();
    let fifo = dir.path().join("topology.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let path = fifo.to_str().unwrap();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, "0 1\n1 0\n"))
    };
    let out = dir.path().join("out");
    let (best, _) = propulate(Transport::Mpi, 4, &["--islands", "2", "--topology", path, "--generations", "20"], &out);
    check_run(&best, &out, 4, 20);
    writer.join().unwrap().unwrap();

    let silent = propulate_raw(Transport::Mpi, 4, &["--islands", "2", "--topology", path], None);
    let stderr = String::from_utf8_lossy(&silent.stderr);
    assert_eq!(silent.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a regular file, and nothing came in 10 s"), "{stderr}");
    assert_eq!(stderr.matches("propulate-rs: error:").count(), 1, "one message, from rank 0: {stderr}");
}
