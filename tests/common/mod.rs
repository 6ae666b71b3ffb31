//! Helpers for tests that run the built binaries, under `mpirun` or with in-process ranks.
#![allow(dead_code)]

#[cfg(feature = "cnn")]
pub mod mnist;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The two transports every driver scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Mpi,
    Local,
}

pub const BOTH: [Transport; 2] = [Transport::Mpi, Transport::Local];

/// The Python with Optuna: PROPULATE_OPTUNA_PYTHON (the test command sets it), else the
/// environment scripts/install-optuna.sh makes.
pub fn optuna_python() -> PathBuf {
    std::env::var_os("PROPULATE_OPTUNA_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        let out = Command::new("bash").arg("scripts/install-optuna.sh").output().expect("bash runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// Export the run checkpointed in `dir/ck` as an Optuna journal (`propulate-rs report
/// --optuna-journal`), open it with Optuna and print, as JSON, `expression` over its trials (a
/// Python expression of `trials`, Optuna's FrozenTrial list); the value, read back.
pub fn through_optuna(dir: &Path, expression: &str) -> serde_json::Value {
    let journal = dir.join("study.log");
    let mut report = Command::new(bin());
    report.arg("report").arg(dir.join("ck")).arg("--out").arg(dir.join("out")).arg("--optuna-journal").arg(&journal);
    let reported = run_with_timeout(report, Duration::from_secs(60));
    assert!(reported.status.success(), "{}", String::from_utf8_lossy(&reported.stderr));
    let check = format!(
        "import json, sys\nimport optuna\n\
         storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(sys.argv[1]))\n\
         [summary] = optuna.get_all_study_summaries(storage)\n\
         trials = optuna.load_study(study_name=summary.study_name, storage=storage).get_trials(deepcopy=False)\n\
         print(json.dumps({expression}))\n"
    );
    let mut optuna = Command::new(optuna_python());
    optuna.args(["-c", &check]).arg(&journal);
    let opened = run_with_timeout(optuna, Duration::from_secs(120));
    assert!(opened.status.success(), "{}", String::from_utf8_lossy(&opened.stderr));
    serde_json::from_slice(&opened.stdout).expect("JSON from Optuna's side")
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_propulate-rs"))
}

/// An example binary built next to the main binary (cargo builds examples for `cargo test`).
pub fn example(name: &str) -> PathBuf {
    let b = bin();
    let dir = b.parent().expect("target dir");
    dir.join("examples").join(name)
}

/// An executable bash script `name` in `dir`: a stand-in for a batch system's command (sbatch, srun).
pub fn shim(dir: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `mpirun` for root, oversubscribed (CI machines have 2 cores), stdin closed.
pub fn mpirun(np: usize) -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .args(["--bind-to", "none", "-np", &np.to_string()]);
    c
}

/// Run a command with a time limit (a hang is a failure, not a stuck CI job). Its output is read
/// as it comes, so that a command printing more than a pipe holds does not stall.
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> Output {
    use std::io::Read;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // A grandchild still holding the pipes open must not hang the test either.
    let collect = |reader: std::thread::JoinHandle<Vec<u8>>| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if reader.is_finished() { reader.join().unwrap_or_default() } else { b"(output still open)".to_vec() }
    };
    let (stdout, stderr) = (collect(stdout), collect(stderr));
    match status {
        Some(status) => Output { status, stdout, stderr },
        None => panic!(
            "timed out after {limit:?}: {cmd:?}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        ),
    }
}

/// The stdout of a run that must have succeeded; else a panic with its status and both outputs.
pub fn succeeded(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "the run failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Every trial of `DIR/out/trials.jsonl`, as JSON.
pub fn trials_jsonl(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("out/trials.jsonl")).expect("trials.jsonl");
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Run `propulate-rs` with `np` ranks on `transport` on a benchmark function (sphere unless `args`
/// choose one), writing into `out`; panics on failure.
pub fn propulate(transport: Transport, np: usize, args: &[&str], out: &Path) -> (serde_json::Value, String) {
    let output = propulate_raw(transport, np, args, Some(out));
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{transport:?} -np {np} {args:?} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let best = std::fs::read_to_string(out.join("best.json")).expect("best.json");
    (serde_json::from_str(&best).expect("valid json"), stdout)
}

/// `propulate-rs` with `np` ranks on `transport`: under mpirun, or as threads (`--local-ranks`).
pub fn launch(transport: Transport, np: usize) -> Command {
    match transport {
        Transport::Mpi => {
            let mut c = mpirun(np);
            c.arg(bin());
            c
        }
        Transport::Local => {
            let mut c = Command::new(bin());
            c.args(["--local-ranks", &np.to_string()]);
            c
        }
    }
}

/// Start the mpirun job `cmd` (output discarded), wait until its checkpoint `ck` has recorded
/// `evaluations`, then kill -9 every rank by pid (OpenMPI's ranks outlive mpirun) and mpirun: the
/// evaluations in flight are cut mid-run.
pub fn kill_9_after(mut cmd: Command, ck: &Path, evaluations: usize) {
    let mut job = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    while recorded(ck) < evaluations {
        assert!(start.elapsed() < Duration::from_secs(120), "the run never recorded {evaluations} evaluations");
        assert!(job.try_wait().unwrap().is_none(), "the job ended before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill_9_job(job);
}

/// kill -9 every rank of an mpirun `job`, then mpirun: what a node failure or the wall time does.
pub fn kill_9_job(mut job: std::process::Child) {
    let ranks = Command::new("pgrep").arg("-P").arg(job.id().to_string()).output().unwrap();
    for pid in String::from_utf8_lossy(&ranks.stdout).split_whitespace() {
        let _ = Command::new("kill").args(["-9", pid]).status();
    }
    let _ = job.kill();
    let _ = job.wait();
}

/// Evaluations recorded so far in the checkpoint `dir` (counting lines; the journals may be mid-write).
pub fn recorded(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("worker-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default().matches(r#"{"e":"eval""#).count())
        .sum()
}

pub fn propulate_raw(transport: Transport, np: usize, args: &[&str], out: Option<&Path>) -> Output {
    let mut cmd = launch(transport, np);
    cmd.args(args).arg("--quiet");
    // The driver scenarios run a benchmark function: sphere unless `args` choose one.
    if !args.contains(&"--function") {
        cmd.args(["--function", "sphere"]);
    }
    match out {
        Some(out) => {
            cmd.arg("--out").arg(out).arg("--checkpoint").arg(out.join("checkpoint"));
        }
        None => {
            cmd.arg("--no-checkpoint");
        }
    }
    run_with_timeout(cmd, Duration::from_secs(300))
}

pub fn f64_of(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// The data `dir/report.html` was drawn from (the JSON in its `report-data` script element).
#[allow(dead_code)]
pub fn report_data(dir: &Path) -> serde_json::Value {
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html written");
    let start = r#"<script id="report-data" type="application/json">"#;
    let from = page.find(start).expect("report data") + start.len();
    let to = from + page[from..].find("</script>").expect("report data ends");
    serde_json::from_str(&page[from..to]).expect("report data is JSON")
}

/// The search space of [`TRAINING`]: a log float, a float, an int and a categorical.
#[allow(dead_code)]
pub const TRAINING_SPACE: &str = r#"
[params]
lr = { type = "float", low = 1e-4, high = 1e-1, log = true }
width = { type = "float", low = -1.0, high = 1.0 }
layers = { type = "int", low = 1, high = 6 }
act = { type = "categorical", choices = ["relu", "tanh", "broken"] }
"#;

/// A training stand-in: a learning curve set by the parameters, reported step by step; `broken`
/// fails (exit 1).
#[allow(dead_code)]
pub const TRAINING: &str = r#"
import sys, time
lr, width, layers, act = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if act == "broken":
    sys.exit("diverged")
level = (abs(lr - 0.01) * 10 + width * width + abs(layers - 3) * 0.1) + (0.2 if act == "tanh" else 0.0)
for step in range(1, 6):
    print(f"propulate: step={step} loss={level * (1 + 1 / step)}", flush=True)
    time.sleep(0.02)
print(f"propulate: loss={level}")
"#;

/// A trial with two objectives over one float `x` in [0, 1]: `accuracy` (to maximize) is x, `size`
/// (to minimize) 10 x^2, so every trial trades them; above 0.9 the result lacks `size`.
#[allow(dead_code)]
pub const TWO_OBJECTIVES: &str = "import json, os, sys\nx = float(sys.argv[1])\nr = {'accuracy': x}\n\
if x <= 0.9:\n    r['size'] = 10 * x * x\njson.dump(r, open(os.environ['PROPULATE_RESULT'], 'w'))\n";

/// The search space of [`TWO_OBJECTIVES`].
#[allow(dead_code)]
pub const TWO_OBJECTIVES_SPACE: &str = "[params]\nx = { type = \"float\", low = 0.0, high = 1.0 }\n";

/// The python of the virtual environment with torch that the README's set-up installs
/// (`scripts/libtorch-env.sh`: LIBTORCH is its `site-packages/torch`).
pub fn torch_python() -> PathBuf {
    let from_libtorch = std::env::var_os("LIBTORCH")
        .map(PathBuf::from)
        .and_then(|t| t.ancestors().nth(4).map(|venv| venv.join("bin/python")));
    let in_repo = Path::new(env!("CARGO_MANIFEST_DIR")).join(".torch/bin/python");
    [std::env::var_os("PROPULATE_TORCH_PYTHON").map(PathBuf::from), from_libtorch, Some(in_repo)]
        .into_iter()
        .flatten()
        .find(|p| p.exists())
        .expect("no python with torch: run the tests through scripts/test.sh (it installs torch into .torch/)")
}
