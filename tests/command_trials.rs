//! Command trials (`--space FILE -- COMMAND`) with real parts: a PyTorch DDP program over gloo as
//! the trial under mpirun with two ranks per worker, the environment every process gets, early
//! stopping, and the faults (a rank exits 1, is killed, hangs past the limit, writes garbage or
//! nothing; kill -9 of the whole job, then resume), each ending as documented with no process left
//! behind.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Transport, bin, kill_9_after, mpirun, recorded, run_with_timeout, succeeded, torch_python, trials_jsonl};
use serde_json::Value;

fn fake_trial() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trials/fake_trial.sh").display().to_string()
}

/// A marker unique to one test, put into the command line of every process its trials start.
fn marker(name: &str) -> String {
    format!("propulate-test-{name}-{}", std::process::id())
}

const SPACE: &str = "[params]\nx = { type = \"float\", low = -2.0, high = 2.0 }\n";

/// `propulate-rs` on `transport` with `np` ranks tuning `command` over `space`, into `dir`
/// (checkpoint `dir/ck`, results `dir/out`).
fn run_trials(transport: Transport, np: usize, space: &str, flags: &[&str], command: &[&str], dir: &Path) -> Output {
    std::fs::write(dir.join("space.toml"), space).unwrap();
    let mut cmd = common::launch(transport, np);
    cmd.arg("--space").arg(dir.join("space.toml")).args(flags);
    cmd.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(dir.join("out"));
    cmd.arg("--").args(command);
    run_with_timeout(cmd, Duration::from_secs(300))
}

fn trial_dir(dir: &Path, t: &Value) -> PathBuf {
    dir.join("ck/trials").join(format!("island{}-worker{}-gen{}", t["island"], t["worker"], t["generation"]))
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let out = Command::new("pgrep").arg("-af").arg(marker).output().expect("pgrep");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

/// No process of `marker` is left (allowing `within` for the kernel to deliver the signals).
fn assert_none_left(marker: &str, within: Duration) {
    let start = Instant::now();
    while !processes_with(marker).is_empty() {
        assert!(start.elapsed() < within, "trial processes were left behind: {:?}", processes_with(marker));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Started afresh, and forked from a Python that imported torch already (`--preload torch`).
#[test]
fn a_pytorch_ddp_program_is_tuned_by_two_rank_workers() {
    for preload in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trials/ddp_allreduce.py");
        let python = torch_python();
        let command = [python.to_str().unwrap(), script.to_str().unwrap()];
        let mut flags = vec!["--ranks-per-worker", "2", "--generations", "2", "--trial-timeout", "240"];
        if preload {
            flags.extend(["--preload", "torch"]);
        }
        let out = run_trials(Transport::Mpi, 4, SPACE, &flags, &command, tmp.path());
        let stdout = succeeded(&out);
        assert!(stdout.contains("worker 1 (island 0) generation 1: x="), "one line per evaluation:\n{stdout}");
        let trials = trials_jsonl(tmp.path());
        assert_eq!(trials.len(), 4);
        for t in &trials {
            assert_eq!(t["failure"], Value::Null, "{t}");
            let x = t["params"]["x"].as_f64().unwrap();
            // Ranks 0 and 1 contribute 1 and 2: only the all-reduce over both gives 3.
            assert_eq!(t["metrics"]["rank_sum"], 3.0, "{t}");
            assert_eq!(t["metrics"]["world_size"], 2.0, "{t}");
            assert_eq!(t["metrics"]["torch_preloaded"], if preload { 1.0 } else { 0.0 }, "{t}");
            let expected = 3.0 * (x - 0.5) * (x - 0.5);
            assert!((t["loss"].as_f64().unwrap() - expected).abs() <= 1e-12 * expected.max(1.0), "{t}");
            let logs = trial_dir(tmp.path(), t);
            for rank in 0..2 {
                let (stdout, stderr) =
                    (logs.join(format!("rank{rank}.stdout")), logs.join(format!("rank{rank}.stderr")));
                assert!(stdout.exists() && stderr.exists(), "{}", logs.display());
            }
            let fifos = std::fs::read_dir(&logs)
                .unwrap()
                .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "fifo"));
            assert_eq!(fifos.count(), 0, "the FIFOs of the forked processes' stdout are removed");
        }
    }
}

