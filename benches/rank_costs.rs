//! What one evaluation costs a worker's rank beside the evaluation itself, part by part, as its
//! island and the run's history grow: the inputs of the scale simulation (`benches/scale_sim.py`).
//!
//!   cargo bench --bench rank_costs
//!   ISLAND=8,64,1024 HISTORY=1000,10000,100000 REPS=15 cargo bench --bench rank_costs
//!
//! For an island of W workers whose population holds H evaluated individuals (4 float parameters):
//! - `breed`: one child bred by the genetic propagator (`ga`, the reference's), the GP and PBT;
//! - `receive`: one island peer's result handled as the driver handles it: decoded from the wire
//!   (the driver's own codec) and inserted into the population. A rank handles W - 1 of them for
//!   each evaluation of its own;
//! - `publish`: one result of its own encoded and sent to its W - 1 peers (the in-process transport:
//!   a channel per rank; MPI's per-message cost is in the real runs of `benches/utilization.py`);
//! - `journal`: its `bred` and `eval` records appended to its journal, with each fsync policy.
//!
//! Each is the median over REPS calls (receive: 50 x REPS messages). World size does not enter:
//! nothing a rank does per evaluation loops over the world (the termination's counts are indexed,
//! the end's collectives run once). Prints a table and appends JSON lines to
//! WORK/rank_costs.jsonl [bench-results/rank_costs], which the simulation reads.

mod common;
use common::{evaluated, island, space};

use std::io::Write;
use std::time::Instant;

use propulate::driver::message::{Message, TAG_DATA, decode, encode};

use propulate::SearchSpace;
use propulate::journal::{Bred, Eval, Event, FsyncPolicy, JournalWriter};
use propulate::population::Population;
use propulate::propagator::{Breeder, Pool, PropagatorSpec};
use propulate::rng::worker_rng;
use propulate::transport::PointToPoint;
use propulate::transport::local::local_world;

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The median seconds of one breed by `name` on `population`.
fn breed(name: &str, space: &SearchSpace, workers: usize, population: &Population, reps: usize) -> f64 {
    let propagator = PropagatorSpec::with_defaults(name, workers).and_then(|s| s.build(space)).expect("builds");
    let mut rng = worker_rng(2, 0);
    let next = (population.size() / workers) as u64 + 1;
    let times = (0..reps)
        .map(|rep| {
            let breeder = Breeder { island: 0, worker: (rep % workers) as u32, generation: next, since: 0 };
            let start = Instant::now();
            let child = propagator.propagate_as(breeder, population, space, &mut rng).expect("breeds");
            let took = start.elapsed().as_secs_f64();
            std::hint::black_box(child);
            took
        })
        .collect();
    median(times)
}

/// The median seconds to decode a peer's result and insert it, and the message's bytes.
fn receive(space: &SearchSpace, workers: usize, population: &mut Population, messages: usize) -> (f64, usize) {
    let mut rng = worker_rng(3, 0);
    let next = (population.size() / workers) as u64 + 1;
    let wire: Vec<Vec<u8>> = (0..messages)
        .map(|k| encode(&Message::Evaluated(evaluated(space, &mut rng, k % workers, next + (k / workers) as u64))))
        .collect();
    let bytes = wire[0].len();
    let times = wire
        .iter()
        .map(|bytes| {
            let start = Instant::now();
            let Message::Evaluated(ind) = decode::<Message>(bytes, 1).expect("decodes") else { unreachable!() };
            population.insert(ind);
            start.elapsed().as_secs_f64()
        })
        .collect();
    (median(times), bytes)
}

