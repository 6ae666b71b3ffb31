#!/usr/bin/env bash
# The GPU path of propulate-rs, checked in one command on a machine with NVIDIA GPUs:
#
#   scripts/gpu-check.sh OUTDIR
#
# prints a table, a line per check with pass, fail or skip and its figure, and writes it with every
# log into OUTDIR (OUTDIR/table.md, OUTDIR/logs/), so that the results can be carried back from a
# remote machine. The checks:
#   env     `propulate-rs env` under mpirun, one rank per GPU: every rank sees a GPU of its own
#   nccl    NCCL averaging inside a worker of 2 ranks, then of one rank per GPU (at least 2 GPUs:
#           NCCL refuses two ranks of a group on one GPU): the result, the time per all-reduce of
#           1M and 25M floats through host memory and on device memory, a communicator made per
#           evaluation against one reused, and the reused one's results after a failed evaluation
#   step    one CNN training step on the first GPU: burn-tch against PyTorch eager, same network,
#           batch and dtype, interleaved in one run, as a ratio of medians
#   search  a short CNN search under mpirun on the GPUs (2 ranks per worker with at least 2 GPUs,
#           else 2 workers of 1 rank on the one GPU): it learns (the best's validation accuracy at
#           least 0.5, chance being 0.1: a few short trainings with small learning rates can be
#           accurate at a loss still near ln 10), the GPUs are used (nvidia-smi sampled during the
#           run), no process is left behind
#   split   `--gpus-per-rank 2` (at least 2 GPUs): one replica over two GPUs trains
#   ddp     the PyTorch DDP tutorial as a command trial, NCCL between 2 GPUs (at least 2 GPUs)
#   pbt     population-based training of the CNN on the GPUs (4 one-rank members, PB2's explore):
#           members continue their saved states on the GPU (and exploit another's), it learns
# GPU_CHECKS="env nccl ..." runs only those. Without a GPU it stops at once, with one line.
#
# What it needs: NVIDIA GPUs with their driver (nvidia-smi), MPI, and either
# - Rust and a torch: PROPULATE_LIBTORCH=DIR (a torch directory or a virtual environment with
#   torch, e.g. /opt/torch/.venv; the default installs libtorch 2.9.0 into .torch/), then it builds
#   the release binaries with the GPU features (cnn, tch, nccl) into target/release, or
# - PROPULATE_BIN_DIR=DIR holding binaries built elsewhere with those features (propulate-rs,
#   propulate-rs-cnn, nccl_check, cnn_step; `BUILD_ONLY=1 scripts/gpu-check.sh DIR` builds them,
#   on a machine without GPUs too, and copies them stripped into DIR/bin), with the torch they were
#   linked against on LD_LIBRARY_PATH.
# PROPULATE_PYTHON: the Python with torch for PyTorch's side (default: PROPULATE_LIBTORCH's, else
# .torch's). DATA: Fashion-MNIST in MNIST's idx format (default /usr/share/datasets/fashion-mnist);
# where it is missing, a synthetic set of ten learnable classes is written into OUTDIR/data.
#
# Exit status: 0 every check run passed, 1 one failed, 2 no GPU or bad usage.
set -uo pipefail

out="${1:-}"
if [ -z "$out" ]; then
    echo "usage: scripts/gpu-check.sh OUTDIR   (the table and the logs go there)" >&2
    exit 2
fi
gpus=0
if command -v nvidia-smi > /dev/null 2>&1; then
    gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true)
fi
# BUILD_ONLY=1 builds binaries to carry to a GPU machine: it needs none here.
if [ "$gpus" -eq 0 ] && [ "${BUILD_ONLY:-0}" != 1 ]; then
    echo "gpu-check: no NVIDIA GPU on this machine (nvidia-smi lists none); the checks need one, nothing was run" >&2
    exit 2
fi

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
source scripts/mpi-env.sh
mkdir -p "$out/logs"
out="$(cd "$out" && pwd)"
logs="$out/logs"
table="$out/table.md"
checks="${GPU_CHECKS:-env nccl step search split ddp pbt}"
failed=0

# The binaries: carried, or built here.
if [ -n "${PROPULATE_BIN_DIR:-}" ]; then
    bin="$(cd "$PROPULATE_BIN_DIR" && pwd)"
