//! The benchmark-function task (`--function NAME`): the reference's 14 functions, optionally with a
//! sleep in every evaluation that stands in for an expensive loss.

use std::sync::Arc;
use std::time::Duration;

use propulate::functions::{Benchmark, benchmark};
use propulate::{Error, Result, SearchSpace};

use super::task::{Loss, Task};

pub(crate) struct FunctionTask {
    bench: Benchmark,
    delay: Duration,
}

impl FunctionTask {
    /// The function `name`, sleeping `delay_ms` in every evaluation.
    pub fn new(name: &str, delay_ms: f64) -> Result<Self> {
        if !(0.0..=3.6e6).contains(&delay_ms) {
            return Err(Error::InvalidConfig(format!(
                "--eval-delay-ms must be between 0 and 3600000 (one hour), got {delay_ms}"
            )));
        }
        Ok(FunctionTask { bench: benchmark(name)?, delay: Duration::from_secs_f64(delay_ms / 1000.0) })
    }
}

impl Task for FunctionTask {
    fn name(&self) -> String {
        self.bench.name.to_string()
    }

    fn space(&self) -> &SearchSpace {
        &self.bench.space
    }

    fn loss(&self) -> Loss {
        let (f, delay) = (self.bench.f, self.delay);
        Arc::new(move |p, ctx| {
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
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
        [("function".to_string(), serde_json::Value::from(self.bench.name))].into_iter().collect()
    }
}