/// The stand-in for a Python program under `--preload decimal`, in `mode`.
fn python_trial(mode: &str, mark: &str) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trials/fake_trial.py");
    ["python3", script.to_str().unwrap(), mode, mark, "{x}"].map(String::from).into()
}

/// A forked process runs the program as `__main__` with its arguments and environment, its
/// reports arrive as they are printed, its unflushed output when it ends; its faults end the trial
/// as a fresh process's do (status, signal, traceback, time limit), and no process is left.
#[test]
fn a_program_forked_from_a_preloaded_python_runs_and_fails_as_a_fresh_one() {
    let cases: [(&str, &[&str]); 5] = [
        ("ok", &[]),
        ("exit3", &["rank 1's process exited with status 3", "stderr ends: Traceback: boom on rank 1"]),
        ("raise", &["rank 1's process exited with status 1", "RuntimeError: boom on rank 1"]),
        ("killed", &["rank 1's process was killed by signal 9 (SIGKILL)"]),
        ("hang", &["timed out: still running after 2 s (--trial-timeout)"]),
    ];
    for (mode, reasons) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let mark = marker(&format!("preload-{mode}"));
        let command = python_trial(mode, &mark);
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        let flags = ["--ranks-per-worker", "2", "--generations", "2", "--trial-timeout", "2", "--preload", "decimal"];
        let out = run_trials(Transport::Mpi, 2, SPACE, &flags, &command, tmp.path());
        // A run whose every evaluation failed ends with status 3.
        let status = if reasons.is_empty() { 0 } else { 3 };
        assert_eq!(out.status.code(), Some(status), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        let trials = trials_jsonl(tmp.path());
        assert_eq!(trials.len(), 2, "{mode}");
        for t in &trials {
            if reasons.is_empty() {
                assert_eq!(t["failure"], Value::Null, "{t}");
                let x = t["params"]["x"].as_f64().unwrap();
                assert_eq!(t["loss"].as_f64().unwrap(), x * x, "{t}");
                assert_eq!(t["curve"].as_array().unwrap().len(), 2, "both reports were heard: {t}");
                for rank in 0..2 {
                    let seen = std::fs::read_to_string(trial_dir(tmp.path(), t).join(format!("seen-rank{rank}.json")));
                    let seen: Value = serde_json::from_str(&seen.unwrap()).unwrap();
                    assert_eq!(seen["name"], "__main__", "{seen}");
                    assert_eq!(seen["decimal_preloaded"], true, "{seen}");
                    assert_eq!(seen["rank"], rank.to_string(), "{seen}");
                    assert_eq!(seen["local_rank"], rank.to_string(), "{seen}");
                    assert_eq!(seen["params"]["x"], t["params"]["x"], "{seen}");
                    assert_eq!(seen["argv"][1], mode, "sys.argv is the script's: {seen}");
                    assert!(seen["argv"][0].as_str().unwrap().ends_with("fake_trial.py"), "{seen}");
                    let id = format!("{}/{}/{}", t["island"], t["worker"], t["generation"]);
                    assert_eq!(seen["trial"], id, "{seen}");
                }
            } else {
                let failure = t["failure"].as_str().unwrap_or_else(|| panic!("{mode}: not failed: {t}"));
                for reason in reasons {
                    assert!(failure.contains(reason), "{mode}: {reason:?} not in {failure:?}");
                }
            }
        }
        assert_none_left(&mark, Duration::from_secs(5));
    }
}

