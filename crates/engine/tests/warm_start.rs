//! The library's warm start (`Optimizer::warm_start`, the CLI's `--warm-start`).

use propulate_core::SearchSpace;
use propulate_engine::Optimizer;

/// The library's warm start: a run seeded with an earlier one's checkpoint holds its evaluations
/// (its best at least the earlier best) without evaluating them again; without a checkpoint of
/// its own it is refused.
#[test]
fn a_library_run_warm_starts_from_an_earlier_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let space = SearchSpace::builder().float("x", -1.0, 1.0).build().unwrap();
    let loss =
        |p: propulate_core::Params<'_>, _: &mut propulate_engine::context::WorkerContext<'_>| Ok(p.float("x").powi(2));
    let earlier =
        Optimizer::new(space.clone()).generations(5).checkpoint(dir.path().join("a")).run_local(2, loss).unwrap();
    let later = Optimizer::new(space.clone())
        .warm_start(dir.path().join("a"))
        .checkpoint(dir.path().join("b"))
        .generations(3)
        .run_local(2, loss)
        .unwrap();
    assert_eq!(later.trials.len(), 6, "only its own evaluations");
    assert!(later.best[0].loss <= earlier.best[0].loss);
    let e = Optimizer::new(space).warm_start(dir.path().join("a")).generations(1).run_local(1, loss).unwrap_err();
    assert!(e.to_string().contains("a warm start seeds the run's checkpoint"), "{e}");
}
