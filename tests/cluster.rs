//! Several hosts on one machine (scripts/cluster.sh: network namespaces on a bridge, Open MPI's
//! mpirun across them): each rank sees its own host, islands migrate between hosts, and a worker
//! whose two ranks sit on two hosts runs a command trial with `MASTER_ADDR` its first rank's host,
//! a PyTorch DDP command trial over gloo, and (with the CNN task built) the CNN search; a host lost
//! mid-run ends the job, and the hosts left resume it.
//! One test, because the hosts' names and the bridge are the machine's: two tests at once would
//! share them. Where network namespaces cannot be made (no root, no CAP_SYS_ADMIN) it says SKIPPED.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{bin, recorded, run_with_timeout, succeeded, torch_python, trials_jsonl};

fn cluster() -> Command {
    let mut c = Command::new("bash");
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster.sh"));
    c
}

fn cluster_run(args: &[&str]) -> Output {
    let mut c = cluster();
    c.args(args);
    run_with_timeout(c, Duration::from_secs(180))
}

/// `propulate-rs ARGS` across the hosts with `np` ranks, its checkpoint in `dir/ck` and its outputs
/// in `dir/out`; its stdout, which it must succeed.
fn propulate_on_hosts(np: &str, dir: &Path, args: &[&str]) -> String {
    let mut c = cluster();
    c.args(["mpirun", "-np", np]).arg(bin()).arg("--checkpoint").arg(dir.join("ck"));
    c.arg("--out").arg(dir.join("out")).args(args);
    succeeded(&run_with_timeout(c, Duration::from_secs(180)))
}

/// Takes the hosts down when the test ends, passed or failed.
struct Hosts;

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = cluster().arg("down").output();
    }
}

/// Each rank's host from `propulate-rs env`: rank r on host (r mod 3) + 1 (mpirun's `--map-by node`).
fn every_rank_sees_its_host() {
    let out = cluster_run(&["mpirun", "-np", "4", bin().to_str().unwrap(), "env"]);
    let stdout = succeeded(&out);
    for (rank, host) in [(0, "host1"), (1, "host2"), (2, "host3"), (3, "host1")] {
        let line =
            stdout.lines().find(|l| l.starts_with(&format!("rank {rank} of 4 "))).unwrap_or_else(|| panic!("{stdout}"));
        assert!(line.contains(&format!("host {host},")), "rank {rank} on {host}: {line}");
    }
}

/// Three islands of two workers, each island's ranks on two hosts (ranks 2i and 2i + 1), all
/// migrating: individuals bred on one host reach islands whose ranks are on others.
fn islands_migrate_between_hosts(dir: &Path) {
    let dir = dir.join("islands");
    // Each island's whole population in best.json (not only its best one, which may be home-bred).
    let args = [
        "--function",
        "sphere",
        "--islands",
        "3",
        "--generations",
        "25",
        "--migration-probability",
        "0.9",
        "--top-n",
        "60",
    ];
    propulate_on_hosts("6", &dir, &args);
    assert_eq!(trials_jsonl(&dir).len(), 6 * 25, "every evaluation recorded once");
    let best = std::fs::read_to_string(dir.join("out/best.json")).unwrap();
    let best: serde_json::Value = serde_json::from_str(&best).unwrap();
    let islands = best["islands"].as_array().unwrap_or_else(|| panic!("{best}"));
    let born_elsewhere = (0..islands.len())
        .flat_map(|k| islands[k].as_array().unwrap().iter().map(move |t| (k, t)))
        .filter(|(k, t)| t["island"].as_u64() != Some(*k as u64))
        .count();
    assert!(born_elsewhere > 0, "islands hold individuals bred on other islands' hosts: {best}");
}

/// A worker of two ranks on two hosts (ranks 0 and 1: host1 and host2) runs a command trial: both
/// ranks start it on their own hosts, `MASTER_ADDR` is the first rank's host (resolvable on both),
/// and the loss comes back.
fn a_command_trial_spans_two_hosts(dir: &Path) {
    let script = dir.join("where.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n\
         echo \"$(cat /proc/sys/kernel/hostname) $MASTER_ADDR $(getent hosts \"$MASTER_ADDR\" | cut -d' ' -f1)\" \
         > \"$PROPULATE_TRIAL_DIR/where-rank$RANK.txt\"\n\
         [ \"$RANK\" = 0 ] && echo \"propulate: loss=$1\"\nexit 0\n",
    )
    .unwrap();
    std::fs::write(dir.join("space.toml"), "[params]\nx = { type = \"float\", low = 0.0, high = 1.0 }\n").unwrap();
    let space = dir.join("space.toml");
    let dir = dir.join("trial");
    let (space, script) = (space.to_str().unwrap(), script.to_str().unwrap());
    propulate_on_hosts(
        "2",
        &dir,
        &["--space", space, "--ranks-per-worker", "2", "--generations", "2", "--", "sh", script, "{x}"],
    );
    let trials = trials_jsonl(&dir);
    assert_eq!(trials.len(), 2, "{trials:?}");
    assert!(trials.iter().all(|t| t["loss"].as_f64().is_some()), "{trials:?}");
    let trial = dir.join("ck/trials/island0-worker0-gen0");
    let read = |rank: usize| std::fs::read_to_string(trial.join(format!("where-rank{rank}.txt"))).unwrap();
    let (first, second) = (read(0), read(1));
    let first: Vec<&str> = first.split_whitespace().collect();
    let second: Vec<&str> = second.split_whitespace().collect();
    assert_eq!((first[0], second[0]), ("host1", "host2"), "{first:?} {second:?}");
    assert_eq!(first[1], "host1", "MASTER_ADDR is the first rank's host: {first:?}");
    assert_eq!(second[2], "10.77.0.11", "and resolves on the other host to the first one's address: {second:?}");
}

