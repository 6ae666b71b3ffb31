//! `--shared-budget`: an island's workers share their generations, so that a quick worker goes on
//! while a slow one is still evaluating instead of waiting for it at the end; the island evaluates
//! at most its workers x --generations, within one evaluation per worker of it. In one process
//! with uneven evaluation times, and under mpirun with a resume.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{Transport, propulate, propulate_raw, succeeded, trials_jsonl};
use propulate::{Optimizer, SearchSpace, Value};

/// Evaluations per worker of a run of 4 in-process workers, worker 0 quick (2 ms), the others slow
/// (30 ms), 8 generations each.
fn per_worker(shared: bool) -> BTreeMap<usize, usize> {
    let space = SearchSpace::builder().float("x", -5.0, 5.0).build().unwrap();
    let result = Optimizer::new(space)
        .generations(8)
        .seed(3)
        .shared_budget(shared)
        .run_local(4, |p, ctx| {
            std::thread::sleep(Duration::from_millis(if ctx.worker == 0 { 2 } else { 30 }));
            Ok(p.float("x").powi(2))
        })
        .unwrap();
    let mut counts = BTreeMap::new();
    for t in &result.trials {
        *counts.entry(t.id.worker as usize).or_insert(0) += 1;
    }
    assert_eq!(counts.values().sum::<usize>() as u64, result.evaluations);
    counts
}

#[test]
fn a_quick_worker_takes_over_the_generations_of_slow_ones() {
    let own = per_worker(false);
    assert!(own.values().all(|&n| n == 8), "each worker its own 8 generations: {own:?}");
    let shared = per_worker(true);
    let total: usize = shared.values().sum();
    // The island's 32, less at most one running on each of the 3 other workers (more by as many
    // when a result is still on its way as a worker decides).
    assert!((29..=35).contains(&total), "the island's budget: {shared:?}");
    assert!(shared[&0] > 8, "the quick worker went on past its own 8: {shared:?}");
    assert!((1..=3).all(|w| shared[&w] < 8), "the slow ones did fewer: {shared:?}");
}

#[test]
fn a_slow_worker_still_evaluates_the_configurations_given_to_it() {
    // 2 workers, 3 generations, 6 configurations given: worker 1 (slow) has 1, 3 and 5 in its
    // generations 0-2, which the quick worker's share of the budget would otherwise leave out.
    let space = SearchSpace::builder().float("x", -5.0, 5.0).build().unwrap();
    let known = (0..6).map(|k| serde_json::json!({ "x": k as f64 * 0.5 }).as_object().unwrap().clone()).collect();
    let result = Optimizer::new(space)
        .generations(3)
        .shared_budget(true)
        .enqueue(known)
        .run_local(2, |p, ctx| {
            std::thread::sleep(Duration::from_millis(if ctx.worker == 0 { 1 } else { 40 }));
            Ok(p.float("x").powi(2))
        })
        .unwrap();
    let mut xs: Vec<f64> =
        result.trials.iter().filter_map(|t| if let Value::Float(x) = t.values[0] { Some(x) } else { None }).collect();
    xs.sort_by(f64::total_cmp);
    for k in 0..6 {
        assert_eq!(xs.iter().filter(|&&x| x == k as f64 * 0.5).count(), 1, "configuration {k} once: {xs:?}");
    }
}

#[test]
fn under_mpi_the_islands_keep_their_budgets_and_a_resume_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // 6 workers on 2 islands of 3, 10 generations: each island evaluates at most 30.
    let args = ["--generations", "10", "--islands", "2", "--shared-budget", "--eval-delay-ms", "5"];
    propulate(Transport::Mpi, 6, &args, &out);
    let trials = trials_jsonl(dir.path());
    for island in 0..2 {
        let n = trials.iter().filter(|t| t["island"] == island).count();
        assert!(
            (28..=32).contains(&n),
            "island {island} evaluated {n}: its budget 30, within 2 (one per other worker)"
        );
    }
    // The same command again: the islands' budgets are spent, nothing more is evaluated.
    let again = succeeded(&propulate_raw(Transport::Mpi, 6, &args, Some(&out)));
    let total = trials.len();
    assert!(again.contains(&format!("evaluations: {total} (0 failed, {total} from the checkpoint)")), "{again}");
}