#[test]
fn every_process_gets_torchruns_environment_and_the_candidate() {
    let tmp = tempfile::tempdir().unwrap();
    let mark = marker("env");
    let trial = fake_trial();
    let out = run_trials(
        Transport::Mpi,
        4,
        SPACE,
        &["--ranks-per-worker", "2", "--generations", "2", "--islands", "2"],
        &[&trial, "ok", &mark, "{x}"],
        tmp.path(),
    );
    succeeded(&out);
    let trials = trials_jsonl(tmp.path());
    assert_eq!(trials.len(), 4);
    for t in &trials {
        let x = t["params"]["x"].as_f64().unwrap();
        assert_eq!(t["loss"].as_f64().unwrap(), x * x, "{t}");
        assert_eq!(t["metrics"]["accuracy"], 0.75, "numeric keys of the result file are metrics: {t}");
        assert!(t["metrics"].get("note").is_none(), "{t}");
        let dir = trial_dir(tmp.path(), t);
        let env = |rank: usize| -> std::collections::BTreeMap<String, String> {
            std::fs::read_to_string(dir.join(format!("env-rank{rank}.txt")))
                .unwrap()
                .lines()
                .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
                .collect()
        };
        let (e0, e1) = (env(0), env(1));
        for (rank, e) in [(0, &e0), (1, &e1)] {
            assert_eq!(e["RANK"], rank.to_string());
            assert_eq!(e["LOCAL_RANK"], rank.to_string());
            assert_eq!(e["WORLD_SIZE"], "2");
            assert_eq!(e["LOCAL_WORLD_SIZE"], "2");
            assert_eq!(e["MASTER_ADDR"], "127.0.0.1");
            let params: Value = serde_json::from_str(&e["PROPULATE_PARAMS"]).unwrap();
            assert_eq!(params["x"].as_f64().unwrap(), x);
            assert_eq!(e["PROPULATE_TRIAL"], format!("{}/{}/{}", t["island"], t["worker"], t["generation"]));
            assert_eq!(Path::new(&e["PROPULATE_TRIAL_DIR"]), dir.canonicalize().unwrap());
            assert_eq!(Path::new(&e["PROPULATE_RESULT"]), dir.canonicalize().unwrap().join("result.json"));
            assert!(e["OMP_NUM_THREADS"].parse::<usize>().unwrap() >= 1);
            // Not the rank's place in mpirun's job (a training that starts MPI joined it as a rank
            // it is not, and the job hung); what configures MPI stays.
            assert!(!e.contains_key("OMPI_COMM_WORLD_RANK") && !e.contains_key("PMIX_RANK"), "{e:?}");
            if let Ok(root) = std::env::var("OMPI_ALLOW_RUN_AS_ROOT") {
                assert_eq!(e["OMPI_ALLOW_RUN_AS_ROOT"], root, "{e:?}");
            }
        }
        assert_eq!(e0["MASTER_PORT"], e1["MASTER_PORT"], "both ranks of a trial meet at one port");
    }
    assert_none_left(&mark, Duration::from_secs(5));
}

#[test]
fn a_loss_line_on_stdout_is_a_result_and_parameters_are_appended_without_placeholders() {
    for transport in common::BOTH {
        let tmp = tempfile::tempdir().unwrap();
        let mark = marker("stdout");
        let space = "[params]\nx = { type = \"float\", low = 0.5, high = 2.0, log = true }\n\
                     act = { type = \"categorical\", choices = [\"relu\", \"tanh\"] }\n";
        // bash -c 'script "$@"': the appended --x=... --act=... arrive as $1 and $2.
        let script = format!("exec {} stdout {mark} ${{1#--x=}}; : \"$2\"", fake_trial());
        let out =
            run_trials(transport, 2, space, &["--generations", "3"], &["bash", "-c", &script, "trial"], tmp.path());
        succeeded(&out);
        let trials = trials_jsonl(tmp.path());
        assert_eq!(trials.len(), 6, "{transport:?}");
        for t in &trials {
            let x = t["params"]["x"].as_f64().unwrap();
            assert_eq!(t["loss"].as_f64().unwrap(), x * x, "{transport:?}: {t}");
            let stdout = std::fs::read_to_string(trial_dir(tmp.path(), t).join("rank0.stdout")).unwrap();
            assert!(
                stdout.starts_with("some output of rank 0\n\r 50%|##  |\r100%|####|\rpropulate: loss="),
                "{stdout}"
            );
        }
    }
}