/// The median seconds to encode one result and send it to the `workers - 1` island peers.
fn publish(space: &SearchSpace, workers: usize, reps: usize) -> f64 {
    let mut world = local_world(workers);
    let mut rng = worker_rng(4, 0);
    let times = (0..reps)
        .map(|rep| {
            let ind = evaluated(space, &mut rng, 0, rep as u64);
            let start = Instant::now();
            let bytes = encode(&Message::Evaluated(ind));
            for peer in 1..workers {
                world[0].send(peer, TAG_DATA, bytes.clone()).expect("sends");
            }
            let took = start.elapsed().as_secs_f64();
            // Empty the inboxes outside the timing, so that memory stays flat.
            for comm in world.iter_mut().skip(1) {
                while comm.try_recv(TAG_DATA).expect("receives").is_some() {}
            }
            took
        })
        .collect();
    median(times)
}

/// The median seconds to journal one evaluation (its `bred` and `eval` records), and their bytes.
fn journal(space: &SearchSpace, policy: FsyncPolicy, reps: usize) -> (f64, u64) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut writer = JournalWriter::create(dir.path(), 0, policy).expect("opens");
    let mut rng = worker_rng(5, 0);
    let times = (0..reps)
        .map(|rep| {
            let ind = evaluated(space, &mut rng, 0, rep as u64);
            let start = Instant::now();
            writer.append(Event::Bred(Bred { id: ind.id, values: ind.values.clone() })).expect("appends");
            writer.append(Event::Eval(Eval { ind })).expect("appends");
            start.elapsed().as_secs_f64()
        })
        .collect();
    drop(writer);
    let bytes: u64 = std::fs::read_dir(dir.path())
        .expect("lists")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    (median(times), bytes / reps as u64)
}

fn list(var: &str, default: &str) -> Vec<usize> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().parse().unwrap_or_else(|_| panic!("{var}: comma-separated counts")))
        .collect()
}

fn main() {
    let islands = list("ISLAND", "8,64,1024");
    let histories = list("HISTORY", "1000,10000,100000");
    let reps = list("REPS", "15")[0];
    let work = std::env::var("WORK").unwrap_or_else(|_| "bench-results/rank_costs".into());
    std::fs::create_dir_all(&work).expect("WORK can be made");
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(format!("{work}/rank_costs.jsonl"))
        .expect("WORK/rank_costs.jsonl opens");
    let mut emit = |line: String| writeln!(out, "{line}").expect("writes");
    let space = space();
    let date = chrono::Utc::now().format("%Y-%m-%d");

    println!("median microseconds per call, {reps} calls each (receive: {} messages)", 50 * reps);
    println!(
        "{:>7} {:>8} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "island", "history", "ga", "gp", "pbt", "receive", "publish"
    );
    for &w in &islands {
        let publish = publish(&space, w, reps);
        for &h in &histories {
            let mut population = island(&space, w, h);
            let [ga, gp, pbt] = ["ga", "gp", "pbt"].map(|name| breed(name, &space, w, &population, reps));
            let (receive, message_bytes) = receive(&space, w, &mut population, 50 * reps);
            println!(
                "{w:>7} {h:>8} {:>10.1} {:>10.1} {:>10.1} {:>9.2} {:>9.1}",
                ga * 1e6,
                gp * 1e6,
                pbt * 1e6,
                receive * 1e6,
                publish * 1e6
            );
            emit(format!(
                "{{\"date\":\"{date}\",\"what\":\"island\",\"island\":{w},\"history\":{h},\"breed_ga_s\":{ga:e},\
                 \"breed_gp_s\":{gp:e},\"breed_pbt_s\":{pbt:e},\"receive_s\":{receive:e},\"publish_s\":{publish:e},\
                 \"message_bytes\":{message_bytes}}}"
            ));
        }
    }
    println!("journaling one evaluation (bred + eval records), median of {} evaluations", 20 * reps);
    for policy in [FsyncPolicy::Never, FsyncPolicy::default(), FsyncPolicy::Always] {
        let (seconds, bytes) = journal(&space, policy, 20 * reps);
        println!("  fsync {policy:>8}: {:>9.1} us, {bytes} bytes", seconds * 1e6);
        emit(format!(
            "{{\"date\":\"{date}\",\"what\":\"journal\",\"fsync\":\"{policy}\",\"journal_s\":{seconds:e},\
             \"journal_bytes\":{bytes}}}"
        ));
    }
}
