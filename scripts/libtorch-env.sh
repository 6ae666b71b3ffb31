# Source this: installs libtorch 2.9.0 if missing (scripts/install-libtorch.sh) and exports LIBTORCH
# for building the `tch` feature, and LD_LIBRARY_PATH for running what was built against it.
LIBTORCH="$(bash "$(dirname "${BASH_SOURCE[0]}")/install-libtorch.sh" | tail -1)"
export LIBTORCH
export LD_LIBRARY_PATH="$LIBTORCH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