/// One fault per run, two ranks per worker: every trial fails with its reason, the run goes on to
/// its end (status 3: nothing succeeded), and no process of any trial is left.
#[test]
fn a_failing_rank_fails_the_trial_and_stops_every_process_of_it() {
    let cases: [(&str, Transport, &[&str]); 8] = [
        ("exit1", Transport::Mpi, &["rank 1's process exited with status 1", "stderr ends: Traceback: boom on rank 1"]),
        ("exit1", Transport::Local, &["rank 1's process exited with status 1"]),
        ("killed", Transport::Mpi, &["rank 1's process was killed by signal 9 (SIGKILL)"]),
        (
            "hang",
            Transport::Mpi,
            &[
                "timed out: still running after 2 s (--trial-timeout) (rank(s) 0, 1)",
                "rank 1's stderr ends: waiting in all_reduce on rank 1",
            ],
        ),
        ("garbage", Transport::Mpi, &["is not JSON"]),
        ("silent", Transport::Mpi, &["no result: rank 0's process wrote no $PROPULATE_RESULT"]),
        ("stderr", Transport::Mpi, &["line went to stderr, which is not read: print it to stdout"]),
        ("steps", Transport::Mpi, &["are intermediate values for early stopping; the result is a last line"]),
    ];
    for (mode, transport, reasons) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let mark = marker(mode);
        let out = run_trials(
            transport,
            2,
            SPACE,
            &["--ranks-per-worker", "2", "--generations", "2", "--trial-timeout", "2"],
            &[&fake_trial(), mode, &mark, "{x}"],
            tmp.path(),
        );
        // Every evaluation fails: the run ends with status 3 (see the test below).
        assert_eq!(out.status.code(), Some(3), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let trials = trials_jsonl(tmp.path());
        assert_eq!(trials.len(), 2, "{mode}");
        for t in &trials {
            let failure = t["failure"].as_str().unwrap_or_else(|| panic!("{mode}: not failed: {t}"));
            for reason in reasons {
                assert!(failure.contains(reason), "{mode} {transport:?}: {reason:?} not in {failure:?}");
            }
        }
        assert!(stdout.contains("failed: "), "{mode}: the line per evaluation says so:\n{stdout}");
        assert_none_left(&mark, Duration::from_secs(5));
    }
}

/// A run whose every evaluation failed ends with its outputs written (the failures' reasons) but
/// a failing status on every rank and no "best loss inf", so that a script learns there is nothing
/// to use.
#[test]
fn a_run_where_every_evaluation_failed_ends_with_status_3() {
    for transport in common::BOTH {
        let tmp = tempfile::tempdir().unwrap();
        let out = run_trials(transport, 2, SPACE, &["--generations", "2"], &["false"], tmp.path());
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(3), "{transport:?}: {stderr}");
        assert!(stderr.contains("propulate-rs: error: all 4 evaluations failed"), "{transport:?}: {stderr}");
        assert!(stdout.contains("no evaluation succeeded: every one failed, as this one did: "), "{stdout}");
        assert!(!stdout.contains("best loss"), "{stdout}");
        assert_eq!(trials_jsonl(tmp.path()).len(), 4, "{transport:?}: the outputs are written");
    }
    // Its status stays 3 with stderr a pipe nobody reads any more (`2>&1 | head`): the last
    // message's write fails, and used to panic (status 101).
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("space.toml"), SPACE).unwrap();
    let mut cmd = Command::new(bin());
    cmd.args(["--local-ranks", "1", "--generations", "1", "--no-checkpoint", "--space"]);
    cmd.arg(tmp.path().join("space.toml")).args(["--", "false"]);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(3));
}

#[test]
fn early_stopping_prunes_a_trial_on_every_rank_with_its_last_value() {
    let tmp = tempfile::tempdir().unwrap();
    let mark = marker("curve");
    // One worker, so that the sequence of trials (and so what is pruned) is the same every time.
    let flags = ["--ranks-per-worker", "2", "--generations", "10", "--early-stop", "median", "--propagator", "ga"];
    let flags = [&flags[..], &["--random-start", "10", "--seed", "3"]].concat();
    let out = run_trials(Transport::Mpi, 2, SPACE, &flags, &[&fake_trial(), "curve", &mark, "{x}"], tmp.path());
    let stdout = succeeded(&out);
    let trials = trials_jsonl(tmp.path());
    assert_eq!(trials.len(), 10);
    let pruned: Vec<&Value> = trials.iter().filter(|t| t["pruned"] == true).collect();
    assert!(!pruned.is_empty(), "nothing was pruned:\n{stdout}");
    for t in &trials {
        assert_eq!(t["failure"], Value::Null, "{t}");
        let curve = t["curve"].as_array().unwrap();
        let last = curve.last().unwrap()[1].as_f64().unwrap();
        if t["pruned"] == true {
            assert_eq!(t["loss"].as_f64().unwrap(), last, "a pruned trial's loss is its last report: {t}");
            assert!(curve.len() < 6, "{t}");
        } else {
            assert_eq!(curve.len(), 6, "{t}");
            let x = t["params"]["x"].as_f64().unwrap();
            assert_eq!(t["loss"].as_f64().unwrap(), x * x, "{t}");
        }
    }
    assert!(stdout.contains("pruned after step"), "{stdout}");
    assert_none_left(&mark, Duration::from_secs(5));
}

