//! `Optimizer::enqueue`: configurations known in advance are the workers' first children, in
//! order across the workers; bad ones are refused by name before anything runs.

use propulate_core::enqueued::Configuration;
use propulate_core::propagator::PropagatorSpec;
use propulate_core::{SearchSpace, Value};
use propulate_engine::Optimizer;
use serde_json::json;

fn space() -> SearchSpace {
    SearchSpace::builder().float("x", -1.0, 1.0).int("n", 0, 9).categorical("act", &["relu", "tanh"]).build().unwrap()
}

fn configuration(x: f64, n: i64, act: &str) -> Configuration {
    json!({"x": x, "n": n, "act": act}).as_object().unwrap().clone()
}

#[test]
fn enqueued_configurations_are_the_workers_first_children_in_order() {
    let known: Vec<Configuration> =
        (0..5).map(|k| configuration(0.1 * k as f64, k, ["relu", "tanh"][k as usize % 2])).collect();
    let result = Optimizer::new(space())
        .generations(3)
        .propagator_spec(PropagatorSpec::with_defaults("ga", 3).unwrap())
        .enqueue(known)
        .run_local(3, |p, _| Ok(p.float("x").abs() + p.int("n") as f64))
        .unwrap();
    assert_eq!(result.trials.len(), 9);
    for k in 0..5u64 {
        let t = result.trials.iter().find(|t| t.id.worker as u64 == k % 3 && t.id.generation == k / 3).unwrap();
        let act = (k % 2) as u32;
        assert_eq!(
            t.values,
            vec![Value::Float(0.1 * k as f64), Value::Int(k as i64), Value::Cat(act)],
            "configuration {k}"
        );
    }
}

#[test]
fn bad_configurations_and_population_based_training_are_refused() {
    let run = |known: Vec<Configuration>, spec: &str| {
        let mut o = Optimizer::new(space()).generations(2).enqueue(known);
        o = o.propagator_spec(PropagatorSpec::with_defaults(spec, 1).unwrap());
        if spec == "pbt" {
            o = o.checkpoint(tempfile::tempdir().unwrap().keep());
        }
        o.run_local(1, |p, _| Ok(p.float("x"))).unwrap_err().to_string()
    };
    let e = run(vec![configuration(0.5, 3, "relu"), configuration(0.5, 12, "relu")], "ga");
    assert!(e.contains("enqueued configuration 2: parameter 'n' has 12, outside its bounds"), "{e}");
    let mut unknown = configuration(0.5, 3, "relu");
    unknown.insert("depth".into(), json!(2));
    let e = run(vec![unknown], "ga");
    assert!(e.contains("no parameter 'depth'"), "{e}");
    let e = run(vec![configuration(0.5, 3, "relu")], "pbt");
    assert!(e.contains("population-based training"), "{e}");
}
