//! Data-parallel support seen from a loss closure, on in-process ranks (the MPI path runs in
//! tests/mpi_driver.rs through the data_parallel tutorial).

use std::time::Duration;

use propulate::ddp::{CommGradSync, GradSync, replicas_agree, worker_store};
use propulate::{Optimizer, SearchSpace};

fn space() -> SearchSpace {
    SearchSpace::builder().float("x", 0.0, 1.0).build().unwrap()
}

#[test]
fn a_worker_root_that_cannot_serve_fails_the_evaluation_on_every_rank_without_hanging() {
    // In-process ranks share the host, so the root serves on the loopback interface.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let optimizer = Optimizer::new(space()).generations(3).ranks_per_worker(2);
    let result = optimizer
        .run_local(4, move |_, ctx| {
            let store = worker_store(ctx, port, Duration::from_secs(5))?;
            drop(store);
            Ok(0.0)
        })
        .unwrap();
    assert_eq!(result.evaluations, 6);
    assert_eq!(result.failed, 6);
    for t in &result.trials {
        let reason = t.failure.as_deref().unwrap();
        assert!(reason.contains(&format!("could not serve the store: port {port} on 127.0.0.1 is in use")), "{reason}");
    }
    drop(taken);
}

#[test]
fn ranks_of_a_worker_meet_in_the_store_and_average_gradients() {
    let optimizer = Optimizer::new(space()).generations(4).ranks_per_worker(3);
    let result = optimizer
        .run_local(6, |p, ctx| {
            let ws = worker_store(ctx, 0, Duration::from_secs(10))?;
            let mut store = ws.store;
            // Every rank adds its rank + 1: 1 + 2 + 3.
            store.add("sum", ctx.worker_rank as i64 + 1)?;
            store.barrier("added", ctx.worker_size)?;
            let sum = String::from_utf8(store.get("sum")?)?;
            if sum != "6" {
                return Err(format!("rank {} saw sum {sum}", ctx.worker_rank).into());
            }
            // Gradients 0, 1, 2 (by rank) average to 1 everywhere; params start as the root's.
            let mut grads = vec![ctx.worker_rank as f32; 5];
            let mut params = vec![ctx.worker_rank as f32 + p.float("x") as f32; 3];
            let mut sync = CommGradSync::new(ctx);
            assert_eq!(sync.ranks(), 3);
            sync.all_reduce_mean(&mut grads)?;
            sync.broadcast_from_root(&mut params)?;
            if grads != vec![1.0; 5] || params != vec![p.float("x") as f32; 3] {
                return Err(format!("rank {}: grads {grads:?}, params {params:?}", ctx.worker_rank).into());
            }
            if !replicas_agree(&mut sync, &params)? {
                return Err("replicas differ after the broadcast".into());
            }
            let mine = vec![sync.rank() as f32];
            if replicas_agree(&mut sync, &mine)? {
                return Err("different buffers were reported equal".into());
            }
            Ok(p.float("x"))
        })
        .unwrap();
    assert_eq!(result.evaluations, 8);
    assert_eq!(result.failed, 0, "{:?}", result.trials.iter().filter_map(|t| t.failure.clone()).collect::<Vec<_>>());
}
