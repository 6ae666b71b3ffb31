//! The GPU launch scripts of tutorials/gpu/, run on one simulated node with stand-ins: `srun` is a
//! shim that starts the node's tasks with mpirun and gives each the variables Slurm would, PBS's
//! node file lists this machine, CUDA_VISIBLE_DEVICES names the node's GPUs, and a small benchmark
//! function replaces the CNN (TASK). Checked: one rank per GPU as the script asks, each rank on its
//! own GPU in the `env` lines, and a complete run with its outputs. And scripts/gpu-check.sh: without
//! a GPU it stops at once with one line, builds nothing and writes nothing; with a stand-in
//! nvidia-smi listing two GPUs it runs the checks it is given, writes its table and logs, and a
//! missing binary is a failed check that says which.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::shim;

const GENERATIONS: usize = 20;

fn tutorial(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tutorials/gpu").join(name)
}

/// The number after `key` (`--ntasks-per-node=4`, `mpiprocs=4`) in the script's directive lines.
fn directive(script: &str, prefix: &str, key: &str) -> usize {
    script
        .lines()
        .filter(|l| l.starts_with(prefix))
        .flat_map(|l| l.split([' ', ':']))
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
        .unwrap_or_else(|| panic!("no {key}=N in the {prefix} lines"))
}

/// A batch script run with bash as the batch system would, writing into `work`.
fn job(script: &Path, work: &Path, gpus: usize) -> Command {
    let mut cmd = Command::new("bash");
    let visible: Vec<String> = (0..gpus).map(|g| g.to_string()).collect();
    cmd.arg(script)
        .current_dir(work)
        .env("PROPULATE_BIN", common::bin())
        .env("TASK", format!("--function sphere --generations {GENERATIONS} --quiet"))
        .env("CHECKPOINT", work.join("ck"))
        .env("OUT", work.join("out"))
        .env("LOG", work)
        .env("CUDA_VISIBLE_DEVICES", visible.join(","))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    cmd
}

/// The job ran `ranks` ranks, one per GPU, 2 per worker on 2 islands, and wrote its outputs.
fn check_job(cmd: Command, work: &Path, launcher: &str, ranks: usize) {
    let out = common::run_with_timeout(cmd, Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("rank ")).collect();
    assert_eq!(lines.len(), ranks, "one `env` line per rank: {stdout}");
    for (r, line) in lines.iter().enumerate() {
        let (w, workers) = (r / 2, ranks / 2);
        let place = format!("rank {r} of {ranks} (worker {w} rank {} of 2, island {} of 2)", r % 2, w * 2 / workers);
        assert!(line.starts_with(&place), "{line}");
        let gpu = format!("launcher {launcher}, local rank {r} of {ranks}, {ranks} GPUs (CUDA_VISIBLE_DEVICES=");
        assert!(line.contains(&gpu) && line.ends_with(&format!("device gpu {r}")), "{line}");
    }
    let best: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("out/best.json")).unwrap()).unwrap();
    assert_eq!(best["evaluations"].as_u64(), Some((ranks / 2 * GENERATIONS) as u64), "{best}");
    assert_eq!(best["consistent"], serde_json::json!(true), "{best}");
    assert!(work.join("out/trials.csv").exists() && work.join("ck").is_dir());
    for r in 0..ranks {
        let log = std::fs::read_to_string(work.join(format!("out/logs/rank-{r:05}.log"))).unwrap();
        assert!(log.contains(&format!("launcher {launcher}, local rank {r}")), "{log}");
    }
}

#[test]
fn the_slurm_script_runs_one_rank_per_gpu_of_a_node() {
    let script = tutorial("cnn.sbatch");
    let text = std::fs::read_to_string(&script).unwrap();
    let ranks = directive(&text, "#SBATCH", "--ntasks-per-node");
    assert_eq!(ranks, directive(&text, "#SBATCH", "--gpus-per-node"), "one rank per GPU");
    let work = tempfile::tempdir().unwrap();
    let shims = work.path().join("bin");
    std::fs::create_dir(&shims).unwrap();
    // One node's tasks, numbered as srun numbers them; mpirun's own rank variables are removed so
    // that propulate-rs reads Slurm's, as under a real srun.
    shim(
        &shims,
        "srun",
        r#"echo "$*" >> "$LOG/srun.log"
exec mpirun -np "$SLURM_NTASKS_PER_NODE" --bind-to none bash -c \
  'export SLURM_PROCID=$OMPI_COMM_WORLD_RANK SLURM_LOCALID=$OMPI_COMM_WORLD_LOCAL_RANK
   unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE
   exec "$@"' srun-task "$@""#,
    );
    let mut cmd = job(&script, work.path(), ranks);
    cmd.env("PATH", format!("{}:{}", shims.display(), std::env::var("PATH").unwrap()))
        .env("SLURM_NTASKS_PER_NODE", ranks.to_string());
    check_job(cmd, work.path(), "Slurm", ranks);
    let sruns = std::fs::read_to_string(work.path().join("srun.log")).unwrap();
    let sruns: Vec<&str> = sruns.lines().collect();
    assert_eq!(sruns.len(), 2, "{sruns:?}");
    assert!(sruns[0].ends_with("env --islands 2 --ranks-per-worker 2"), "{sruns:?}");
    assert!(sruns[1].contains("--islands 2 --ranks-per-worker 2 --function sphere"), "{sruns:?}");
}

