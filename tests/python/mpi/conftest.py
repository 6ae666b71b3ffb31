"""pytest under mpirun: every rank runs every test (each calls optimize collectively), only rank
0 reports, and a failure on any rank aborts the job instead of leaving the others in the next
collective."""

import sys

import pytest
from mpi4py import MPI


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    if MPI.COMM_WORLD.rank != 0:
        reporter = config.pluginmanager.getplugin("terminalreporter")
        if reporter is not None:
            config.pluginmanager.unregister(reporter)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and MPI.COMM_WORLD.size > 1:
        sys.stderr.write(f"\nrank {MPI.COMM_WORLD.rank}: {item.nodeid} failed:\n{report.longreprtext}\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)


@pytest.fixture
def shared_tmp(tmp_path):
    """A directory every rank names alike: rank 0's temporary directory."""
    return MPI.COMM_WORLD.bcast(str(tmp_path) if MPI.COMM_WORLD.rank == 0 else None, root=0)
