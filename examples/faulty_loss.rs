//! Test program: a loss that returns errors, panics, NaNs and infinities for some inputs. The run must finish,
//! record every failure with its reason, and keep optimising. Used by tests/mpi_driver.rs.
//!
//! `faulty_loss OUT_DIR [RANKS_PER_WORKER]`: with 2 ranks per worker, the second rank of each worker
//! also fails on its own for one evaluation in eight, while the worker's root returns a loss.

use propulate::transport::PointToPoint;
use propulate::{Optimizer, SearchSpace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let space = SearchSpace::builder().float("x", -1.0, 1.0).float("y", -1.0, 1.0).build()?;
    let runtime = propulate::transport::mpi::MpiRuntime::init()?;
    let mut world = runtime.world();
    // Silence the default panic message: the panics are expected here.
    std::panic::set_hook(Box::new(|_| {}));
    let ranks_per_worker = std::env::args().nth(2).map_or(Ok(1), |k| k.parse())?;
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: faulty_loss OUT_DIR"));
    let optimizer = Optimizer::new(space.clone()).generations(100).islands(2).seed(5).rank_logs(dir.join("logs"), 25);
    let r = optimizer.ranks_per_worker(ranks_per_worker).run(&mut world, |p, ctx| {
        let (x, y) = (p.float("x"), p.float("y"));
        // One evaluation in eight, whatever the search samples (the seed is the same on every
        // rank of the worker, so the root computes a loss for it).
        if ctx.worker_rank == 1 && ctx.seed % 8 == 0 {
            return Err(format!("seed {} fails on this rank only", ctx.seed).into());
        }
        // Each kind of failure at the space's edges, and for one evaluation in 32 each wherever
        // the search is: a search that found the middle early drew too few edge points to meet
        // all four in 400 evaluations, now and then.
        let forced = ctx.seed % 32;
        if x > 0.8 || forced == 3 {
            return Err(format!("x = {x:.3} is too large").into());
        }
        if x < -0.8 || forced == 5 {
            panic!("x = {x:.3} is too small");
        }
        if y > 0.8 || forced == 7 {
            return Ok(f64::NAN);
        }
        if y < -0.8 || forced == 9 {
            return Ok(f64::INFINITY);
        }
        Ok(x * x + y * y)
    })?;
    if world.rank() == 0 {
        propulate::output::write_outputs(&dir, &space, &r, Default::default())?;
        println!("failed {} of {}", r.failed, r.evaluations);
    }
    Ok(())
}
