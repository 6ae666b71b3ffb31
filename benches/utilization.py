#!/usr/bin/env python3
"""How busy the workers are as the world grows: the share of the workers' time spent evaluating.

For each world size N, the sphere with evaluations of DELAY_MS milliseconds (a sleep: no CPU; spread
uniformly by SPREAD of it either way, `--eval-delay-spread`), islands of ISLAND workers (with
`--shared-budget` where SHARED=1), run twice under mpirun (or in one process, `--local-ranks N`): SHORT and LONG
generations per worker, journaled into a fresh checkpoint as by default. Per run: the job's wall
time (mpirun's start to its end) and every rank's CPU time (GNU time around each rank). From them:

- utilization of the whole job: E / wall, E the evaluations' time per worker (their durations in
  trials.jsonl, summed, over N);
- steady utilization: (E_LONG - E_SHORT) / (wall_LONG - wall_SHORT): the job's start and end cancel;
- start and end: wall_SHORT - E_SHORT / steady, the seconds the job costs beyond its evaluations;
- MPI's own floor: the wall time of `propulate-rs env` on as many ranks (mpirun's start, MPI's
  initialization and end, no search), beside which start and end measure what the run adds;
- CPU share of a rank in the LONG run: its CPU time (breeding, messages, journaling, MPI's progress)
  over the wall time, the mean over the ranks: near 0 where waiting ranks sleep. (Per evaluation it is
  too small to tell from MPI's start at these lengths: benches/rank_costs.rs measures its parts.)

The figures benches/scale_sim.py is checked against (docs/benchmarks/scale.md).

    python3 benches/utilization.py                          # MPI="16 64 256", LOCAL="256 1024"
    MPI="64 256 1024" LOCAL="" python3 benches/utilization.py
    BIN=/path/to/propulate-rs ISLAND=8 DELAY_MS=1000 SHORT=5 LONG=15 python3 benches/utilization.py

Knobs: MPI [16 64 256] and LOCAL [256 1024] world sizes, ISLAND [8] workers per island, DELAY_MS
[1000], SHORT [5] and LONG [15] generations, BIN [target/release/propulate-rs, built here], WORK
[bench-results/utilization]: one JSON line per world size is appended to WORK/results.jsonl.
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
env = dict(os.environ)
# scripts/mpi-env.sh: root may run mpirun, more ranks than cores.
env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
MPI = [int(n) for n in env.get("MPI", "16 64 256").split()]
LOCAL = [int(n) for n in env.get("LOCAL", "256 1024").split()]
ISLAND = int(env.get("ISLAND", "8"))
DELAY_MS = int(env.get("DELAY_MS", "1000"))
SHORT, LONG = int(env.get("SHORT", "5")), int(env.get("LONG", "15"))
SPREAD = float(env.get("SPREAD", "0"))
SHARED = env.get("SHARED", "0") == "1"
WORK = env.get("WORK", os.path.join(ROOT, "bench-results", "utilization"))
# GNU time around each rank for its CPU time; without it (a machine without Debian's time package) the
# CPU share is left out.
TIME = shutil.which("time", path="/usr/bin")

if "BIN" in env:
    BIN = os.path.abspath(env["BIN"])
else:
    subprocess.run(["cargo", "build", "--release", "-q", "--bin", "propulate-rs"], cwd=ROOT, check=True)
    BIN = os.path.join(ROOT, "target", "release", "propulate-rs")


def run(transport, n, generations):
    """(wall seconds, [CPU seconds of each rank], evaluation seconds per worker) of one run."""
    work = tempfile.mkdtemp(prefix="utilization-")
    search = ["--function", "sphere", "--eval-delay-ms", str(DELAY_MS), "--generations", str(generations),
              "--islands", str(max(1, n // ISLAND)), "--checkpoint", os.path.join(work, "ckpt"), "--quiet",
              "--eval-delay-spread", str(SPREAD), "--out", os.path.join(work, "out")]
    if SHARED:
        search.append("--shared-budget")
    if transport == "mpi" and TIME:
        # Each rank's CPU time into its own file (lines of ranks writing to one stream interleave).
        cmd = ["mpirun", "-np", str(n), "--bind-to", "none", "bash", "-c",
               f'exec {TIME} -f "%U %S" -o {work}/cpu-$OMPI_COMM_WORLD_RANK "$@"', "_", BIN] + search
    elif transport == "mpi":
        cmd = ["mpirun", "-np", str(n), "--bind-to", "none", BIN] + search
    elif TIME:
        cmd = [TIME, "-f", "%U %S", "-o", f"{work}/cpu-all", BIN, "--local-ranks", str(n)] + search
    else:
        cmd = [BIN, "--local-ranks", str(n)] + search
    start = time.monotonic()
    done = subprocess.run(cmd, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"utilization.py: {transport} N={n} G={generations} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = []
    for name in os.listdir(work):
        if name.startswith("cpu-"):
            user, system = open(os.path.join(work, name)).read().split()[-2:]
            cpu.append(float(user) + float(system))
    with open(os.path.join(work, "out", "trials.jsonl")) as f:
        evaluating = sum(json.loads(line)["duration_s"] for line in f) / n
    shutil.rmtree(work)
    if transport == "local" and cpu:  # one process: its CPU shared out over its ranks
        cpu = [cpu[0] / n] * n
    return wall, cpu, evaluating


def env_floor(n):
    """Seconds of `mpirun -np N propulate-rs env`: MPI's own start and end at N ranks."""
    start = time.monotonic()
    subprocess.run(["mpirun", "-np", str(n), "--bind-to", "none", BIN, "env"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def main():
    os.makedirs(WORK, exist_ok=True)
    delay = DELAY_MS / 1000
    spread = f" +-{SPREAD:.0%}" if SPREAD else ""
    shared = ", --shared-budget" if SHARED else ""
    print(f"{socket.gethostname()}, {os.cpu_count()} cores: islands of {ISLAND}, evaluations of {delay:g} s{spread}{shared}, "
          f"{SHORT} and {LONG} generations per worker, journaled")
    print(f"{'transport':>9} {'ranks':>6} {'job util':>9} {'steady':>7} {'start+end s':>12} {'MPI floor':>10} {'CPU share':>10}")
    for transport, sizes in (("mpi", MPI), ("local", LOCAL)):
        for n in sizes:
            wall_short, _, eval_short = run(transport, n, SHORT)
            wall_long, cpu_long, eval_long = run(transport, n, LONG)
            steady = (eval_long - eval_short) / (wall_long - wall_short)
            fixed = wall_short - eval_short / steady
            cpu_share = statistics.mean(cpu_long) / wall_long if cpu_long else None
            floor = env_floor(n) if transport == "mpi" else None
            row = {
                "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "host": socket.gethostname(),
                "cores": os.cpu_count(), "transport": transport, "ranks": n, "island": ISLAND,
                "delay_s": delay, "short": SHORT, "long": LONG, "wall_short_s": wall_short,
                "wall_long_s": wall_long, "job_utilization": eval_long / wall_long,
                "spread": SPREAD, "shared_budget": SHARED,
                "steady_utilization": steady, "start_end_s": fixed, "env_floor_s": floor, "cpu_share": cpu_share,
            }
            share = f"{cpu_share:>10.4f}" if cpu_share is not None else f"{'-':>10}"
            floor_s = f"{floor:>10.2f}" if floor is not None else f"{'-':>10}"
            print(f"{transport:>9} {n:>6} {row['job_utilization']:>9.3f} {steady:>7.3f} {fixed:>12.2f} {floor_s} "
                  f"{share}", flush=True)
            with open(os.path.join(WORK, "results.jsonl"), "a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
