//! Early stopping through the driver: a loss reports a learning curve, hopeless evaluations are
//! stopped and recorded as pruned with their curve, the journal keeps it, all ranks of a worker
//! stop at the same step, and a bad report fails only its evaluation.

use propulate_core::SearchSpace;
use propulate_core::early_stop::{Decision, HalvingStopper, MedianStopper, StaticStopper};
use propulate_core::propagator::PropagatorSpec;
use propulate_engine::{Optimizer, WorkerContext};

const STEPS: u64 = 10;

/// A synthetic training: from 2.3 towards `x^2` by a factor e per step. Reports every step and
/// returns the best value seen, as a training returns its best validation loss.
fn train(x: f64, ctx: &mut WorkerContext<'_>) -> propulate_engine::Result<f64> {
    let end = x * x;
    let mut best = f64::INFINITY;
    for step in 0..STEPS {
        let value = end + (2.3 - end) * (-(step as f64)).exp();
        best = best.min(value);
        if ctx.report(step, value)?.is_stop() {
            break;
        }
    }
    Ok(best)
}

/// The genetic propagator, whose search the stoppers' thresholds here were measured with (the
/// library's default, `auto`, picks the GP for these budgets, which improves more steadily and
/// sends more evaluations through each rung).
fn optimizer(workers: usize) -> Optimizer {
    Optimizer::new(space()).propagator_spec(PropagatorSpec::with_defaults("ga", workers).unwrap())
}

fn space() -> SearchSpace {
    SearchSpace::builder().float("x", -1.0, 1.0).build().unwrap()
}

#[test]
fn hopeless_evaluations_are_pruned_and_recorded_with_their_curve() {
    let dir = tempfile::tempdir().unwrap();
    let result = optimizer(2)
        .generations(30)
        .seed(3)
        .checkpoint(dir.path())
        .early_stopping(MedianStopper::default())
        .run_local(2, |p, ctx| Ok(train(p.float("x"), ctx)?))
        .unwrap();
    assert_eq!(result.trials.len(), 60);
    let pruned: Vec<_> = result.trials.iter().filter(|t| t.pruned()).collect();
    assert!(pruned.len() >= 10, "only {} of 60 pruned", pruned.len());
    for t in &result.trials {
        let curve = t.curve.as_ref().expect("every evaluation reported");
        let steps: Vec<u64> = curve.points.iter().map(|p| p.0).collect();
        if curve.pruned {
            // Stopped after its last report, at the second at the earliest (min_reports = 2).
            assert!((2..STEPS as usize).contains(&steps.len()), "{steps:?}");
        } else {
            assert_eq!(steps, (0..STEPS).collect::<Vec<_>>());
        }
        assert_eq!(steps, (0..steps.len() as u64).collect::<Vec<_>>());
        assert_eq!(t.loss, curve.points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min));
    }
    let summary = propulate_engine::output::summary_table(&space(), &result);
    assert!(summary.contains(&format!("evaluations: 60 (0 failed, {} pruned)", pruned.len())), "{summary}");
    // Pruning only ever stops evaluations worse than the median: the best one ran to the end.
    assert!(!result.trials.iter().min_by(|a, b| a.loss.total_cmp(&b.loss)).unwrap().pruned());

    // The journal holds the curves and marks: what a resume and `report` read back.
    let replay = propulate_engine::report::load(dir.path()).unwrap();
    let from_disk = propulate_engine::report::result_of(&replay, 1);
    let mut a: Vec<_> = result.trials.iter().map(|t| (t.id, t.curve.clone())).collect();
    let mut b: Vec<_> = from_disk.trials.iter().map(|t| (t.id, t.curve.clone())).collect();
    a.sort_by_key(|x| x.0);
    b.sort_by_key(|x| x.0);
    assert_eq!(a, b);
    assert_eq!((result.pruned, from_disk.pruned), (pruned.len() as u64, pruned.len() as u64));
}