#[test]
fn a_kill_9_of_the_job_leaves_no_trial_process_and_the_resume_completes_the_budget_exactly() {
    for preload in [false, true] {
        kill_9_then_resume(preload);
    }
}

/// What a trial's process started (here `python3 -c 'sleep 600'` under the trial's bash, as a
/// `bash train.sh` starts python) goes with a `kill -9` of the job too: the parent-death signal
/// reaches only the rank's own child, the group's guard the rest.
#[test]
fn a_kill_9_of_the_job_takes_what_the_trials_started_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mark = marker("grandchild");
    std::fs::write(tmp.path().join("space.toml"), SPACE).unwrap();
    let mut cmd = mpirun(2);
    cmd.arg(bin()).arg("--space").arg(tmp.path().join("space.toml"));
    cmd.arg("--trials-dir").arg(tmp.path().join("trials"));
    cmd.args(["--generations", "1", "--no-checkpoint", "--quiet", "--"]).args([&fake_trial(), "hang", &mark, "{x}"]);
    let job = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    // Both ranks' trials are sleeping in their grandchildren.
    while processes_with(&mark).iter().filter(|p| p.contains("import time")).count() < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "the trials never started: {:?}", processes_with(&mark));
        std::thread::sleep(Duration::from_millis(20));
    }
    common::kill_9_job(job);
    assert_none_left(&mark, Duration::from_secs(10));
}

/// With `preload`, the processes are forked from a preloaded Python: it too must go with the job.
fn kill_9_then_resume(preload: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mark = marker(if preload { "kill-preload" } else { "kill" });
    std::fs::write(dir.join("space.toml"), SPACE).unwrap();
    let command = if preload {
        python_trial("slow", &mark)
    } else {
        [fake_trial().as_str(), "slow", &mark, "{x}"].map(String::from).into()
    };
    let job_args = |c: &mut Command| {
        c.arg(bin()).arg("--space").arg(dir.join("space.toml"));
        c.args(["--ranks-per-worker", "2", "--generations", "6", "--quiet"]);
        if preload {
            c.args(["--preload", "decimal"]);
        }
        c.arg("--checkpoint").arg(dir.join("ck")).arg("--out").arg(dir.join("out"));
        c.arg("--").args(&command);
    };
    let mut cmd = mpirun(4);
    job_args(&mut cmd);
    kill_9_after(cmd, &dir.join("ck"), 3);
    assert!(recorded(&dir.join("ck")) < 12, "the kill came after the end");
    assert_none_left(&mark, Duration::from_secs(10));
    let mut cmd = mpirun(4);
    job_args(&mut cmd);
    let out = run_with_timeout(cmd, Duration::from_secs(300));
    succeeded(&out);
    let trials = trials_jsonl(dir);
    let ids: std::collections::BTreeSet<(u64, u64)> =
        trials.iter().map(|t| (t["worker"].as_u64().unwrap(), t["generation"].as_u64().unwrap())).collect();
    assert_eq!(trials.len(), 12, "exactly the budget: 2 workers x 6 generations");
    assert_eq!(ids.len(), 12, "no trial twice");
    assert!(trials.iter().all(|t| t["failure"].is_null()), "the interrupted trials ran again and finished");
    assert_none_left(&mark, Duration::from_secs(5));
}

