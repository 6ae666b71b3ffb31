//! What one child of the GP propagator costs, by model and by the number of evaluations it is
//! fitted to: an island of N evaluated individuals on a D-dimensional sphere (floats in [-5, 5]),
//! one child per call, the median time of a call; and the same pool with 7 running evaluations
//! (what the other workers of 8 are running: the fantasies).
//!
//!   cargo bench --bench gp_breed
//!   SIZES=25,100,200 DIMS=5,10 REPS=7 cargo bench --bench gp_breed
//!
//! `matern52` is the default model (its losses warped, `--gp-warp power`; in a trust region with the
//! region's own process, `--gp-trust-region 1`), `whole space` the same over the whole space
//! (`--gp-trust-region 0`), `unwarped` the whole space's with `--gp-warp none` (the
//! squared-exponential model before them was retired on 2026-11-28). For Optuna's
//! GPSampler compare its seconds per trial in benches/bbob.sh's results (200 sequential trials).

use std::time::Instant;

use propulate::SearchSpace;
use propulate::individual::{Individual, IndividualId};
use propulate::population::Population;
use propulate::propagator::{GpConfig, Pool, Propagator, PropagatorSpec};
use propulate::rng::worker_rng;

fn list(var: &str, default: &str) -> Vec<usize> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().parse().expect("comma-separated counts"))
        .collect()
}

fn island(space: &SearchSpace, n: usize, running: usize) -> Population {
    let mut rng = worker_rng(1, 0);
    let mut population = Population::new();
    for k in 0..n + running {
        let values = space.sample(&mut rng);
        let mut ind = Individual::new(values.clone());
        ind.id = IndividualId { island: 0, worker: (k % 8) as u32, generation: (k / 8) as u64 };
        if k < n {
            ind.loss = values.iter().map(|v| v.as_f64().powi(2)).sum();
            population.insert(ind);
        } else {
            population.start_running(ind);
        }
    }
    population
}

fn median_breed(propagator: &dyn Propagator, pool: &dyn Pool, space: &SearchSpace, reps: usize) -> f64 {
    let mut rng = worker_rng(2, 0);
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(propagator.propagate(pool, space, &mut rng).expect("breeds"));
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let sizes = list("SIZES", "25,100,200");
    let dims = list("DIMS", "5,10");
    let reps = list("REPS", "7")[0];
    println!("median time of one GP child, {reps} children each");
    println!(
        "{:>4} {:>6} {:>14} {:>16} {:>14} {:>22}",
        "dims", "pool", "unwarped ms", "whole space ms", "matern52 ms", "matern52, 7 running ms"
    );
    for &d in &dims {
        let mut builder = SearchSpace::builder();
        for i in 0..d {
            builder = builder.float(&format!("x{i}"), -5.0, 5.0);
        }
        let space = builder.build().expect("space");
        let build = |config: GpConfig| PropagatorSpec::Gp(config).build(&space).expect("builds");
        let new = build(GpConfig::default());
        let unwarped = build(GpConfig { warp: false, trust_region: 0.0, ..GpConfig::default() });
        // The default before its trust region: the acquisition over the whole space.
        let whole = build(GpConfig { trust_region: 0.0, ..GpConfig::default() });
        for &n in &sizes {
            let alone = island(&space, n, 0);
            let busy = island(&space, n, 7);
            let t_plain = median_breed(unwarped.as_ref(), &alone, &space, reps);
            let t_whole = median_breed(whole.as_ref(), &alone, &space, reps);
            let t_new = median_breed(new.as_ref(), &alone, &space, reps);
            let t_busy = median_breed(new.as_ref(), &busy, &space, reps);
            println!(
                "{d:>4} {n:>6} {:>14.1} {:>16.1} {:>14.1} {:>22.1}",
                t_plain * 1e3,
                t_whole * 1e3,
                t_new * 1e3,
                t_busy * 1e3
            );
        }
    }
}
