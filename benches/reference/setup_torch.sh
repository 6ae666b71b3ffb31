#!/usr/bin/env bash
# Make PyTorch and torchvision importable in the reference's venv (.venv-ref, made by
# setup_venv.sh), for running Propulate 1.2.2's tutorials/torch_ddp_example.py
# (benches/ddp_search.sh). Idempotent: re-running only checks and prints versions.
#
# Usage: benches/reference/setup_torch.sh           (from anywhere)
#   VENV=path    the reference venv (default: <repo>/.venv-ref; created by setup_venv.sh if missing)
#   TORCH=path   a venv holding torch 2.9.0 (default: <repo>/.torch, the venv that
#                scripts/install-libtorch.sh installs the libtorch of our `tch` build from)
#
# torch is not downloaded a second time (a 2+ GB wheel with its CUDA libraries): a .pth file in
# the reference venv's site-packages appends the torch venv's site-packages to the END of sys.path.
# The reference venv's own packages (numpy 1.26, which Propulate 1.2.2's GPy pins) are found
# first; only what it lacks (torch and its pure-Python dependencies: sympy, networkx, jinja2, ...)
# comes from the torch venv. torchvision 0.24.0, the release paired with torch 2.9.0, is installed
# into the reference venv with --no-deps (its dependencies are torch, numpy and pillow, all there),
# so pip cannot pull in another torch.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$REPO_ROOT/.venv-ref}"
TORCH="${TORCH:-$REPO_ROOT/.torch}"
TORCHVISION_VERSION="0.24.0"

log() { echo "[setup_torch] $*" >&2; }

if [[ ! -x "$VENV/bin/python" ]]; then
    VENV="$VENV" bash "$REPO_ROOT/benches/reference/setup_venv.sh" >&2
fi
PY="$VENV/bin/python"

site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
[[ -x "$TORCH/bin/python" ]] || { log "error: no torch venv at $TORCH (run: source scripts/libtorch-env.sh, or set TORCH=)"; exit 1; }
TORCH_SITE="$(site "$TORCH/bin/python")"
[[ -d "$TORCH_SITE/torch" ]] || { log "error: $TORCH_SITE has no torch package"; exit 1; }
# Both interpreters must be the same Python minor version, or torch's C extensions will not load.
ver() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
[[ "$(ver "$PY")" == "$(ver "$TORCH/bin/python")" ]] ||
    { log "error: $VENV is Python $(ver "$PY"), $TORCH is Python $(ver "$TORCH/bin/python")"; exit 1; }

# A .pth line starting with "import" is executed; this one appends (never prepends) the path.
PTH="$(site "$PY")/zz-propulate-rs-torch.pth"
LINE="import sys; p = '$TORCH_SITE'; p in sys.path or sys.path.append(p)"
if [[ ! -f "$PTH" || "$(cat "$PTH")" != "$LINE" ]]; then
    log "linking $TORCH_SITE into $VENV via $PTH"
    printf '%s\n' "$LINE" > "$PTH"
fi

if ! "$PY" -c "from importlib.metadata import version; assert version('torchvision') == '$TORCHVISION_VERSION'" 2>/dev/null; then
    log "installing torchvision==$TORCHVISION_VERSION (--no-deps) into $VENV"
    "$PY" -m pip install --quiet --no-deps "torchvision==$TORCHVISION_VERSION"
fi

# The check: everything imports, numpy is the venv's own 1.x, and torch's numpy bridge works with
# it both ways (torch 2.9 is built against numpy 2's ABI, which numpy 1.26 can still load).
"$PY" - "$VENV" <<'EOF'
import sys
import numpy, torch, torchvision, propulate, mpi4py
from mpi4py import MPI
assert numpy.__file__.startswith(sys.argv[1]), f"numpy comes from {numpy.__file__}, not the reference venv"
a = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
t = torch.from_numpy(a) * 2
assert (t.numpy() == a * 2).all() and torch.tensor([1.5]).numpy().dtype == numpy.float32
for m in (propulate, mpi4py, numpy, torch, torchvision):
    print(f"{m.__name__:12s}{getattr(m, '__version__', '?'):14s}{m.__file__}")
print("MPI library ", MPI.Get_library_version().splitlines()[0].strip())
print("torch threads", torch.get_num_threads(), "cuda", torch.cuda.is_available(), "gloo", torch.distributed.is_gloo_available())
EOF