#[test]
fn bad_command_trial_flags_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let space = tmp.path().join("space.toml");
    std::fs::write(&space, "[params]\nlr = { type = \"float\", low = 1e-2, high = 1e-4, log = true }\n").unwrap();
    let good = tmp.path().join("good.toml");
    std::fs::write(&good, SPACE).unwrap();
    let s = space.to_str().unwrap();
    let g = good.to_str().unwrap();
    let plain = tmp.path().join("plain.sh");
    std::fs::write(&plain, "echo 'propulate: loss=1'\n").unwrap();
    let p = plain.to_str().unwrap();
    let a_file = p; // a regular file where a directory belongs
    let cases: [(&[&str], &str); 14] = [
        (&["--function", "sphere", "--", "true"], "--function sphere and a trial command (true) are two tasks"),
        (&["--space", s, "--", "true"], "parameter 'lr': lower bound 0.01 must be below upper bound 0.0001"),
        (&["--space", g, "--trial-timeout", "1e30", "--", "true"], "leave the flag out for no time limit"),
        (&["--space", g], "needs the trial command after `--`"),
        (&["--", "python", "train.py"], "a trial command (python train.py) needs its search space: add --space FILE"),
        (&["--space", g, "--trial-timeout", "0", "--", "true"], "--trial-timeout must be a positive number"),
        (
            &["--function", "sphere", "--trial-timeout", "5"],
            "--trial-timeout, --trials-dir and --preload belong to command trials",
        ),
        (&["--space", g, "--early-stop", "sometimes", "--", "true"], "--early-stop sometimes is not a known"),
        (&["--space", g, "--preload", "torch", "--", "./train.sh"], "must be `PYTHON [-u] SCRIPT ARGS...`"),
        (&["--space", g, "--preload", "1x", "--", "python3", "t.py"], "`1x` is not a Python module name"),
        (
            &["--space", g, "--preload", "decimal,no_such_module_x", "--", "python3", "t.py"],
            "the trial's Python `python3` finds no module no_such_module_x",
        ),
        // The program is checked before any rank evaluates: not a trial failure per evaluation.
        (&["--space", g, "--", "no-such-trainer-x", "--epochs", "3"], "`no-such-trainer-x` is not on PATH"),
        (&["--space", g, "--", p], "is not executable: `chmod +x"),
        (&["--space", g, "--trials-dir", a_file, "--", "true"], "plain.sh is not a directory (--trials-dir"),
    ];
    for (args, expected) in cases {
        let mut cmd = Command::new(bin());
        cmd.args(["--local-ranks", "1", "--no-checkpoint"]).args(args);
        let out = run_with_timeout(cmd, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in {stderr}");
    }
    // Under mpirun too: every rank refuses it at set-up, and no trial ran.
    let mut cmd = mpirun(2);
    cmd.arg(bin()).args(["--space", g, "--out"]).arg(tmp.path().join("out"));
    cmd.args(["--no-checkpoint", "--", "no-such-trainer-x"]);
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("`no-such-trainer-x` is not on PATH"), "{stderr}");
    assert!(!tmp.path().join("out").join("trials.csv").exists(), "no trial table: nothing ran");
    // Results or trials written inside the checkpoint under a name it does not keep: its next
    // resume would refuse the directory, so the first run is refused.
    let ck = tmp.path().join("ck");
    for (flag, place) in [("--out", ck.join("results")), ("--trials-dir", ck.join("mine"))] {
        let mut cmd = Command::new(bin());
        cmd.args(["--local-ranks", "1", "--space", g, "--checkpoint"]).arg(&ck).arg(flag).arg(&place);
        cmd.args(["--", "true"]);
        let out = run_with_timeout(cmd, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("{flag} {} is inside the checkpoint", place.display())), "{stderr}");
    }
    // Placeholders for some parameters only: the others are named before the run, which goes on;
    // so is a placeholder that names no parameter (a misspelling), not a shell's ${NAME}.
    let two = tmp.path().join("two.toml");
    std::fs::write(&two, format!("{SPACE}y = {{ type = \"float\", low = 0.0, high = 1.0 }}\n")).unwrap();
    let mut cmd = Command::new(bin());
    cmd.args(["--local-ranks", "1", "--no-checkpoint", "--quiet", "--generations", "1", "--space"]).arg(&two);
    cmd.args(["--", "sh", "-c", "echo propulate: loss=1; : ${HOME}", "trial", "--x={x}", "--lr={lr}"]);
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("the trial command has placeholders but none for y: searched"), "{stderr}");
    assert!(stderr.contains("holds {lr}, which names no parameter of the search space (it has x, y)"), "{stderr}");
    assert!(!stderr.contains("{HOME}"), "{stderr}");
    let mut cmd = Command::new(bin());
    cmd.args(["--space", g, "--function", "sphere", "--", "true"]);
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be used with"),
        "clap refuses --space with --function"
    );
}

