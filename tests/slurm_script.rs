//! The self-resubmitting Slurm script, run with stand-ins for sbatch, srun and scancel: a job cut off
//! mid-run leaves its successor queued; the successor resumes the run, finishes it, and cancels its
//! own successor.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::shim;

fn job(shims: &Path, work: &Path, job_number: u32, job_id: &str) -> std::process::Output {
    let mut cmd = Command::new("bash");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tutorials/slurm/resubmit.sbatch"))
        .env("PATH", format!("{}:{}", shims.display(), std::env::var("PATH").unwrap()))
        .env("PROPULATE_BIN", common::bin())
        .env("CHECKPOINT", work.join("ck"))
        .env("OUT", work.join("out"))
        .env("GENERATIONS", "300")
        .env("JOB_NUMBER", job_number.to_string())
        .env("SLURM_JOB_ID", job_id)
        .env("LOG", work)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    common::run_with_timeout(cmd, Duration::from_secs(300))
}

#[test]
fn a_cut_off_job_is_resumed_by_its_successor() {
    let work = tempfile::tempdir().unwrap();
    let shims = work.path().join("bin");
    std::fs::create_dir(&shims).unwrap();
    shim(&shims, "sbatch", r#"echo "$@" >> "$LOG/sbatch.log"; echo 4242"#);
    shim(&shims, "scancel", r#"echo "$@" >> "$LOG/scancel.log""#);
    // First job: the "wall-time" strikes mid-run: every rank and mpirun are killed.
    shim(
        &shims,
        "srun",
        r#"mpirun -np 4 --bind-to none "$@" --eval-delay-ms 2 -q >/dev/null 2>&1 &
mpirun_pid=$!
# Cut off mid-run: once 100 evaluations are recorded, however slow the machine.
until [ "$(cat "$CHECKPOINT"/worker-*.jsonl 2>/dev/null | grep -c '"e":"eval"')" -ge 100 ]; do sleep 0.02; done
for p in $(pgrep -P $mpirun_pid); do kill -9 $p; done
kill -9 $mpirun_pid
wait $mpirun_pid
exit 137"#,
    );
    let out = job(&shims, work.path(), 1, "100");
    assert_eq!(out.status.code(), Some(137), "{}", String::from_utf8_lossy(&out.stderr));
    let sbatch = std::fs::read_to_string(work.path().join("sbatch.log")).unwrap();
    assert!(sbatch.contains("--dependency=afterany:100") && sbatch.contains("JOB_NUMBER=2"), "{sbatch}");
    assert!(!work.path().join("scancel.log").exists(), "a cut-off job must leave its successor queued");
    let replay = propulate::journal::read_checkpoint(&work.path().join("ck")).unwrap().unwrap();
    let done: usize = replay.workers.iter().map(|j| j.evaluated.len()).sum();
    assert!(done > 0 && done < 1200, "the first job should have been cut off mid-run ({done} evaluations)");

    // The successor: srun works normally; the run completes and the next successor is cancelled.
    // The killed ranks are gone before the successor starts (their command lines name the work
    // directory): a successor beside a dying rank would meet its journal lock.
    let started = std::time::Instant::now();
    let work_dir = work.path().display().to_string();
    while Command::new("pgrep").args(["-f", &work_dir]).output().is_ok_and(|o| o.status.success()) {
        assert!(started.elapsed() < Duration::from_secs(30), "the killed job's processes outlived kill -9");
        std::thread::sleep(Duration::from_millis(10));
    }
    shim(&shims, "srun", r#"exec mpirun -np 4 --bind-to none "$@" -q"#);
    let out = job(&shims, work.path(), 2, "101");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("{done} from the checkpoint")), "{stdout}");
    assert_eq!(std::fs::read_to_string(work.path().join("scancel.log")).unwrap().trim(), "4242");
    let replay = propulate::journal::read_checkpoint(&work.path().join("ck")).unwrap().unwrap();
    assert!(replay.workers.iter().all(|j| j.evaluated.len() == 300 && j.done));
    assert!(work.path().join("out/best.json").exists());
}

/// A run that ended with every evaluation failed (status 3) or with bad input (2) is over: its
/// successor is cancelled, not left to resume it for nothing; a killed rank's status (1) is not.
#[test]
fn a_run_that_ended_cancels_its_successor_and_a_killed_one_does_not() {
    for (status, cancelled) in [(3, true), (2, true), (1, false)] {
        let work = tempfile::tempdir().unwrap();
        let shims = work.path().join("bin");
        std::fs::create_dir(&shims).unwrap();
        shim(&shims, "sbatch", r#"echo "$@" >> "$LOG/sbatch.log"; echo 4242"#);
        shim(&shims, "scancel", r#"echo "$@" >> "$LOG/scancel.log""#);
        shim(&shims, "srun", &format!("exit {status}"));
        let out = job(&shims, work.path(), 1, "100");
        assert_eq!(out.status.code(), Some(status));
        assert_eq!(work.path().join("scancel.log").exists(), cancelled, "status {status}");
    }
}
