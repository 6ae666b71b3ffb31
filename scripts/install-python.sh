#!/usr/bin/env bash
# Installs the Python package propulate-rs (import propulate_rs) from this checkout into a virtual
# environment, .venv-python/ (override with PROPULATE_PYTHON_VENV), with what its tests use: mpi4py,
# pytest, numpy and pandas from PyPI. The package itself is the one pip command of the README,
# `pip install .` at the repository root: maturin (from PyPI, in pip's build environment) builds
# crates/python in release mode into target/ and installs the cp39-abi3 wheel. It needs cargo and
# what scripts/install-deps.sh installs (OpenMPI's headers, libclang).
#
# torch for the tests that train with torch.distributed: the torch of scripts/install-libtorch.sh
# (.torch/, PyPI's torch wheel) when it is there, put on this environment's path by a .pth file
# rather than installed a second time (6.7 GB).
#
# Idempotent. Prints the environment's python on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${PROPULATE_PYTHON_VENV:-$PWD/.venv-python}"
python="$venv/bin/python"
if [ ! -x "$python" ]; then
    python3 -m venv "$venv" >&2
fi
"$python" -m pip install -q --disable-pip-version-check "mpi4py>=4" pytest numpy pandas >&2
# The package, rebuilt from this checkout every time (cargo rebuilds only what changed).
"$python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps . >&2
torch_site=$(ls -d "${PROPULATE_TORCH_VENV:-$PWD/.torch}"/lib/python3*/site-packages 2>/dev/null | head -1 || true)
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ -n "$torch_site" ] && [ -d "$torch_site/torch" ]; then
    echo "$torch_site" > "$site/propulate-torch.pth"
else
    rm -f "$site/propulate-torch.pth"
fi
echo "install-python: $("$python" -c 'import propulate_rs, mpi4py; print("propulate_rs", propulate_rs.__file__, "mpi4py", mpi4py.__version__)')" >&2
echo "$python"