#[test]
fn the_pbs_script_runs_one_rank_per_gpu_of_a_chunk() {
    let script = tutorial("cnn.pbs");
    let text = std::fs::read_to_string(&script).unwrap();
    let ranks = directive(&text, "#PBS -l select", "mpiprocs");
    assert_eq!(ranks, directive(&text, "#PBS -l select", "ngpus"), "one rank per GPU");
    let work = tempfile::tempdir().unwrap();
    // One chunk on this machine: PBS lists its node once per MPI process.
    let nodefile = work.path().join("nodefile");
    std::fs::write(&nodefile, "localhost\n".repeat(ranks)).unwrap();
    let mut cmd = job(&script, work.path(), ranks);
    cmd.env("PBS_NODEFILE", &nodefile).env("PBS_O_WORKDIR", work.path());
    check_job(cmd, work.path(), "OpenMpi", ranks);
}

/// scripts/gpu-check.sh OUT with `shims` (name, body) first on PATH and `env` set.
fn gpu_check(work: &Path, shims: &[(&str, &str)], env: &[(&str, &str)]) -> std::process::Output {
    let bin_dir = work.join("shims");
    std::fs::create_dir_all(&bin_dir).unwrap();
    for (name, body) in shims {
        shim(&bin_dir, name, body);
    }
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new("bash");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gpu-check.sh")).arg(work.join("out"));
    cmd.env("PATH", path).env_remove("CUDA_VISIBLE_DEVICES").envs(env.iter().copied());
    common::run_with_timeout(cmd, Duration::from_secs(300))
}

#[test]
fn the_gpu_check_stops_at_once_with_one_line_where_there_is_no_gpu() {
    // A failing nvidia-smi (no driver) and one that finds no device; cargo records being called.
    for smi in [
        "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9",
        "echo 'No devices were found'",
    ] {
        let work = tempfile::tempdir().unwrap();
        let called = work.path().join("cargo-called");
        let cargo = format!("touch {}", called.display());
        let out = gpu_check(work.path(), &[("nvidia-smi", smi), ("cargo", &cargo)], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains("no NVIDIA GPU on this machine"), "{stderr}");
        assert!(out.stdout.is_empty());
        assert!(!called.exists(), "nothing was built");
        assert!(!work.path().join("out").exists(), "nothing was written");
    }
}

#[test]
fn the_gpu_check_writes_its_table_and_logs_and_names_a_missing_binary() {
    let work = tempfile::tempdir().unwrap();
    let bins = work.path().join("bins");
    std::fs::create_dir_all(&bins).unwrap();
    std::os::unix::fs::symlink(common::bin(), bins.join("propulate-rs")).unwrap();
    let smi = "if [ \"$1\" = -L ]; then echo 'GPU 0: Stand-in (UUID: GPU-0)'; echo 'GPU 1: Stand-in (UUID: GPU-1)'; fi";
    let env = [("PROPULATE_BIN_DIR", bins.to_str().unwrap()), ("GPU_CHECKS", "env nccl step")];
    let out = gpu_check(work.path(), &[("nvidia-smi", smi)], &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "a check failed: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    let table = std::fs::read_to_string(work.path().join("out/table.md")).unwrap();
    assert!(table.contains("2 GPU(s)") && table.contains("GPU 1: Stand-in"), "{table}");
    assert!(table.contains("| env | pass | 2 ranks on GPUs 0,1 |"), "each rank on its own GPU: {table}");
    assert!(table.contains("| nccl | fail |") && table.contains("nccl_check not found"), "{table}");
    assert!(table.contains("| step | fail |") && table.contains("cnn_step not found"), "{table}");
    assert_eq!(stdout.matches("| pass |").count() + stdout.matches("| fail |").count(), 3, "{stdout}");
    let env_log = std::fs::read_to_string(work.path().join("out/logs/env.log")).unwrap();
    assert_eq!(env_log.matches("device gpu").count(), 2, "{env_log}");
}