/// The count of pruned evaluations comes from the workers, not from the trials on rank 0: a run
/// that does not gather them reports it all the same.
#[test]
fn without_the_trials_the_pruned_count_is_still_reported() {
    let dir = tempfile::tempdir().unwrap();
    let result = optimizer(2)
        .generations(30)
        .seed(3)
        .checkpoint(dir.path())
        .gather_trials(false)
        .early_stopping(MedianStopper::default())
        .run_local(2, |p, ctx| Ok(train(p.float("x"), ctx)?))
        .unwrap();
    assert!(result.trials.is_empty());
    let from_disk = propulate_engine::report::result_of(&propulate_engine::report::load(dir.path()).unwrap(), 1);
    let pruned = from_disk.trials.iter().filter(|t| t.pruned()).count() as u64;
    assert!(pruned >= 10, "only {pruned} of 60 pruned");
    assert_eq!(result.pruned, pruned);
    let summary = propulate_engine::output::summary_table(&space(), &result);
    assert!(summary.contains(&format!("evaluations: 60 (0 failed, {pruned} pruned)")), "{summary}");
}

#[test]
fn halving_stops_most_evaluations_at_its_rungs_and_lets_the_best_finish() {
    let result = optimizer(2)
        .generations(30)
        .seed(3)
        .early_stopping(HalvingStopper::default())
        .run_local(2, |p, ctx| Ok(train(p.float("x"), ctx)?))
        .unwrap();
    let mut pruned = 0;
    for t in &result.trials {
        let curve = t.curve.as_ref().expect("every evaluation reported");
        if curve.pruned {
            pruned += 1;
            // Rungs at steps 1, 3 and 9; 9 is the training's last step, where nothing is stopped:
            // every evaluation starts after one of its worker's own ran to its end.
            assert!([1, 3].contains(&curve.last_step().unwrap()), "{:?}", curve.points);
        }
    }
    // Each rung keeps a third of those that reached it; a search that keeps improving sends more
    // through (measured 26 to 32 of 60 pruned over 12 runs, none at the last step).
    assert!(pruned >= 20, "only {pruned} of 60 pruned");
    assert!(!result.trials.iter().min_by(|a, b| a.loss.total_cmp(&b.loss)).unwrap().pruned());
}

