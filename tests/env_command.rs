//! `propulate-rs env` against the built binary: one line per rank in rank order, with the launcher,
//! the local rank, the GPUs (from CUDA_VISIBLE_DEVICES, or a stand-in CUDA driver when it is unset)
//! and the device each rank would use; bad layout flags are one clear error.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{bin, mpirun, run_with_timeout};

fn run(cmd: Command) -> (Output, String, String) {
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out, stdout, stderr)
}

fn succeeded(cmd: Command) -> String {
    let (out, stdout, stderr) = run(cmd);
    assert!(out.status.success(), "{}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    stdout
}

#[test]
fn every_rank_reports_in_rank_order_with_its_gpu() {
    let mut cmd = mpirun(4);
    cmd.env("CUDA_VISIBLE_DEVICES", "0,1").args(["-x", "CUDA_VISIBLE_DEVICES"]);
    cmd.arg(bin()).args(["env", "--ranks-per-worker", "2", "--islands", "2"]);
    let stdout = succeeded(cmd);
    let host = propulate::launcher::hostname();
    // Workers 0 and 1 of 2 ranks each, one per island; local rank r takes GPU r mod 2.
    let expected: Vec<String> = (0..4)
        .map(|r| {
            format!(
                "rank {r} of 4 (worker {w} rank {k} of 2, island {w} of 2): host {host}, launcher OpenMpi, \
                 local rank {r} of 4, 2 GPUs (CUDA_VISIBLE_DEVICES=0,1), device gpu {g}",
                w = r / 2,
                k = r % 2,
                g = r % 2
            )
        })
        .collect();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected, "{stdout}");
}

#[test]
fn a_bad_layout_is_one_clear_error() {
    for (args, message) in [
        (&["--island-sizes", "1,2"][..], "island sizes [1, 2] add up to 3 workers, but there are 4"),
        (&["--ranks-per-worker", "3"][..], "4 ranks cannot be divided into workers of 3 ranks"),
        (&["--islands", "5"][..], "5 islands need at least 5 workers, but there are 4"),
    ] {
        let mut cmd = mpirun(4);
        cmd.arg(bin()).arg("env").args(args);
        let (out, stdout, stderr) = run(cmd);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.matches(message).count(), 1, "{args:?}: said once by rank 0: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: no rank line after an error: {stdout}");
    }
    let (out, _, stderr) = run({
        let mut cmd = Command::new(bin());
        cmd.args(["env", "--local-ranks", "0"]);
        cmd
    });
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--local-ranks 0: run 1 to 1024 ranks as threads"), "{stderr}");
}

#[test]
fn in_process_ranks_report_too() {
    let mut cmd = Command::new(bin());
    cmd.env("CUDA_VISIBLE_DEVICES", "-1").args(["env", "--local-ranks", "3", "--island-sizes", "2,1"]);
    let stdout = succeeded(cmd);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    for (r, line) in lines.iter().enumerate() {
        let island = usize::from(r == 2);
        assert!(line.starts_with(&format!("rank {r} of 3 (worker {r} rank 0 of 1, island {island} of 2)")), "{line}");
        assert!(
            line.ends_with("launcher Direct, local rank 0 of 1, 0 GPUs (CUDA_VISIBLE_DEVICES=-1), device cpu"),
            "{line}"
        );
    }
}

/// A stand-in `libcuda.so.1` whose cuInit returns `init_result` and whose cuDeviceGetCount reports
/// `gpus`, built with the system's C compiler into `dir`.
fn fake_driver(dir: &Path, init_result: i32, gpus: i32) {
    let source = dir.join("fake_cuda.c");
    std::fs::write(
        &source,
        format!(
            "int cuInit(unsigned int flags) {{ return flags == 0 ? {init_result} : 1; }}\n\
             int cuDeviceGetCount(int *count) {{ *count = {gpus}; return 0; }}\n"
        ),
    )
    .unwrap();
    let out =
        Command::new("cc").arg("-shared").arg("-fPIC").arg("-o").arg(dir.join("libcuda.so.1")).arg(&source).output();
    let out = out.expect("a C compiler (cc) builds the stand-in CUDA driver");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Without CUDA_VISIBLE_DEVICES the driver is asked; a driver that fails leaves the ranks on CPUs.
#[test]
fn without_cuda_visible_devices_the_driver_counts() {
    for (init_result, expected) in [
        (0, "3 GPUs (the CUDA driver), device gpu 0"),
        (999, "0 GPUs (no CUDA driver: cuInit failed with CUDA error 999), device cpu"),
        // CUDA_ERROR_NO_DEVICE: a driver without GPUs.
        (100, "0 GPUs (the CUDA driver), device cpu"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        fake_driver(dir.path(), init_result, 3);
        let mut cmd = Command::new(bin());
        // First on the search path, the rest kept (a libtorch build finds its libraries there).
        let search = std::env::var("LD_LIBRARY_PATH").map(|p| format!(":{p}")).unwrap_or_default();
        cmd.env_remove("CUDA_VISIBLE_DEVICES").env("LD_LIBRARY_PATH", format!("{}{search}", dir.path().display()));
        cmd.args(["env", "--local-ranks", "2"]);
        let stdout = succeeded(cmd);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{stdout}");
        // Threads of one process share local rank 0, so they would share the first GPU.
        assert!(lines.iter().all(|l| l.ends_with(expected)), "cuInit -> {init_result}: {stdout}");
    }
}

/// srun without an MPI plugin (or torchrun) starts copies that each see an MPI world of one: the
/// copies above rank 0 refuse to run (each would search on its own, all on one checkpoint), and
/// `env` says why their lines all read "rank 0 of 1".
#[test]
fn a_copy_of_a_job_that_mpi_does_not_see_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let checkpoint = work.path().join("ck");
    let mut cmd = Command::new(bin());
    cmd.env("SLURM_PROCID", "1").env("SLURM_NTASKS", "2");
    cmd.args(["--function", "sphere", "--generations", "2", "--checkpoint"]).arg(&checkpoint);
    let (out, _, stderr) = run(cmd);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("rank 1 of the job its launcher started (SLURM_PROCID=1), but MPI sees a world of 1"),
        "{stderr}"
    );
    assert!(!checkpoint.exists(), "nothing written");
    let mut cmd = Command::new(bin());
    cmd.env("LOCAL_RANK", "1").env("RANK", "3").env("WORLD_SIZE", "4").arg("env");
    let (out, stdout, stderr) = run(cmd);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with("rank 0 of 1 "), "{stdout}");
    assert!(stderr.contains("warning: this process is rank 3 of the job") && stderr.contains("torchrun"), "{stderr}");
}