else
    if ! source scripts/libtorch-env.sh > "$logs/build.log" 2>&1; then
        echo "gpu-check: no torch to build against (see $logs/build.log)" >&2
        exit 2
    fi
    echo "gpu-check: building the release binaries with cnn, tch, nccl (log: $logs/build.log)" >&2
    if ! cargo build --release --features cnn,tch,nccl --bins --bench nccl_check --bench cnn_step >> "$logs/build.log" 2>&1; then
        echo "gpu-check: the build failed (see $logs/build.log)" >&2
        exit 1
    fi
    bin="$out/bin"
    mkdir -p "$bin"
    cp target/release/propulate-rs target/release/propulate-rs-cnn "$bin/"
    for bench in nccl_check cnn_step; do
        cp "$(ls -t target/release/deps/$bench-* | grep -v '\.d$' | head -1)" "$bin/$bench"
    done
    # Stripped of debug information: 29 MB instead of 650 MB, small enough to carry.
    if command -v strip > /dev/null; then strip "$bin"/*; fi
    if [ "${BUILD_ONLY:-0}" = 1 ]; then
        echo "gpu-check: built into $bin ($(du -sh "$bin" | cut -f1))" >&2
        exit 0
    fi
fi
python="${PROPULATE_PYTHON:-}"
if [ -z "$python" ]; then
    if [ -n "${PROPULATE_LIBTORCH:-}" ] && [ -x "$PROPULATE_LIBTORCH/bin/python" ]; then
        python="$PROPULATE_LIBTORCH/bin/python"
    else
        python="$REPO_ROOT/.torch/bin/python"
    fi
fi
# One NCCL in each process: cudarc opens libnccl.so, which must be libtorch's own NCCL where the
# torch has one beside it (scripts/torch-nccl-link.sh).
torch_dir=$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2> /dev/null || true)
if [ -n "$torch_dir" ]; then
    nccl_link=$(bash scripts/torch-nccl-link.sh "$torch_dir" "$out/nccl-link")
    if [ -n "$nccl_link" ]; then
        export LD_LIBRARY_PATH="$nccl_link${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
fi
# Every rank gets a GPU of its own only where CUDA_VISIBLE_DEVICES names the GPUs (measured: without
# it every rank ran on the CPU).
if [ -z "${CUDA_VISIBLE_DEVICES:-}" ]; then
    CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1)))
    export CUDA_VISIBLE_DEVICES
fi
MPIRUN=(mpirun --bind-to none -x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x PATH)

{
    echo "# gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname): $gpus GPU(s)"
    echo
    nvidia-smi -L | sed 's/^/    /'
    echo
    echo "| check | result | figure |"
    echo "|---|---|---|"
} > "$table"
cat "$table"

# row CHECK RESULT FIGURE: one line of the table, printed and kept.
row() {
    local line="| $1 | $2 | $3 |"
    echo "$line" >> "$table"
    echo "$line"
    if [ "$2" = fail ]; then failed=1; fi
}

# needs_binary NAME CHECK: true when $bin/NAME exists, else a failed row.
needs_binary() {
    if [ -x "$bin/$1" ]; then return 0; fi
    row "$2" fail "$bin/$1 not found (build with the features cnn, tch, nccl)"
    return 1
}

check_env() {
    needs_binary propulate-rs env || return
    local log="$logs/env.log"
    "${MPIRUN[@]}" -np "$gpus" "$bin/propulate-rs" env > "$log" 2>&1
    local devices distinct
    devices=$(grep -o 'device gpu [0-9]*' "$log" | awk '{print $3}')
    distinct=$(echo "$devices" | sort -u | grep -c . || true)
    if [ "$(echo "$devices" | grep -c . || true)" -eq "$gpus" ] && [ "$distinct" -eq "$gpus" ]; then
        row env pass "$gpus ranks on GPUs $(echo "$devices" | paste -sd, -)"
    else
        row env fail "expected $gpus ranks on distinct GPUs; see logs/env.log"
    fi
}

# nccl_figure LOG MODE: the figures of nccl_check's evaluations (the first's set-up apart).
nccl_figure() {
    awk -v mode="$2" '$1 == "nccl" && $2 == mode && $3 == "evaluation" {
        n++; if ($5 == 0) first = $9; else { later = later (later ? "/" : "") $9 }
        h1 = $11; h25 = $13; d1 = $15; d25 = $17; c = c " " $19 ($20 == "failed" ? "(failed)" : "")
    } END {
        printf "set-up %s ms first, %s ms later; 1M floats %s ms via host, %s ms on device; 25M %s / %s ms; correct:%s", first, later, h1, d1, h25, d25, c
    }' "$1"
}

check_nccl() {
    if [ "$gpus" -lt 2 ]; then
        row nccl skip "needs 2 GPUs: NCCL refuses two ranks of one group on one GPU"
        return
    fi
    needs_binary nccl_check nccl || return
    local groups=(2)
    if [ "$gpus" -gt 2 ]; then groups+=("$gpus"); fi
    for ranks in "${groups[@]}"; do
        for mode in fresh reused; do
            local log="$logs/nccl-$ranks-$mode.log"
            timeout 600 "${MPIRUN[@]}" -np "$ranks" "$bin/nccl_check" "$mode" > "$log" 2>&1
            if grep -q "nccl $mode done" "$log" && ! grep "^nccl $mode evaluation" "$log" | grep -q "error:\|correct 0"; then
                row "nccl, $ranks ranks, $mode" pass "$(nccl_figure "$log" "$mode")"
            else
                row "nccl, $ranks ranks, $mode" fail "see logs/$(basename "$log"): $(grep -m1 -o 'error: .*' "$log" | cut -c1-200)"
            fi
        done
    done
}

check_step() {
    needs_binary cnn_step step || return
    local log="$logs/step.log" rounds=3
    : > "$log"
    for batch in 8 64; do
        for _ in $(seq "$rounds"); do
            DEVICE=cuda BACKEND=tch "$bin/cnn_step" 3 "$batch" 1 200 >> "$log" 2>&1
            DEVICE=cuda "$python" benches/cnn_step.py 3 "$batch" 1 200 >> "$log" 2>&1
        done
    done
    local summary
    summary=$(python3 - "$log" << 'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 10 and f[0] == "backend":
        runs[(f[1], int(f[5]))].append(float(f[9]))
parts, ok = [], True
for batch in (8, 64):
    tch, pt = runs.get(("tch", batch)), runs.get(("pytorch", batch))
    if not tch or not pt:
        ok = False
        parts.append(f"batch {batch}: missing runs")
        continue
    a, b = statistics.median(tch), statistics.median(pt)
    parts.append(f"batch {batch}: tch {a:.3f} ms, PyTorch {b:.3f} ms, ratio {a / b:.2f}")
print(("pass" if ok else "fail") + "\t" + "; ".join(parts))
PY
)
    row step "${summary%%$'\t'*}" "${summary#*$'\t'}"
}

# Fashion-MNIST, or ten synthetic classes (a bright square whose place is the class, in noise).
data_dir() {
    local data="${DATA:-/usr/share/datasets/fashion-mnist}"
    if [ -e "$data/train-images-idx3-ubyte" ] || [ -e "$data/train-images-idx3-ubyte.gz" ]; then
        echo "$data"
        return
    fi
    data="$out/data"
    mkdir -p "$data"
    python3 - "$data" << 'PY'
import random, struct, sys
random.seed(0)
def write(split, n):
    images, labels = bytearray(), bytearray()
    for i in range(n):
        k = i % 10
        r, c = 2 + 8 * (k // 4), 2 + 6 * (k % 4)
        img = [random.randrange(0, 80) for _ in range(784)]
        for y in range(r, r + 6):
            for x in range(c, c + 6):
                img[y * 28 + x] = 255
        images += bytes(img)
        labels.append(k)
    with open(f"{sys.argv[1]}/{split}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + images)
    with open(f"{sys.argv[1]}/{split}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels)
write("train", 2000)
write("t10k", 1000)
PY
    echo "$data"
}

# leftovers: processes of this check's binaries still running.
leftovers() {
    pgrep -f "$bin/propulate-rs" | grep -v "^$$\$" || true
}

# search_run NAME NP ARGS...: a CNN search on the GPUs with nvidia-smi sampled; one row.
search_run() {
    local name=$1 np=$2
    shift 2
    local log="$logs/$name.log" smi="$logs/$name-nvidia-smi.csv" dir="$out/$name"
    nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 250 > "$smi" 2>&1 &
    local sampler=$!
    timeout 1200 "${MPIRUN[@]}" -np "$np" "$bin/propulate-rs" --device cuda --data "$(data_dir)" \
        --train-images 2000 --valid-images 1000 --epochs 5 --no-checkpoint --out "$dir" "$@" > "$log" 2>&1
    local status=$?
    kill "$sampler" 2> /dev/null
    wait "$sampler" 2> /dev/null
    sleep 1
    local loss accuracy busiest left
    loss=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['loss'])" "$dir/best.json" 2> /dev/null || echo none)
    accuracy=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metrics']['accuracy'])" "$dir/best.json" 2> /dev/null || echo none)
    busiest=$(awk -F', *' '{ if ($2 > max[$1]) max[$1] = $2; if ($3 > mem[$1]) mem[$1] = $3 }
        END { for (g in max) printf "GPU %s %s%% %s MiB; ", g, max[g], mem[g] }' "$smi")
    left=$(leftovers)
    if [ "$status" -eq 0 ] && python3 -c "import sys; sys.exit(not float(sys.argv[1]) >= 0.5)" "$accuracy" 2> /dev/null \
        && awk -F', *' '$2 > 0 { used = 1 } END { exit !used }' "$smi" && [ -z "$left" ]; then
        row "$name" pass "best loss $loss (ln 10 = 2.30), its accuracy $accuracy; peak use: $busiest; nothing left behind"
    else
        row "$name" fail "status $status, best loss $loss, its accuracy $accuracy (0.5 needed), peak use: ${busiest:-none}; left behind: ${left:-nothing}; see logs/$name.log"
    fi
}

check_search() {
    needs_binary propulate-rs search || return
    needs_binary propulate-rs-cnn search || return
    if [ "$gpus" -ge 2 ]; then
        search_run search $((gpus / 2 * 2)) --ranks-per-worker 2 --generations 3
    else
        search_run search 2 --ranks-per-worker 1 --generations 3
    fi
}

check_split() {
    if [ "$gpus" -lt 2 ]; then
        row split skip "needs 2 GPUs"
        return
    fi
    needs_binary propulate-rs-cnn split || return
    search_run split 1 --ranks-per-worker 1 --gpus-per-rank 2 --generations 2
}

check_pbt() {
    needs_binary propulate-rs pbt || return
    needs_binary propulate-rs-cnn pbt || return
    # A checkpoint holds the members' states; search_run gives --no-checkpoint, so run here.
    local log="$logs/pbt.log" dir="$out/pbt"
    rm -rf "$dir"
    timeout 1200 "${MPIRUN[@]}" -np 4 "$bin/propulate-rs" --device cuda --data "$(data_dir)" \
        --train-images 2000 --valid-images 1000 --ranks-per-worker 1 --propagator pbt --pbt-explore pb2 --pbt-interval 1 \
        --pbt-steps 5 --checkpoint "$dir/ck" --out "$dir" > "$log" 2>&1
    local status=$? counts accuracy total continued exploited
    # trials.csv ends each row with parent,step,steps,exploited: rows that continued a state, and
    # those that continued another member's.
    counts=$(python3 -c "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cont = sum(1 for r in rows if r['parent'])
expl = sum(1 for r in rows if r['exploited'] == 'true')
print(len(rows), cont, expl)" "$dir/trials.csv" 2> /dev/null || echo "0 0 0")
    accuracy=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metrics']['accuracy'])" "$dir/best.json" 2> /dev/null || echo none)
    read -r total continued exploited <<< "$counts"
    if [ "$status" -eq 0 ] && [ "$continued" -gt 0 ] \
        && python3 -c "import sys; sys.exit(not float(sys.argv[1]) >= 0.5)" "$accuracy" 2> /dev/null; then
        row pbt pass "$total evaluations, $continued continued a saved state on the GPU ($exploited another member's); best accuracy $accuracy"
    else
        row pbt fail "status $status; $total evaluations, $continued continued, $exploited exploited, best accuracy $accuracy; see logs/pbt.log"
    fi
}

check_ddp() {
    if [ "$gpus" -lt 2 ]; then
        row ddp skip "needs 2 GPUs: NCCL refuses two ranks of one group on one GPU"
        return
    fi
    needs_binary propulate-rs ddp || return
    local log="$logs/ddp.log" dir="$out/ddp"
    timeout 1200 "${MPIRUN[@]}" -np 2 "$bin/propulate-rs" --ranks-per-worker 2 --generations 2 --no-checkpoint \
        --space tutorials/pytorch_ddp/space.toml --out "$dir" --trials-dir "$dir/trials" \
        -- "$python" tutorials/pytorch_ddp/train.py --epochs 3 --data "$(data_dir)" > "$log" 2>&1
    local status=$? backend
    backend=$(grep -rhoi -m1 'backend[^a-z]*nccl\|nccl version [0-9.]*' "$dir/trials" 2> /dev/null | head -1)
    local loss
    loss=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['loss'])" "$dir/best.json" 2> /dev/null || echo none)
    if [ "$status" -eq 0 ] && [ "$loss" != none ] && [ "$loss" != None ]; then
        row ddp pass "best loss $loss; ${backend:-NCCL not named in the trial logs}"
    else
        row ddp fail "status $status; see logs/ddp.log"
    fi
}

for check in $checks; do
    case "$check" in
        env) check_env ;;
        nccl) check_nccl ;;
        step) check_step ;;
        search) check_search ;;
        split) check_split ;;
        ddp) check_ddp ;;
        pbt) check_pbt ;;
        *)
            row "$check" fail "no such check (env, nccl, step, search, split, ddp, pbt)"
            ;;
    esac
done
echo "gpu-check: the table and the logs are in $out" >&2
exit "$failed"