#[test]
fn halving_hears_the_reports_of_evaluations_still_running() {
    // Two workers, one evaluation each, so neither ever sees the other finished before it starts.
    // Worker 0 reports 1.0 at rung 1 and raises a flag; only then does worker 1 report, 2.0 at
    // rung 1: with the running report counted (start-up 1), it is not in the best third and stops.
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let raised = flag.clone();
    let mut halving = HalvingStopper::default();
    halving.settings.startup = 1;
    let result = optimizer(2)
        .generations(1)
        .seed(1)
        .early_stopping(halving)
        .run_local(2, move |_, ctx| {
            use std::sync::atomic::Ordering::SeqCst;
            let curve: &[f64] = if ctx.worker == 0 { &[2.3, 1.0, 0.9] } else { &[2.3, 2.0, 1.9] };
            if ctx.worker == 1 {
                let t0 = std::time::Instant::now();
                while !flag.load(SeqCst) {
                    if t0.elapsed().as_secs() > 60 {
                        return Err("worker 0 never reported".into());
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            for (step, value) in curve.iter().enumerate() {
                if ctx.report(step as u64, *value)?.is_stop() {
                    return Ok(*value);
                }
                if ctx.worker == 0 && step == 1 {
                    raised.store(true, SeqCst);
                }
            }
            Ok(curve[2])
        })
        .unwrap();
    let by_worker = |w: u32| result.trials.iter().find(|t| t.id.worker == w).unwrap();
    assert!(result.trials.iter().all(|t| t.failure.is_none()), "{:?}", result.trials);
    let (first, second) = (by_worker(0).curve.clone().unwrap(), by_worker(1).curve.clone().unwrap());
    assert!(!first.pruned && first.points.len() == 3, "{first:?}");
    assert!(second.pruned && second.points == [(0, 2.3), (1, 2.0)], "{second:?}");
}

#[test]
fn without_a_stopper_reports_are_recorded_and_never_stop() {
    let result = optimizer(2).generations(5).run_local(2, |p, ctx| Ok(train(p.float("x"), ctx)?)).unwrap();
    for t in &result.trials {
        let curve = t.curve.as_ref().unwrap();
        assert!(!curve.pruned && curve.points.len() == STEPS as usize);
    }
}

#[test]
fn every_rank_of_a_worker_stops_at_the_same_step() {
    // Four ranks, two workers of two. Only the root's value is used, so the follower reports a
    // different curve; every rank then checks over the worker that all stopped after as many
    // reports, and fails the evaluation if not.
    let result = optimizer(4)
        .generations(20)
        .ranks_per_worker(2)
        .seed(5)
        .early_stopping(StaticStopper::default())
        .run_local(4, |p, ctx| {
            let x = p.float("x");
            let mut reports = 0.0;
            let mut best = f64::INFINITY;
            for step in 0..STEPS {
                let end = if ctx.is_worker_root() { x * x } else { 0.0 };
                let value = end + (2.3 - end) * (-(step as f64)).exp();
                best = best.min(value);
                reports += 1.0;
                if ctx.report(step, value)? == Decision::Stop {
                    break;
                }
            }
            let mut counts = [reports, reports * reports];
            ctx.all_reduce_sum(&mut counts)?;
            // Equal counts r on both ranks: sum 2r, sum of squares 2r^2.
            if counts[1] * 2.0 != counts[0] * counts[0] {
                return Err(format!("ranks stopped after different numbers of reports: {counts:?}").into());
            }
            Ok(best)
        })
        .unwrap();
    assert!(
        result.trials.iter().all(|t| t.failure.is_none()),
        "{:?}",
        result.trials.iter().find(|t| t.failure.is_some())
    );
    assert!(result.trials.iter().any(|t| t.pruned()), "no evaluation of 40 was pruned");
}

#[test]
fn a_step_that_does_not_increase_fails_its_evaluation_and_the_run_goes_on() {
    let result = optimizer(2)
        .generations(4)
        .early_stopping(MedianStopper::default())
        .run_local(2, |p, ctx| {
            ctx.report(1, p.float("x"))?;
            ctx.report(1, p.float("x"))?;
            Ok(0.0)
        })
        .unwrap();
    assert_eq!(result.trials.len(), 8);
    for t in &result.trials {
        let failure = t.failure.as_deref().unwrap();
        assert!(failure.contains("reported step 1 after step 1"), "{failure}");
    }
}

#[test]
fn a_panicking_rule_fails_its_evaluation_on_every_rank_without_a_hang() {
    #[derive(Debug)]
    struct Panicking;
    impl propulate_core::early_stop::EarlyStopper for Panicking {
        fn name(&self) -> &'static str {
            "panicking"
        }
        fn rule(
            &self,
            _: &[&propulate_core::Individual],
            _: &SearchSpace,
            _: &[propulate_core::Value],
        ) -> Box<dyn propulate_core::early_stop::StopRule> {
            struct Rule;
            impl propulate_core::early_stop::StopRule for Rule {
                fn should_stop(&mut self, _: &[(u64, f64)]) -> bool {
                    panic!("rule bug")
                }
            }
            Box::new(Rule)
        }
    }
    // Two workers of two ranks: the followers wait in the decision's broadcast, so the root must
    // still send it when its rule panics.
    let result = optimizer(4)
        .generations(3)
        .ranks_per_worker(2)
        .early_stopping(Panicking)
        .run_local(4, |p, ctx| Ok(train(p.float("x"), ctx)?))
        .unwrap();
    assert_eq!(result.trials.len(), 6);
    for t in &result.trials {
        let failure = t.failure.as_deref().unwrap();
        assert!(failure.contains("the early stopper's rule panicked: rule bug"), "{failure}");
    }
}

#[test]
fn stopper_settings_are_checked_before_the_run() {
    use propulate_core::early_stop::StopSettings;
    let bad = MedianStopper { settings: StopSettings { margin: 0.0, ..StopSettings::default() } };
    let e = optimizer(1).generations(2).early_stopping(bad).run_local(1, |_, _| Ok(0.0)).unwrap_err();
    assert!(e.to_string().contains("margin 0 is outside (0, 1]"), "{e}");
}