/// A PyTorch DDP program as the command trial of a worker whose two ranks are on host1 and host2:
/// torch's gloo group forms at `MASTER_ADDR` (host1) over the hosts' network, and its all-reduce
/// sums both ranks' contributions.
fn a_pytorch_ddp_trial_spans_two_hosts(dir: &Path) {
    let dir = dir.join("ddp");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("space.toml"), "[params]\nx = { type = \"float\", low = 0.0, high = 1.0 }\n").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trials/ddp_allreduce.py");
    let (space, python) = (dir.join("space.toml"), torch_python());
    let command = [python.to_str().unwrap(), script.to_str().unwrap()];
    let flags = ["--ranks-per-worker", "2", "--generations", "2", "--trial-timeout", "240", "--space"];
    let args: Vec<&str> = flags.into_iter().chain([space.to_str().unwrap(), "--"]).chain(command).collect();
    propulate_on_hosts("2", &dir, &args);
    let trials = trials_jsonl(&dir);
    assert_eq!(trials.len(), 2, "{trials:?}");
    for t in &trials {
        assert_eq!(t["failure"], serde_json::Value::Null, "{t}");
        // Ranks 0 and 1 contribute 1 and 2: only the all-reduce across the hosts gives 3.
        assert_eq!(t["metrics"]["rank_sum"], 3.0, "{t}");
        assert_eq!(t["metrics"]["world_size"], 2.0, "{t}");
    }
}

/// The main job, the CNN search, with each worker's two ranks on two hosts (ranks 0, 1 on host1,
/// host2; ranks 2, 3 on host3, host1): they meet through the worker's TCP store over the hosts'
/// network and average their gradients over MPI's TCP between hosts.
#[cfg(feature = "cnn")]
fn the_cnn_search_trains_each_network_on_two_hosts(dir: &Path) {
    let dir = dir.join("cnn");
    let data = common::mnist::data_dir().to_str().unwrap().to_string();
    let (out_dir, logs) = (dir.join("out"), dir.join("logs"));
    let out = cluster_run(&[
        "mpirun",
        "-np",
        "4",
        "-x",
        "OMP_NUM_THREADS=1",
        "-x",
        "RAYON_NUM_THREADS=1",
        bin().to_str().unwrap(),
        "--data",
        &data,
        "--train-images",
        "600",
        "--valid-images",
        "200",
        "--epochs",
        "2",
        "--batch",
        "2",
        "--generations",
        "1",
        "--seed",
        "9",
        "--no-checkpoint",
        "--out",
        out_dir.to_str().unwrap(),
        "--log-dir",
        logs.to_str().unwrap(),
    ]);
    let stdout = succeeded(&out);
    assert_eq!(stdout.lines().filter(|l| l.contains(": validation loss ")).count(), 2, "{stdout}");
    assert!(stdout.contains("evaluations: 2 (0 failed)"), "{stdout}");
    for (rank, host) in [(0, "host1"), (1, "host2"), (2, "host3"), (3, "host1")] {
        let log = std::fs::read_to_string(logs.join(format!("rank-{rank:05}.log"))).unwrap();
        assert!(log.contains(&format!("host {host}")), "rank {rank} on {host}: {log}");
    }
}

/// The search of [`a_lost_host_ends_the_job_and_the_others_continue`] with `np` ranks, `islands`
/// islands, on `hosts` (all when empty), writing `ck` and `out`, plus `extra`.
fn lost_host_search(np: &str, islands: &str, hosts: &[&str], dirs: (&Path, &Path), extra: &[&str]) -> Command {
    let mut c = cluster();
    c.arg("mpirun");
    if !hosts.is_empty() {
        c.args(["--host", &hosts.join(",")]);
    }
    c.args(["-np", np]).arg(bin()).args(["--function", "sphere", "--eval-delay-ms", "50", "--islands", islands]);
    c.args(["--generations", "60", "--checkpoint"]).arg(dirs.0).arg("--out").arg(dirs.1).args(extra);
    c
}

