"""Tests in one process; some start jobs of their own under mpirun."""

import os

import pytest

# What optimize() writes for torch.distributed: a job started from here has its own.
TORCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


@pytest.fixture
def job_env():
    """The environment for a job started from a test: Python's view of it (`os.environ`, a copy
    taken at start-up plus what Python set), not the C one, where MPI's singleton initialisation of
    this process left variables that make a child mpirun fail without a word."""
    return {k: v for k, v in os.environ.items() if k not in TORCH_VARIABLES}
