//! Tutorial: optimise your own loss closure over a mixed search space, under MPI.
//!
//!     cargo build --release --example custom_loss
//!     mpirun -np 4 target/release/examples/custom_loss
//!
//! The loss below is a stand-in for "train a model with these hyperparameters and return its
//! validation loss". It fails on purpose for some inputs, to show that errors, panics and NaNs are
//! recorded as failed evaluations while the run goes on.

use propulate::transport::Communicator;
#[cfg(feature = "mpi")]
use propulate::transport::PointToPoint;
use propulate::{Optimizer, SearchSpace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let space = SearchSpace::builder()
        .log_float("lr", 1e-5, 1e-1)
        .int("layers", 1, 8)
        .categorical("activation", &["relu", "tanh", "sigmoid"])
        .build()?;
    let optimizer = Optimizer::new(space.clone()).generations(50).islands(2).seed(42).top_n(3);

    let run = |world: &mut dyn Communicator| {
        optimizer.run(world, |p, ctx| {
            let (lr, layers, act) = (p.float("lr"), p.int("layers"), p.category("activation"));
            if layers == 8 && act == "sigmoid" {
                return Err("diverged: 8 sigmoid layers".into()); // recorded as a failed evaluation
            }
            if lr > 0.05 {
                return Ok(f64::NAN); // recorded as a failed evaluation too
            }
            let act_penalty = match act {
                "relu" => 0.0,
                "tanh" => 0.1,
                _ => 0.3,
            };
            let _ = ctx.seed; // a per-evaluation seed, the same on every rank of the worker
            Ok((lr.log10() + 3.0).powi(2) + (layers as f64 - 4.0).abs() * 0.05 + act_penalty)
        })
    };

    #[cfg(feature = "mpi")]
    let result = {
        let runtime = propulate::transport::mpi::MpiRuntime::init()?;
        let mut world = runtime.world();
        let r = run(&mut world)?;
        if world.rank() == 0 {
            print!("{}", propulate::output::summary_table(&space, &r));
        }
        r
    };
    #[cfg(not(feature = "mpi"))]
    let result = {
        let mut comm = propulate::transport::local::local_world(1).remove(0);
        run(&mut comm)?
    };
    let best = &result.best[0];
    println!("best: lr={:.2e} loss={:.4}", best.params(&space).float("lr"), best.loss);
    Ok(())
}