/// A node lost: every process of host3 killed mid-run (kill -9). The job ends, as MPI jobs do when
/// a rank dies, within seconds (bounded here by a minute: a hang fails the test). Then, on the
/// two hosts left, the same command (6 ranks, 3 per host) resumes with every journaled evaluation
/// and breeds the rest, none twice; and a smaller job (4 ranks, 2 islands) is seeded from the
/// checkpoint with `--reshape-from`, leaving it as it was.
fn a_lost_host_ends_the_job_and_the_others_continue(dir: &Path) {
    let dir = dir.join("lost");
    let (ck, out) = (dir.join("ck"), dir.join("out"));
    let mut job = lost_host_search("6", "3", &[], (&ck, &out), &[])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while recorded(&ck) < 60 {
        assert!(start.elapsed() < Duration::from_secs(120), "the run never recorded 60 evaluations");
        assert!(job.try_wait().unwrap().is_none(), "the job ended before host3 was lost");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = cluster_run(&["kill", "host3"]);
    assert!(killed.status.success(), "{}", String::from_utf8_lossy(&killed.stderr));
    let lost = Instant::now();
    let status = loop {
        if let Some(status) = job.try_wait().unwrap() {
            break status;
        }
        assert!(lost.elapsed() < Duration::from_secs(60), "the job hangs after losing host3");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success(), "the job ends with an error when a host is lost");
    eprintln!("host3 lost: the job ended {:.1} s later, {status}", lost.elapsed().as_secs_f64());
    let journaled = recorded(&ck);
    assert!(journaled < 6 * 60, "host3 was lost mid-run ({journaled} evaluations)");
    let journal_bytes =
        |dir: &Path| -> u64 { std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum() };
    let before = journal_bytes(&ck);

    // Fewer ranks: a new checkpoint seeded from the old one, which is only read.
    let (ck4, out4) = (dir.join("ck4"), dir.join("out4"));
    let mut smaller = lost_host_search("4", "2", &["host1:2", "host2:2"], (&ck4, &out4), &["--reshape-from"]);
    smaller.arg(&ck);
    let stdout = succeeded(&run_with_timeout(smaller, Duration::from_secs(180)));
    assert!(stdout.contains("evaluations: 240 (0 failed)"), "{stdout}");
    assert_eq!(journal_bytes(&ck), before, "--reshape-from leaves the old checkpoint as it was");

    // The same command on the hosts left: every journaled evaluation counts, none is made twice.
    let resumed = lost_host_search("6", "3", &["host1:3", "host2:3"], (&ck, &out), &[]);
    let stdout = succeeded(&run_with_timeout(resumed, Duration::from_secs(180)));
    assert!(stdout.contains(&format!("evaluations: 360 (0 failed, {journaled} from the checkpoint)")), "{stdout}");
    let trials = trials_jsonl(&dir);
    let ids: std::collections::HashSet<_> =
        trials.iter().map(|t| (t["island"].as_u64(), t["worker"].as_u64(), t["generation"].as_u64())).collect();
    assert_eq!((trials.len(), ids.len()), (360, 360), "each worker's 60 generations once");
}

#[test]
fn three_hosts_run_ranks_islands_and_workers_and_a_lost_one_is_survived() {
    let _ = cluster().arg("down").output();
    let up = cluster().args(["up", "3"]).output().expect("bash");
    if !up.status.success() {
        let why = String::from_utf8_lossy(&up.stderr);
        assert!(why.contains("cannot create the bridge"), "cluster.sh up failed otherwise: {why}");
        eprintln!("SKIPPED: network namespaces cannot be made here: {why}");
        return;
    }
    let _hosts = Hosts;
    assert!(String::from_utf8_lossy(&up.stdout).trim().ends_with("hostfile"));
    // Bad input: one clear error each, and the hosts stay as they are.
    for (args, error) in [
        (&["up", "2"][..], "hosts are up already (host1 host2 host3 ); run 'scripts/cluster.sh down' first"),
        (&["kill", "host9"][..], "no host 'host9' (hosts: host1 host2 host3 )"),
        (&["start"][..], "usage: scripts/cluster.sh up N | mpirun ARGS... | kill HOST | down"),
    ] {
        let out = cluster_run(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(error), "{args:?}: {stderr}");
    }
    let tmp = tempfile::tempdir().unwrap();
    every_rank_sees_its_host();
    islands_migrate_between_hosts(tmp.path());
    a_command_trial_spans_two_hosts(tmp.path());
    a_pytorch_ddp_trial_spans_two_hosts(tmp.path());
    a_lost_host_ends_the_job_and_the_others_continue(tmp.path());
    #[cfg(feature = "cnn")]
    the_cnn_search_trains_each_network_on_two_hosts(tmp.path());
}
