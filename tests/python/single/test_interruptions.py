"""Interrupted runs: Ctrl-C in one process, kill -9 of a whole mpirun job; the same script then
resumes with nothing lost and nothing evaluated twice but what was running."""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import propulate_rs as pr

HERE = os.path.dirname(__file__)
RESUMABLE = os.path.join(HERE, "..", "scripts", "resumable.py")


def calls(prefix):
    return sum(len(open(f).read().splitlines()) for f in glob.glob(prefix + ".*"))


def test_keyboard_interrupt_in_the_loss_stops_the_run_and_the_next_one_resumes(tmp_path):
    made = []

    def loss(params):
        made.append(params["x"])
        if len(made) == 6 and stop:
            raise KeyboardInterrupt
        return params["x"] ** 2

    stop = True
    with pytest.raises(KeyboardInterrupt):
        pr.optimize(loss, {"x": pr.Float(-1, 1)}, generations=10, checkpoint=str(tmp_path), quiet=True)
    stop = False
    result = pr.optimize(loss, {"x": pr.Float(-1, 1)}, generations=10, checkpoint=str(tmp_path), quiet=True)
    # Five recorded before the interruption; the sixth is evaluated again, not recorded twice.
    assert result.resumed == 5 and result.evaluations == 10 and len(made) == 6 + 5
    assert sorted(t.generation for t in result.trials) == list(range(10))


def test_ctrl_c_raises_keyboard_interrupt_with_the_checkpoint_whole(tmp_path, job_env):
    checkpoint, log = str(tmp_path / "ck"), str(tmp_path / "calls")
    job = subprocess.Popen([sys.executable, RESUMABLE, checkpoint, log, "0.1"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=job_env)
    deadline = time.time() + 60
    while calls(log) < 5 and time.time() < deadline:
        time.sleep(0.05)
    job.send_signal(signal.SIGINT)
    _, err = job.communicate(timeout=60)
    assert job.returncode != 0 and "KeyboardInterrupt" in err, err
    before = calls(log)
    done = subprocess.run([sys.executable, RESUMABLE, checkpoint, log, "0"], capture_output=True, text=True,
                          timeout=120, check=True, env=job_env)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["evaluations"] == 30 and before - 1 <= result["resumed"] <= before
    assert calls(log) <= 30 + 1


def test_kill_9_of_an_mpirun_job_loses_nothing_and_repeats_only_what_ran(tmp_path, job_env):
    mpirun = ["mpirun", "-np", "4", sys.executable, "-m", "mpi4py"]
    checkpoint, log = str(tmp_path / "ck"), str(tmp_path / "calls")
    job = subprocess.Popen(mpirun + [RESUMABLE, checkpoint, log, "0.1"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True, env=job_env)
    deadline = time.time() + 120
    while calls(log) < 30 and time.time() < deadline and job.poll() is None:
        time.sleep(0.05)
    assert job.poll() is None, f"the job ended before it was killed (status {job.returncode}, {calls(log)} calls)"
    # Every process of the job: mpirun and its ranks, which Open MPI puts in process groups of
    # their own, but in mpirun's session.
    subprocess.run(["pkill", "-9", "-s", str(job.pid)], check=False)
    job.wait()
    deadline = time.time() + 30
    while subprocess.run(["pgrep", "-s", str(job.pid)], capture_output=True).returncode == 0:
        assert time.time() < deadline, "the job's processes outlived kill -9"
        time.sleep(0.05)
    first = calls(log)
    assert 30 <= first < 120, first
    done = subprocess.run(mpirun + [RESUMABLE, checkpoint, log, "0"], capture_output=True, text=True,
                          timeout=300, env=job_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    ids = {tuple(i) for i in result["ids"]}
    assert result["evaluations"] == 120 and len(result["ids"]) == 120 and len(ids) == 120
    assert ids == {(0, w, g) for w in range(4) for g in range(30)}
    # What was journaled is not evaluated again; at most the 4 running evaluations are.
    assert first - 4 <= result["resumed"] <= first
    assert calls(log) <= 120 + 4


@pytest.mark.parametrize("first", ["propulate_rs", "mpi4py"])
def test_mpi4py_may_be_imported_before_or_after_and_stays_initialized(first, job_env):
    imports = {"propulate_rs": "import propulate_rs as pr", "mpi4py": "from mpi4py import MPI"}
    second = "mpi4py" if first == "propulate_rs" else "propulate_rs"
    script = "\n".join([
        imports[first],
        imports[second],
        "result = pr.optimize(lambda p: p['x'] ** 2, {'x': pr.Float(-1, 1)}, generations=5, no_checkpoint=True,",
        "                     quiet=True)",
        # MPI is mpi4py's: still initialized after the run, and usable.
        "assert MPI.Is_initialized() and not MPI.Is_finalized()",
        "assert MPI.COMM_WORLD.allreduce(1) == MPI.COMM_WORLD.size",
        "everywhere = MPI.COMM_WORLD.gather(result.evaluations)",
        "if MPI.COMM_WORLD.rank == 0:",
        "    print('evaluations', everywhere)",
    ])
    done = subprocess.run(["mpirun", "-np", "2", sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=job_env)
    assert done.returncode == 0, done.stderr
    assert "evaluations [10, 10]" in done.stdout, done.stdout
