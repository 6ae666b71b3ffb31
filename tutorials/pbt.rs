//! Tutorial: population-based training with the library, under MPI.
//!
//!     cargo build --release --example pbt
//!     mpirun -np 4 target/release/examples/pbt [CHECKPOINT]
//!
//! The states live under the checkpoint (default `checkpoints/pbt-tutorial`; the same command
//! again resumes it, and a finished run has nothing left to do).
//! Each worker trains one member: here a linear model fitted by stochastic gradient descent, a
//! stand-in for a network. Each evaluation trains it `interval` steps with the evaluation's
//! learning rate and momentum, continuing the state its context names (`ctx.restore_from()`: its
//! member's last, or a better member's it took over), saves its own state where the context says
//! (`ctx.save_to()`), and returns the validation loss. The state is whatever the training needs to
//! go on: the weights and the momentum buffer, as one small text file here.

use std::path::Path;

use propulate::propagator::{PbtConfig, PropagatorSpec};
use propulate::transport::Communicator;
#[cfg(feature = "mpi")]
use propulate::transport::PointToPoint;
use propulate::{Optimizer, SearchSpace};

/// Noisy samples of y = 3 x0 - 2 x1 + 0.5, the task the members learn.
fn sample(i: u64) -> ([f64; 2], f64) {
    let u = |k: u64| ((i.wrapping_mul(2654435761).wrapping_add(k * 40503) % 10007) as f64 / 10007.0) * 2.0 - 1.0;
    let x = [u(1), u(2)];
    (x, 3.0 * x[0] - 2.0 * x[1] + 0.5 + 0.05 * u(3))
}

/// The training state: weights, bias and the momentum buffer.
#[derive(Clone, Copy, Default)]
struct State {
    w: [f64; 3],
    v: [f64; 3],
}

impl State {
    fn load(dir: &Path) -> std::io::Result<State> {
        let text = std::fs::read_to_string(dir.join("state.txt"))?;
        let n: Vec<f64> = text.split_whitespace().filter_map(|t| t.parse().ok()).collect();
        if n.len() != 6 {
            return Err(std::io::Error::other(format!("{}: not a state", dir.display())));
        }
        Ok(State { w: [n[0], n[1], n[2]], v: [n[3], n[4], n[5]] })
    }

    fn save(&self, dir: &Path) -> std::io::Result<()> {
        let [a, b, c] = self.w;
        let [d, e, f] = self.v;
        std::fs::write(dir.join("state.txt"), format!("{a} {b} {c} {d} {e} {f}\n"))
    }

    /// One step of SGD with momentum on the mini-batch starting at sample `at`.
    fn step(&mut self, at: u64, lr: f64, momentum: f64) {
        let mut g = [0.0; 3];
        for i in at..at + 8 {
            let (x, y) = sample(i);
            let err = self.w[0] * x[0] + self.w[1] * x[1] + self.w[2] - y;
            g = [g[0] + err * x[0] / 8.0, g[1] + err * x[1] / 8.0, g[2] + err / 8.0];
        }
        for ((w, v), g) in self.w.iter_mut().zip(&mut self.v).zip(g) {
            *v = momentum * *v + g;
            *w -= lr * *v;
        }
    }

    /// Mean squared error on held-out samples.
    fn validation_loss(&self) -> f64 {
        let held_out = 1_000_000..1_000_200u64;
        let n = held_out.end - held_out.start;
        held_out
            .map(|i| {
                let (x, y) = sample(i);
                (self.w[0] * x[0] + self.w[1] * x[1] + self.w[2] - y).powi(2)
            })
            .sum::<f64>()
            / n as f64
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let space = SearchSpace::builder().log_float("lr", 1e-3, 0.8).float("momentum", 0.0, 0.9).build()?;
    // 20 steps per evaluation, 200 per member; the states live under the checkpoint.
    let pbt = PbtConfig { interval: 20, steps: Some(200), ..PbtConfig::default() };
    let checkpoint = std::env::args().nth(1).unwrap_or_else(|| "checkpoints/pbt-tutorial".into());
    let optimizer = Optimizer::new(space.clone())
        .propagator_spec(PropagatorSpec::Pbt(pbt))
        .generations(1000)
        .seed(3)
        .checkpoint(&checkpoint);

    let run = |world: &mut dyn Communicator| {
        optimizer.run(world, |p, ctx| {
            let mut state = match ctx.restore_from() {
                Some(dir) => State::load(dir)?,
                None => State::default(),
            };
            let (from, steps) = (ctx.step(), ctx.training().map_or(1, |t| t.steps));
            for s in from..from + steps {
                state.step(s * 8, p.float("lr"), p.float("momentum"));
            }
            if let Some(dir) = ctx.save_to() {
                state.save(dir)?;
            }
            Ok(state.validation_loss())
        })
    };

    #[cfg(feature = "mpi")]
    let (result, rank) = {
        let runtime = propulate::transport::mpi::MpiRuntime::init()?;
        let mut world = runtime.world();
        let r = run(&mut world)?;
        (r, world.rank())
    };
    #[cfg(not(feature = "mpi"))]
    let (result, rank) = {
        let mut comm = propulate::transport::local::local_world(1).remove(0);
        (run(&mut comm)?, 0)
    };
    if rank == 0 {
        print!("{}", propulate::output::summary_table(&space, &result));
        // The best member's schedule: its hyperparameters along the states it grew from.
        let best = &result.best[0];
        for t in propulate::schedule::lineage_chain(&result.trials, best) {
            let l = t.lineage.as_deref().expect("a lineage");
            let how = if l.exploited {
                "exploited"
            } else if l.parent.is_some() {
                "continued"
            } else {
                "fresh"
            };
            println!(
                "steps {:>3}-{:<3} {how:<9} lr={:.2e} momentum={:.2} loss={:.5}",
                l.step,
                l.step_after(),
                t.params(&space).float("lr"),
                t.params(&space).float("momentum"),
                t.loss
            );
        }
    }
    Ok(())
}
