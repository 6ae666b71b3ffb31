//! Constraints a library loss reports (`ctx.set_constraints`): the best individual is the best
//! feasible one although infeasible ones have lower losses, the search breeds towards the feasible
//! side, the values survive the journal, and a constraint that is not a finite number fails its
//! evaluation with the reason.

use propulate_core::SearchSpace;
use propulate_core::propagator::PropagatorSpec;
use propulate_engine::Optimizer;

#[test]
fn the_best_is_the_best_feasible_and_the_constraints_survive_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let space = SearchSpace::builder().float("x", 0.0, 1.0).float("y", 0.0, 1.0).build().unwrap();
    let result = Optimizer::new(space)
        .generations(12)
        .propagator_spec(PropagatorSpec::with_defaults("ga", 2).unwrap())
        .checkpoint(dir.path())
        .run_local(2, |p, ctx| {
            let (x, y) = (p.float("x"), p.float("y"));
            // The loss falls towards the origin, where x + y >= 1 does not hold.
            ctx.set_constraints(&[1.0 - x - y, -1.0]);
            Ok(x * x + y * y)
        })
        .unwrap();
    assert_eq!(result.trials.len(), 24);
    assert!(result.trials.iter().all(|t| t.constraints.len() == 2));
    let best = &result.best[0];
    assert!(best.is_feasible(), "{best:?}");
    let lowest_feasible =
        result.trials.iter().filter(|t| t.is_feasible()).map(|t| t.loss).fold(f64::INFINITY, f64::min);
    assert_eq!(best.loss, lowest_feasible);
    assert!(
        result.trials.iter().any(|t| !t.is_feasible() && t.loss < best.loss),
        "an infeasible trial with a lower loss ranks below the best feasible one"
    );
    let replay = propulate_engine::report::load(dir.path()).unwrap();
    let from_disk = propulate_engine::report::result_of(&replay, 1);
    let mut a: Vec<_> = result.trials.iter().map(|t| (t.id, t.constraints.clone())).collect();
    let mut b: Vec<_> = from_disk.trials.iter().map(|t| (t.id, t.constraints.clone())).collect();
    a.sort_by_key(|x| x.0);
    b.sort_by_key(|x| x.0);
    assert_eq!(a, b);
    assert_eq!(from_disk.best[0].id, best.id);
}

#[test]
fn a_constraint_that_is_not_finite_fails_its_evaluation() {
    let space = SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap();
    let result = Optimizer::new(space)
        .generations(4)
        .run_local(1, |p, ctx| {
            let x = p.float("x");
            ctx.set_constraints(&[if x < 0.5 { f64::NAN } else { -1.0 }]);
            Ok(x)
        })
        .unwrap();
    for t in &result.trials {
        if t.values[0].as_f64() < 0.5 {
            let failure = t.failure.as_deref().unwrap_or_default();
            assert!(failure.contains("constraint 1 of 1 is NaN: constraints must be finite numbers"), "{failure}");
            assert!(t.constraints.is_empty());
        } else {
            assert!(t.failure.is_none() && t.constraints == [-1.0]);
        }
    }
}