/// MNIST-format idx files of `n` random images and labels, plain (not gzipped), as `split`.
fn write_idx(dir: &Path, split: &str, n: u32) {
    let mut images = vec![0, 0, 8, 3];
    for d in [n, 28, 28] {
        images.extend(d.to_be_bytes());
    }
    let mut labels = vec![0, 0, 8, 1];
    labels.extend(n.to_be_bytes());
    let mut state = 0x9E37_79B9u32 ^ n;
    for i in 0..n {
        labels.push((i % 10) as u8);
        for _ in 0..28 * 28 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            images.push(state as u8);
        }
    }
    std::fs::write(dir.join(format!("{split}-images-idx3-ubyte")), images).unwrap();
    std::fs::write(dir.join(format!("{split}-labels-idx1-ubyte")), labels).unwrap();
}

/// The PyTorch DDP tutorial's space and command parts, with 64 training and 32 validation
/// synthetic images in `dir/data`.
struct Tutorial {
    space: String,
    python: String,
    script: String,
    data: String,
}

impl Tutorial {
    fn new(dir: &Path) -> Self {
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        write_idx(&data, "train", 64);
        write_idx(&data, "t10k", 32);
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        Tutorial {
            space: std::fs::read_to_string(root.join("tutorials/pytorch_ddp/space.toml")).unwrap(),
            python: torch_python().display().to_string(),
            script: root.join("tutorials/pytorch_ddp/train.py").display().to_string(),
            data: data.display().to_string(),
        }
    }
}

/// The tutorial as its README runs it, on a few synthetic images: two workers of two ranks,
/// every trial's curve reported per epoch and its result file read.
#[test]
fn the_pytorch_ddp_tutorial_runs_as_documented() {
    let tmp = tempfile::tempdir().unwrap();
    let tutorial = Tutorial::new(tmp.path());
    let (space, python, script, data) = (&tutorial.space, &tutorial.python, &tutorial.script, &tutorial.data);
    let command =
        [python.as_str(), script, "--epochs", "2", "--train-images", "64", "--valid-images", "32", "--data", data];
    // As the README runs it: forked from a Python that imported torch, twice per worker.
    let flags = ["--ranks-per-worker", "2", "--generations", "2", "--preload", "torch"];
    let out = run_trials(Transport::Mpi, 4, space, &flags, &command, tmp.path());
    let stdout = succeeded(&out);
    assert!(stdout.contains("conv_layers="), "{stdout}");
    let trials = trials_jsonl(tmp.path());
    assert_eq!(trials.len(), 4);
    for t in &trials {
        assert_eq!(t["failure"], Value::Null, "{t}");
        assert_eq!(t["curve"].as_array().unwrap().len(), 2, "one report per epoch: {t}");
        let accuracy = t["metrics"]["accuracy"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&accuracy), "{t}");
        let best = t["curve"].as_array().unwrap().iter().map(|p| p[1].as_f64().unwrap()).fold(f64::INFINITY, f64::min);
        assert_eq!(t["loss"].as_f64().unwrap(), best, "the loss is the best epoch's: {t}");
    }
}

