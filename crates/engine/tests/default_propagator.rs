//! The default propagator's multimodal settings against its defaults (the reference's genetic
//! propagator), both run by the engine as a user would (8 in-process workers, 2 islands, 256
//! generations): on the multimodal functions where the comparison with the Python reference
//! (docs/benchmarks/reference.md) must be won, their median best loss over seven seeds is below the
//! defaults'. The workers are asynchronous, so a run's result depends on its timing: on a loaded
//! machine (a CI run with two benchmarks beside it) the multimodal settings' three runs on
//! schwefel gave 238, 2.4 and 185 and the median of three flipped; seven keep one or two such runs
//! from deciding, at about 5 s for the test. (The full comparison, 14
//! functions against Propulate 1.2.2 itself, is `benches/compare_reference.sh`.)

use propulate_core::functions::benchmark;
use propulate_core::propagator::DefaultPropagatorConfig;
use propulate_engine::Optimizer;

/// Runs per setting and function; the median decides.
const SEEDS: u64 = 7;

fn median_best(name: &str, cfg: &DefaultPropagatorConfig) -> (f64, Vec<f64>) {
    let bench = benchmark(name).unwrap();
    let mut runs: Vec<f64> = (0..SEEDS)
        .map(|seed| {
            let f = bench.f;
            let result = Optimizer::new(bench.space.clone())
                .generations(256)
                .islands(2)
                .seed(seed)
                .default_propagator(cfg.clone())
                .run_local(8, move |p, ctx| Ok(f(&p.to_vec(), ctx.seed)))
                .unwrap();
            result.best[0].loss
        })
        .collect();
    let all = runs.clone();
    runs.sort_by(f64::total_cmp);
    (runs[SEEDS as usize / 2], all)
}

#[test]
fn multimodal_settings_beat_the_references_genetic_propagator_on_multimodal_functions() {
    for name in ["rastrigin", "schwefel", "birastrigin"] {
        // Measured: medians 0.42x (rastrigin), 0.004x (schwefel), 0.84x (birastrigin).
        let (ours, ours_runs) = median_best(name, &DefaultPropagatorConfig::multimodal(8));
        let (reference, reference_runs) = median_best(name, &DefaultPropagatorConfig::reference(8));
        eprintln!("{name}: multimodal {ours:.4} {ours_runs:?}, reference {reference:.4} {reference_runs:?}");
        assert!(ours < reference, "{name}: the multimodal settings' median {ours} vs the reference's {reference}");
    }
}
