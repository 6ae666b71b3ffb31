//! What a rank holds does not grow with the world (issue 53): the largest process of an MPI run of
//! 16 ranks stays under 64 MB, and in-process ranks take about the same memory each at 128 and at
//! 512 ranks (all of them pairing up would grow it with the square: 16 times for 4 times the ranks).
//! Peak resident memory from getrusage(RUSAGE_CHILDREN): the largest of the runs this test waited
//! for (ranks included, which mpirun waits for), so the runs go from the smallest up, each read
//! before the next. One test in its own binary: no other test's children count.

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

#[test]
fn a_ranks_memory_does_not_grow_with_the_world() {
    let mut cmd = mpirun(16);
    cmd.arg(bin()).args(["--islands", "2", "--function", "sphere", "--generations", "20"]);
    cmd.args(["--eval-delay-ms", "20", "--no-checkpoint", "--quiet"]);
    succeeded(&run_with_timeout(cmd, Duration::from_secs(300)));
    let mpi = largest_child_mb();
    assert!(mpi < 64.0, "the largest of 16 MPI ranks (or mpirun) peaked at {mpi:.1} MB, the goal is under 64");

    let small = in_process(128);
    let large = in_process(512);
    // Measured (debug build, 2 cores): 212 MB and 1,036 MB, 1.7 and 2.0 MB per rank.
    assert!(large / 512.0 < 3.0, "512 in-process ranks took {large:.0} MB, {:.2} MB each", large / 512.0);
    assert!(large < 6.0 * small, "128 ranks {small:.0} MB, 512 ranks {large:.0} MB: more than linear growth");
}
