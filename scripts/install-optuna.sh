#!/usr/bin/env bash
# Installs Optuna 5.0.0 and optuna-dashboard 0.21.0 from PyPI into a virtual environment of its
# own (.venv-optuna/, about 150 MB), for the test that opens our Optuna journal export with the
# real Optuna and its dashboard. Idempotent: prints the environment's python when both are there.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=5.0.0
DASHBOARD=0.21.0
venv=.venv-optuna
installed="import optuna, optuna_dashboard, sys; sys.exit(optuna.__version__ != '$VERSION' or optuna_dashboard.__version__ != '$DASHBOARD')"
if ! "$venv/bin/python" -c "$installed" 2>/dev/null; then
    echo "install-optuna: installing optuna $VERSION and optuna-dashboard $DASHBOARD into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "optuna==$VERSION" "optuna-dashboard==$DASHBOARD"
fi
echo "$PWD/$venv/bin/python"