/// The tutorial's conditional space (`space-conditional.toml`): SGD's momentum and Adam's betas
/// reach the script, as flags and in the trial's parameters, only with their optimizer. One
/// configuration per optimizer is enqueued, so that all three train.
#[test]
fn the_pytorch_ddp_tutorials_conditional_space_passes_only_the_optimizers_own_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let tutorial = Tutorial::new(tmp.path());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let space = std::fs::read_to_string(root.join("tutorials/pytorch_ddp/space-conditional.toml")).unwrap();
    let enqueue = tmp.path().join("first.csv");
    std::fs::write(
        &enqueue,
        "conv_layers,activation,optimizer,lr,gamma,momentum,beta1,beta2\n\
         2,relu,adadelta,1.0,0.9,,,\n\
         2,relu,sgd,0.01,0.9,0.9,,\n\
         2,relu,adam,0.001,0.9,,0.9,0.999\n",
    )
    .unwrap();
    let (python, script, data) = (&tutorial.python, &tutorial.script, &tutorial.data);
    let command =
        [python.as_str(), script, "--epochs", "1", "--train-images", "64", "--valid-images", "32", "--data", data];
    let flags = ["--generations", "2", "--preload", "torch", "--enqueue", enqueue.to_str().unwrap()];
    succeeded(&run_trials(Transport::Mpi, 2, &space, &flags, &command, tmp.path()));
    let trials = trials_jsonl(tmp.path());
    assert_eq!(trials.len(), 4);
    let mut optimizers = Vec::new();
    for t in &trials {
        assert_eq!(t["failure"], Value::Null, "{t}");
        let optimizer = t["params"]["optimizer"].as_str().unwrap().to_string();
        let own: &[&str] = match optimizer.as_str() {
            "sgd" => &["momentum"],
            "adam" => &["beta1", "beta2"],
            _ => &[],
        };
        let stdout = std::fs::read_to_string(trial_dir(tmp.path(), t).join("rank0.stdout")).unwrap();
        let arguments = stdout.lines().find_map(|l| l.strip_prefix("arguments: ")).expect("the script's first line");
        for name in ["momentum", "beta1", "beta2"] {
            let active = own.contains(&name);
            assert_eq!(t["params"].get(name).is_some(), active, "{name} with {optimizer}: {t}");
            assert_eq!(arguments.contains(&format!("--{name}=")), active, "{name} with {optimizer}: {arguments}");
        }
        optimizers.push(optimizer);
    }
    for optimizer in ["adadelta", "sgd", "adam"] {
        assert!(optimizers.iter().any(|o| o == optimizer), "the enqueued {optimizer} trained: {optimizers:?}");
    }
}

/// The tutorial under population-based training, as its README runs it: each evaluation trains
/// one epoch of its member, saving the network and the optimizer with torch.save, and a member's
/// next evaluation continues it with torch.load (its reports go on from the epoch the state had).
#[test]
fn the_pytorch_ddp_tutorial_continues_its_members_under_population_based_training() {
    let tmp = tempfile::tempdir().unwrap();
    let tutorial = Tutorial::new(tmp.path());
    let (space, python, script, data) = (&tutorial.space, &tutorial.python, &tutorial.script, &tutorial.data);
    let command = [python.as_str(), script, "--train-images", "64", "--valid-images", "32", "--data", data];
    // The network's shape stays with its state: a saved state fits only its own shape.
    let flags = [
        "--ranks-per-worker",
        "2",
        "--preload",
        "torch",
        "--propagator",
        "pbt",
        "--pbt-steps",
        "3",
        "--pbt-fixed",
        "conv_layers,activation",
    ];
    let out = run_trials(Transport::Mpi, 4, space, &flags, &command, tmp.path());
    succeeded(&out);
    let trials = trials_jsonl(tmp.path());
    assert!(trials.len() >= 6, "two members of 3 epochs, one per evaluation: {}", trials.len());
    for t in &trials {
        assert_eq!(t["failure"], Value::Null, "{t}");
        let step = t["lineage"]["step"].as_u64().unwrap();
        assert_eq!(t["curve"], serde_json::json!([[step + 1, t["loss"]]]), "its member's epoch: {t}");
        if let Some(parent) = t["lineage"]["parent"].as_str() {
            assert!(step >= 1, "a continued member starts after an epoch: {t}");
            let p = trials.iter().find(|p| format!("{}/{}/{}", p["island"], p["worker"], p["generation"]) == parent);
            let p = p.expect("its parent is a trial");
            assert_eq!(
                (&t["params"]["conv_layers"], &t["params"]["activation"]),
                (&p["params"]["conv_layers"], &p["params"]["activation"])
            );
        }
    }
    let states = std::fs::read_dir(tmp.path().join("ck/states")).unwrap();
    for s in states {
        assert!(s.unwrap().path().join("state.pt").is_file(), "rank 0 saved the state with torch.save");
    }
}
