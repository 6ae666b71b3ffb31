//! Metrics a loss records besides its loss reach the trials, survive the journal, and leave out
//! values JSON cannot hold.

use propulate_core::SearchSpace;
use propulate_engine::Optimizer;

#[test]
fn recorded_metrics_reach_the_trials_and_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let space = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
    let result = Optimizer::new(space)
        .generations(6)
        .checkpoint(dir.path())
        .run_local(2, |p, ctx| {
            let x = p.float("x");
            ctx.record("double", 2.0 * x);
            ctx.record("nan", f64::NAN);
            // Only the root's metrics are kept; a single-rank worker is its own root.
            ctx.record("double", 2.0 * x); // recording again replaces
            Ok(x)
        })
        .unwrap();
    assert_eq!(result.trials.len(), 12);
    for t in &result.trials {
        assert_eq!(t.metrics.len(), 1, "{:?}", t.metrics);
        let x = t.values[0].as_f64();
        assert_eq!(t.metrics["double"], 2.0 * x);
    }
    let replay = propulate_engine::report::load(dir.path()).unwrap();
    let from_disk = propulate_engine::report::result_of(&replay, 1);
    let mut a: Vec<_> = result.trials.iter().map(|t| (t.id, t.metrics.clone())).collect();
    let mut b: Vec<_> = from_disk.trials.iter().map(|t| (t.id, t.metrics.clone())).collect();
    a.sort_by_key(|x| x.0);
    b.sort_by_key(|x| x.0);
    assert_eq!(a, b);
}
