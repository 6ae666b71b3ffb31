#!/usr/bin/env bash
# Installs Optuna 5.0.0 from PyPI into a virtual environment of its own (.venv-optuna/, about
# 140 MB), for the test that opens our Optuna journal export with the real Optuna. Idempotent:
# prints the environment's python when Optuna is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=5.0.0
venv=.venv-optuna
if ! "$venv/bin/python" -c "import optuna, sys; sys.exit(optuna.__version__ != '$VERSION')" 2>/dev/null; then
    echo "install-optuna: installing optuna $VERSION into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "optuna==$VERSION"
fi
echo "$PWD/$venv/bin/python"
