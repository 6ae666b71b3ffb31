//! The benchmark-function task (`--function NAME`): the reference's 14 functions, or one of the
//! multi-objective problems (ZDT1-3, DTLZ2), optionally with a sleep in every evaluation that
//! stands in for an expensive loss.

use std::sync::Arc;
use std::time::Duration;

use propulate::functions::{Benchmark, benchmark};
use propulate::multi_functions::{MULTI_NAMES, MultiBenchmark, multi_benchmark};
use propulate::rng::mix64;
use propulate::{Error, Objective, Result, SearchSpace};

use super::task::{Loss, Task};

/// One loss, or several objectives.
enum Problem {
    Single(Benchmark),
    Multi(MultiBenchmark),
}

pub(crate) struct FunctionTask {
    problem: Problem,
    delay: Duration,
    /// Each evaluation's sleep is `delay` times 1 + `spread` x u, u uniform in [-1, 1) and drawn
    /// from the evaluation's seed: evaluation times that vary, repeatably.
    spread: f64,
}

/// The canonical name of function `name`; an unknown name lists every function.
pub(crate) fn function_name(name: &str) -> Result<&'static str> {
    if MULTI_NAMES.contains(&name) {
        return Ok(multi_benchmark(name)?.name);
    }
    benchmark(name).map(|b| b.name).map_err(|e| match e {
        propulate::CoreError::UnknownName { kind, name, valid } => {
            propulate::CoreError::UnknownName { kind, name, valid: format!("{valid}, {}", MULTI_NAMES.join(", ")) }
                .into()
        }
        other => other.into(),
    })
}

impl FunctionTask {
    /// The function `name`, sleeping `delay_ms` in every evaluation, spread uniformly by up to
    /// the share `spread` of it either way.
    pub fn new(name: &str, delay_ms: f64, spread: f64) -> Result<Self> {
        if !(0.0..=3.6e6).contains(&delay_ms) {
            return Err(Error::InvalidConfig(format!(
                "--eval-delay-ms must be between 0 and 3600000 (one hour), got {delay_ms}"
            )));
        }
        if !(0.0..1.0).contains(&spread) {
            return Err(Error::InvalidConfig(format!(
                "--eval-delay-spread must be at least 0 and below 1 (a share of --eval-delay-ms), got {spread}"
            )));
        }
        function_name(name)?;
        let problem = if MULTI_NAMES.contains(&name) {
            Problem::Multi(multi_benchmark(name)?)
        } else {
            Problem::Single(benchmark(name)?)
        };
        Ok(FunctionTask { problem, delay: Duration::from_secs_f64(delay_ms / 1000.0), spread })
    }

    fn sleep(delay: Duration, spread: f64, evaluation_seed: u64) {
        if delay.is_zero() {
            return;
        }
        if spread == 0.0 {
            return std::thread::sleep(delay);
        }
        std::thread::sleep(delay.mul_f64(1.0 + spread * uniform_draw(evaluation_seed)));
    }
}

/// A number uniform in [-1, 1) drawn from an evaluation's seed (already derived from the run seed
/// and the evaluation's identity; mixed once more, so that it is not the function's own noise).
fn uniform_draw(evaluation_seed: u64) -> f64 {
    (mix64(evaluation_seed) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// `f1`, `f2`, ...: the objectives of a problem with `n`.
fn numbered(n: usize) -> Vec<Objective> {
    (1..=n).map(|k| Objective::min(&format!("f{k}"))).collect()
}

impl Task for FunctionTask {
    fn name(&self) -> String {
        match &self.problem {
            Problem::Single(b) => b.name.to_string(),
            Problem::Multi(b) => b.name.to_string(),
        }
    }

    fn space(&self) -> &SearchSpace {
        match &self.problem {
            Problem::Single(b) => &b.space,
            Problem::Multi(b) => &b.space,
        }
    }

    fn objectives(&self) -> Vec<Objective> {
        match &self.problem {
            Problem::Single(_) => Vec::new(),
            Problem::Multi(b) => numbered(b.objectives),
        }
    }

    fn loss(&self) -> Loss {
        let (delay, spread) = (self.delay, self.spread);
        let f = match &self.problem {
            Problem::Single(b) => b.f,
            Problem::Multi(b) => {
                let (f, names) = (b.f, numbered(b.objectives));
                // The objectives go out as metrics of their names (see objectives.rs); the loss is
                // the first.
                return Arc::new(move |p, ctx| {
                    Self::sleep(delay, spread, ctx.seed);
                    let values = f(&p.to_vec());
                    for (o, v) in names.iter().zip(&values) {
                        ctx.record(&o.name, *v);
                    }
                    Ok(values[0])
                });
            }
        };
        Arc::new(move |p, ctx| {
            Self::sleep(delay, spread, ctx.seed);
            let value = f(&p.to_vec(), ctx.seed);
            // Multi-rank workers: every rank computes the value and the worker agrees on the mean,
            // which exercises the worker communicator the way a data-parallel loss would.
            if ctx.worker_size > 1 {
                let mean = ctx.map_reduce_sum(|_, _| value)? / ctx.worker_size as f64;
                return Ok(mean);
            }
            Ok(value)
        })
    }

    fn default_generations(&self) -> u64 {
        1000
    }

    fn checkpoint_facts(&self) -> serde_json::Map<String, serde_json::Value> {
        [("function".to_string(), serde_json::Value::from(self.name()))].into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_outside_its_range_is_refused_by_name() {
        for bad in [-0.1, 1.0, f64::NAN] {
            let e = FunctionTask::new("sphere", 10.0, bad).err().expect("refused").to_string();
            assert!(e.contains("--eval-delay-spread must be at least 0 and below 1"), "{e}");
        }
        assert!(FunctionTask::new("sphere", 10.0, 0.99).is_ok());
    }

    #[test]
    fn the_draws_cover_the_spread_evenly() {
        // Over consecutive seeds: inside [-1, 1), a tenth in each tenth.
        let draws: Vec<f64> = (0..10_000u64).map(uniform_draw).collect();
        assert!(draws.iter().all(|u| (-1.0..1.0).contains(u)));
        for decile in 0..10 {
            let lo = -1.0 + 0.2 * decile as f64;
            let n = draws.iter().filter(|&&u| u >= lo && u < lo + 0.2).count();
            assert!((850..1150).contains(&n), "decile {decile}: {n} of 10,000");
        }
    }
}
