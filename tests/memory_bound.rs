//! What a rank holds does not grow with the world (issue 53): in-process ranks take about the same
//! memory each at 128 and at 512 ranks (all of them pairing up would grow it with the square: 16
//! times for 4 times the ranks), and each rank of a 16-rank MPI run stays under 64 MB. Peak
//! resident memory from getrusage: the in-process runs' from this test's own children (the runs go
//! from the smaller up, each read before the next, and come first: mpirun itself can peak far
//! higher than its ranks, 360 MB where cargo's library path leads it to load more), each MPI rank's
//! from a wrapper around it. Nothing is timed. One test in its own binary: no other test's children
//! count.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{bin, mpirun, run_with_timeout, succeeded};

/// The largest peak resident memory of any process this test has waited for so far, in MB.
fn largest_child_mb() -> f64 {
    // SAFETY: getrusage fills the struct it is given; zeroed is a valid rusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) }, 0);
    usage.ru_maxrss as f64 / 1024.0 // kilobytes on Linux
}

fn in_process(ranks: usize) -> f64 {
    let mut cmd = Command::new(bin());
    cmd.args(["--local-ranks", &ranks.to_string(), "--islands", &(ranks / 8).to_string()]);
    cmd.args(["--function", "sphere", "--generations", "3", "--eval-delay-ms", "100", "--no-checkpoint", "--quiet"]);
    succeeded(&run_with_timeout(cmd, Duration::from_secs(300)));
    largest_child_mb()
}

/// Runs its arguments and writes their peak resident memory (KB) into DIR/rank-R.
const RANK_PEAK: &str = "import os, resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
open(os.path.join(sys.argv[1], 'rank-' + os.environ['OMPI_COMM_WORLD_RANK']), 'w').write(str(peak))
sys.exit(code)";

#[test]
fn a_ranks_memory_does_not_grow_with_the_world() {
    let small = in_process(128);
    let large = in_process(512);
    // Measured (debug build, 2 cores): 212 MB and 995 MB, 1.7 and 1.9 MB per rank.
    assert!(large / 512.0 < 3.0, "512 in-process ranks took {large:.0} MB, {:.2} MB each", large / 512.0);
    assert!(large < 6.0 * small, "128 ranks {small:.0} MB, 512 ranks {large:.0} MB: more than linear growth");

    let dir = tempfile::tempdir().unwrap();
    let mut cmd = mpirun(16);
    cmd.args(["python3", "-c", RANK_PEAK]).arg(dir.path()).arg(bin());
    cmd.args(["--islands", "2", "--function", "sphere", "--generations", "20"]);
    cmd.args(["--eval-delay-ms", "20", "--no-checkpoint", "--quiet"]);
    succeeded(&run_with_timeout(cmd, Duration::from_secs(300)));
    let peaks: Vec<f64> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap().trim().parse::<f64>().unwrap() / 1024.0)
        .collect();
    assert_eq!(peaks.len(), 16, "every rank reported its peak: {peaks:?}");
    let largest = peaks.iter().copied().fold(0.0, f64::max);
    assert!(largest > 5.0, "a rank's peak is its own, not nothing: {peaks:?}");
    assert!(largest < 64.0, "the largest of 16 MPI ranks peaked at {largest:.1} MB, the goal is under 64: {peaks:?}");
}
