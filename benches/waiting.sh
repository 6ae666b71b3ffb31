#!/usr/bin/env bash
# What waiting ranks cost: a sphere run of NP ranks x GENERATIONS evaluations (default 8 x 125,000,
# one million) under mpirun, oversubscribed on this machine's cores, journaled as by default, with two binaries side by side
# (runs alternate, so drifting load hits both alike). Per run: the wall time of the whole job, the
# CPU time of all its ranks, and the CPU share of a finished worker: each rank's CPU time from its
# last evaluation (the "generation G" line of its per-rank log) until it exits, divided by that
# wall time, the median over the ranks that waited at least MIN_WAIT seconds.
#
#   BEFORE=/tmp/propulate-rs-before bash benches/waiting.sh
#   BEFORE=... AFTER=... RUNS=3 NP=8 GENERATIONS=125000 bash benches/waiting.sh
#
# Knobs: BEFORE (required: the binary to compare with, e.g. a build of an older commit), AFTER
# [target/release/propulate-rs, built here with the default features], RUNS [3] per binary, NP [8],
# GENERATIONS [125000] per worker, MIN_WAIT [0.5] seconds, WORK [bench-results/waiting].
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
: "${BEFORE:?set BEFORE to the binary to compare with}"
if [ -z "${AFTER:-}" ]; then
    cargo build --release --bin propulate-rs >&2
    AFTER=target/release/propulate-rs
fi
export BEFORE AFTER RUNS=${RUNS:-3} NP=${NP:-8} GENERATIONS=${GENERATIONS:-125000}
export MIN_WAIT=${MIN_WAIT:-0.5} WORK=${WORK:-bench-results/waiting}
mkdir -p "$WORK"
python3 - <<'EOF'
import os, re, shutil, statistics, subprocess, time
from datetime import datetime

env = os.environ
work, np_, gens = env["WORK"], int(env["NP"]), int(env["GENERATIONS"])
tick = os.sysconf("SC_CLK_TCK")

def ranks_of(job, binary):
    """{pid: rank} of the processes of `binary` below the mpirun `job` (walking up the parents)."""
    name = os.path.basename(binary)[:15]  # /proc/PID/comm: the file name, 15 characters at most
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            if open(f"/proc/{pid}/comm").read().strip() != name:
                continue
            parent = pid
            while parent > 1 and parent != job:
                parent = int(open(f"/proc/{parent}/stat").read().rsplit(")", 1)[1].split()[1])
            if parent != job:
                continue
            m = re.search(rb"OMPI_COMM_WORLD_RANK=(\d+)", open(f"/proc/{pid}/environ", "rb").read())
            if m:
                found[pid] = int(m.group(1))
        except (OSError, ValueError):
            pass
    return found

def cpu_s(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick  # utime + stime

def one_run(label, binary, run):
    out = os.path.join(work, f"{label}-{run}")
    shutil.rmtree(out, ignore_errors=True)
    logs = os.path.join(out, "logs")
    cmd = ["mpirun", "-np", str(np_), "--bind-to", "none", binary, "--function", "sphere",
           "--generations", str(gens), "--checkpoint", os.path.join(out, "checkpoint"), "-q", "--log-dir", logs,
           "--log-interval", str(gens), "--seed", str(run)]
    start = time.time()
    job = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    samples = {}  # rank -> [(time, cpu s)]
    while job.poll() is None:
        for pid, rank in ranks_of(job.pid, binary).items():
            try:
                samples.setdefault(rank, []).append((time.time(), cpu_s(pid)))
            except OSError:
                pass
        time.sleep(0.05)
    wall = time.time() - start
    assert job.returncode == 0, f"{cmd} exited {job.returncode}"
    shares, waits = [], []
    for rank, series in samples.items():
        text = open(os.path.join(logs, f"rank-{rank:05d}.log")).read()
        m = re.search(r"^(\S+) .*: generation %d:" % gens, text, re.M)
        done = datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
        after = [(t, c) for t, c in series if t >= done]
        if len(after) < 2 or after[-1][0] - after[0][0] < float(env["MIN_WAIT"]):
            continue
        (t0, c0), (t1, c1) = after[0], after[-1]
        shares.append((c1 - c0) / (t1 - t0))
        waits.append(t1 - t0)
    total_cpu = sum(series[-1][1] for series in samples.values())
    share = statistics.median(shares) if shares else float("nan")
    wait = statistics.median(waits) if waits else float("nan")
    print(f"{label:7} {run:3} {wall:8.1f} {total_cpu:9.1f} {len(shares):7} {wait:8.1f} {share:8.3f}", flush=True)
    return wall, total_cpu, share

print(f"{np_} ranks x {gens} generations of sphere, {os.cpu_count()} cores")
print(f"{'binary':7} {'run':>3} {'wall s':>8} {'CPU s':>9} {'waited':>7} {'wait s':>8} {'share':>8}")
rows = {"before": [], "after": []}
for run in range(int(env["RUNS"])):
    for label in ("before", "after"):
        rows[label].append(one_run(label, env[label.upper()], run))
med = {k: [statistics.median(x) for x in zip(*v)] for k, v in rows.items()}
for k, (wall, cpu, share) in med.items():
    print(f"median {k}: wall {wall:.1f} s, CPU {cpu:.1f} s, a finished worker's CPU share {share:.3f}")
b, a = med["before"], med["after"]
print(f"after / before: wall {a[0] / b[0]:.2f}x, CPU {a[1] / b[1]:.2f}x, finished worker's CPU share {a[2] / b[2]:.2f}x")
EOF
