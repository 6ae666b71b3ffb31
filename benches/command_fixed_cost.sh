#!/usr/bin/env bash
# Where a PyTorch command trial's time goes besides its training: the trial is
# benches/torch_phases.py (Python's start, `import torch`, reading the tutorial's data subset,
# joining the gloo process group, leaving it, the interpreter's exit), run by propulate-rs with 2
# ranks per worker, once as one worker alone (np 2) and once in benches/ddp_search.sh's layout (np
# 4 on this machine: 2 workers whose processes share the cores). Prints per layout the median of
# each phase over the evaluations (on the worker's rank 0; `exit` is from the program's last line
# to the end of the evaluation, `start` from the evaluation's start to the program's first line)
# and of the whole evaluation; each layout once leaving normally (the interpreter's teardown), once
# by os._exit (`hard`, as tutorials/pytorch_ddp/train.py does) and once by os._exit forked from a
# Python that imported torch already (`preload`: --preload torch).
#
#   bash benches/command_fixed_cost.sh
#
# Knobs: EVALS [8] evaluations per worker; LAYOUTS ["2 4"] MPI ranks per run; LEAVINGS ["normal
# hard preload"] the ways of starting and leaving above; BIN
# [target/release/propulate-rs, built without the CNN]; DATA [/usr/share/datasets/fashion-mnist];
# TRAIN_IMAGES [2000], VALID_IMAGES [500]. Needs the README's set-up (torch in .torch/).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
EVALS=${EVALS:-8}
LAYOUTS=${LAYOUTS:-"2 4"}
LEAVINGS=${LEAVINGS:-"normal hard preload"}
export DATA=${DATA:-/usr/share/datasets/fashion-mnist} TRAIN_IMAGES=${TRAIN_IMAGES:-2000} VALID_IMAGES=${VALID_IMAGES:-500}
export OMP_NUM_THREADS=1 # as benches/ddp_search.sh
source benches/command_bench_setup.sh
runs=()
for np in $LAYOUTS; do
    for leaving in $LEAVINGS; do
        export PHASES_EXIT=$leaving preload=()
        if [ "$leaving" = preload ]; then
            PHASES_EXIT=hard preload=(--preload torch)
        fi
        run=$np-$leaving
        mpirun -np "$np" --bind-to none -x OMP_NUM_THREADS -x DATA -x TRAIN_IMAGES -x VALID_IMAGES -x PHASES_EXIT \
            "$BIN" --ranks-per-worker 2 --generations "$EVALS" --propagator ga --space "$work/space.toml" "${preload[@]}" \
            --checkpoint "$work/ck-$run" --out "$work/out-$run" -q \
            -- "$PWD/.torch/bin/python" "$PWD/benches/torch_phases.py" > "$work/stdout-$run.log"
        runs+=("$run")
    done
done
python3 - "$work" "${runs[@]}" <<'PY'
import glob, json, statistics, sys
from datetime import datetime
work, runs = sys.argv[1], sys.argv[2:]
names = ["start", "import", "data", "join", "leave", "exit"]
print(f"{'ranks':>5} {'leaving':>7} {'evals':>5} " + " ".join(f"{n + ' s':>8}" for n in names) + f" {'total s':>8}")
for run in runs:
    np, leaving = run.split("-")
    rows = []
    for line in open(f"{work}/out-{run}/trials.jsonl"):
        t = json.loads(line)
        if t.get("failure"):
            sys.exit(f"an evaluation failed: {t['failure']}")
        start = datetime.fromisoformat(t["start"].replace("Z", "+00:00")).timestamp()
        trial_dir = glob.glob(f"{work}/ck-{run}/trials/island{t['island']}-worker{t['worker']}-gen{t['generation']}")[0]
        at = {}
        for l in open(f"{trial_dir}/rank0.stderr"):
            p = l.split()
            if len(p) == 3 and p[0] == "phase":
                at[p[1]] = float(p[2])
        marks = [start, at["started"], at["imported"], at["data"], at["joined"], at["left"], start + t["duration_s"]]
        rows.append([b - a for a, b in zip(marks, marks[1:])] + [t["duration_s"]])
    med = [statistics.median(col) for col in zip(*rows)]
    print(f"{np:>5} {leaving:>7} {len(rows):>5} " + " ".join(f"{m:>8.2f}" for m in med))
print("median seconds per evaluation on the worker's rank 0: start = from the evaluation's start to the "
      "script's first line (the engine's spawn, Python's start), exit = from the script's last line to the "
      "evaluation's end (the interpreter's exit, the engine's end of trial)")
PY
