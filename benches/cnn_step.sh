#!/usr/bin/env bash
# One training step of the reference's CNN: burn-tch and flex (benches/cnn_step.rs) against
# PyTorch 2.9.0 eager (benches/cnn_step.py, run by the Python of the libtorch install: the same
# wheel, the same libraries), side by side:
# for each setting, ROUNDS interleaved rounds, each running ours, PyTorch as installed, and PyTorch
# with the malloc settings the CNN task makes in its own process (crates/cnn/src/allocator.rs,
# passed as GLIBC_TUNABLES); prints every median and the ratios of the medians over rounds.
#
#   bash benches/cnn_step.sh            # settings: conv_layers batch threads
#   ROUNDS=5 STEPS=300 bash benches/cnn_step.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/libtorch-env.sh
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-200}
python="${PROPULATE_TORCH_VENV:-$PWD/.torch}/bin/python"
cargo build --release --features cnn,tch --bench cnn_step
bench=$(ls -t target/release/deps/cnn_step-* | grep -v '\.d$' | head -1)
tunables=$("$bench" tunables)
echo "PyTorch with our malloc settings: GLIBC_TUNABLES=$tunables"
results=$(mktemp)
for setting in "3 8 1" "3 8 2" "3 64 1" "3 64 2" "10 8 1"; do
    for round in $(seq "$ROUNDS"); do
        "$bench" $setting "$STEPS" >> "$results"
        "$python" benches/cnn_step.py $setting "$STEPS" >> "$results"
        GLIBC_TUNABLES=$tunables "$python" benches/cnn_step.py $setting "$STEPS" | sed 's/pytorch/pytorch-malloc/' >> "$results"
    done
done
python3 - "$results" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    runs[(f[3], f[5], f[7], f[1])].append(float(f[9]))
print(f"{'conv':>4} {'batch':>5} {'threads':>7} {'pytorch ms':>10} {'pt-malloc ms':>12} {'tch ms':>8} {'flex ms':>8} "
      f"{'tch/pt':>7} {'tch/pt-malloc':>13} {'flex/pt':>7}")
nan = float("nan")
for key in sorted({k[:3] for k in runs}, key=lambda k: tuple(map(int, k))):
    med = {b: statistics.median(runs[key + (b,)]) for b in ("pytorch", "pytorch-malloc", "tch", "flex") if runs[key + (b,)]}
    pt, ptm, tch, flex = (med.get(b, nan) for b in ("pytorch", "pytorch-malloc", "tch", "flex"))
    print(f"{key[0]:>4} {key[1]:>5} {key[2]:>7} {pt:>10.3f} {ptm:>12.3f} {tch:>8.3f} {flex:>8.3f} "
          f"{tch / pt:>7.2f} {tch / ptm:>13.2f} {flex / pt:>7.2f}")
PY
