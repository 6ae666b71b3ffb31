#!/usr/bin/env bash
# Start-up of the binary side by side with another build of it: the wall time and the resident
# memory (max RSS) of `--version` and of a one-generation run of a zero-cost function
# (`--local-ranks 1 --function sphere --generations 1`), and the wall time of that run on NP ranks
# under mpirun. REPS runs each, alternating; the medians and their ratios (after / before).
#
#   BEFORE=/tmp/propulate-rs-before bash benches/startup.sh
#   BEFORE=... AFTER=... REPS=9 NP=8 bash benches/startup.sh
#
# Knobs: BEFORE (required: the binary to compare with, e.g. a build of an older commit), AFTER
# [target/release/propulate-rs, built here with --features cnn,tch], REPS [9], NP [8].
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
: "${BEFORE:?set BEFORE to the binary to compare with}"
if [ -z "${AFTER:-}" ]; then
    source scripts/libtorch-env.sh
    cargo build --release --features cnn,tch --bins >&2
    AFTER=target/release/propulate-rs
fi
export BEFORE AFTER REPS=${REPS:-9} NP=${NP:-8}
python3 - <<'EOF'
import os, statistics, subprocess, time

env = os.environ
reps, np_ = int(env["REPS"]), env["NP"]
function = ["--function", "sphere", "--generations", "1", "--no-checkpoint", "-q"]
cases = {
    "--version": lambda b: [b, "--version"],
    "1 rank, 1 generation": lambda b: [b, "--local-ranks", "1", *function],
    f"mpirun -np {np_}, 1 generation": lambda b: ["mpirun", "-np", np_, "--bind-to", "none", b, *function],
}

def measure(cmd):
    """Wall seconds and max RSS (MiB) of the command's own process."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0, f"{cmd} failed"
    return wall, usage.ru_maxrss / 1024

print(f"{reps} runs each, medians; {os.cpu_count()} cores")
print(f"{'case':30} {'before s':>9} {'after s':>9} {'ratio':>6} {'before MiB':>11} {'after MiB':>10}")
for name, cmd in cases.items():
    runs = {"BEFORE": [], "AFTER": []}
    for _ in range(reps):
        for which in runs:
            runs[which].append(measure(cmd(env[which])))
    (wb, mb), (wa, ma) = ([statistics.median(x) for x in zip(*runs[w])] for w in ("BEFORE", "AFTER"))
    rss = "" if name.startswith("mpirun") else f"{mb:11.0f} {ma:10.0f}"  # mpirun's own memory says nothing
    print(f"{name:30} {wb:9.3f} {wa:9.3f} {wa / wb:5.2f}x {rss}")
EOF
