"""The Python tutorials run as the docs say, under mpirun (smaller than their defaults)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")
MPIRUN = ["mpirun", "-np", "4", sys.executable, "-m", "mpi4py"]
FASHION = "/usr/share/datasets/fashion-mnist"


def test_islands_example(tmp_path, job_env):
    done = subprocess.run(MPIRUN + [os.path.join(ROOT, "tutorials/python/islands_example.py"), "--generations", "40",
                                    "--checkpoint", str(tmp_path / "ck")],
                          capture_output=True, text=True, timeout=300, env=job_env)
    assert done.returncode == 0, done.stderr
    assert "island 0: best" in done.stdout and "island 1: best" in done.stdout
    assert "after 160 evaluations" in done.stdout


def test_torch_ddp_example(tmp_path, job_env):
    pytest.importorskip("torch")
    if not os.path.isdir(FASHION):
        pytest.skip(f"no Fashion-MNIST in {FASHION} (Debian's dataset-fashion-mnist)")
    done = subprocess.run(MPIRUN + [os.path.join(ROOT, "tutorials/python/torch_ddp_example.py"), "--generations", "1",
                                    "--epochs", "2", "--train-images", "200", "--valid-images", "100",
                                    "--checkpoint", str(tmp_path / "ck"), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600, env=job_env)
    assert done.returncode == 0, done.stderr
    assert "best validation loss" in done.stdout and "2 trainings" in done.stdout
    assert (tmp_path / "out" / "trials.csv").exists()


@pytest.mark.parametrize(
    "tutorial, ranks, says",
    [
        ("custom_loss.py", 4, ["200 evaluations", "ValueError: diverged: 8 sigmoid layers", "the loss is NaN"]),
        ("multi_rank_worker.py", 8, ["4 workers of 2 ranks, 400 evaluations"]),
        ("pbt.py", 4, ["exploited a better member", "best validation loss"]),
    ],
)
def test_the_library_tutorials_in_python(tutorial, ranks, says, tmp_path, job_env):
    mpirun = ["mpirun", "-np", str(ranks), sys.executable, "-m", "mpi4py"]
    done = subprocess.run(mpirun + [os.path.join(ROOT, "tutorials/python", tutorial), str(tmp_path / "ck")],
                          capture_output=True, text=True, timeout=300, env=job_env)
    assert done.returncode == 0, done.stderr
    for text in says:
        assert text in done.stdout, done.stdout
