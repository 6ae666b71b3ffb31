# Source this: exports LIBTORCH for building the `tch` feature, and LD_LIBRARY_PATH for running what
# was built against it. By default it installs libtorch 2.9.0 into .torch/ if missing
# (scripts/install-libtorch.sh), the version tch 0.22 (burn-tch 0.22) is made for.
#
# PROPULATE_LIBTORCH=DIR uses a torch that is already installed instead (a torch directory, or a
# virtual environment with torch, e.g. the GPU machine's /opt/torch/.venv), downloading nothing:
#
#   PROPULATE_LIBTORCH=/opt/torch/.venv source scripts/libtorch-env.sh
#   cargo build --release --features cnn,tch
#
# and then also exports
# - LIBTORCH_BYPASS_VERSION_CHECK=1 when its version (build-version or version.py) is not 2.9.0:
#   tch then builds its 2.9.0 bindings against it, so an operation that changed between the two
#   versions can still fail at run time;
# - PROPULATE_LINK_TORCH_CUDA=1 when it has lib/libtorch_cuda.so: build.rs then links the binary,
#   tests and examples with `-Wl,--no-as-needed,-ltorch_cuda,--as-needed` (and
#   `-Wl,--allow-shlib-undefined`, the CUDA libraries being on the GPU machine rather than where it
#   links). rustc's --as-needed otherwise drops libtorch_cuda, and tch sees no GPU (tch-rs issues
#   #907, #964). Not RUSTFLAGS: those would reach every build script too, which then cannot load.
# The default route (CI's) sets neither.
# Where that torch has the wheel's NCCL beside it, LD_LIBRARY_PATH starts with a directory whose
# libnccl.so links to it (PROPULATE_NCCL_LINK_DIR, default .torch-nccl/ in the repository): the
# NCCL gradient averaging then uses libtorch's NCCL, not a second one (scripts/torch-nccl-link.sh).
unset LIBTORCH_BYPASS_VERSION_CHECK PROPULATE_LINK_TORCH_CUDA
if ! LIBTORCH="$(bash "$(dirname "${BASH_SOURCE[0]}")/install-libtorch.sh" | tail -1)" || [ -z "$LIBTORCH" ]; then
    echo "libtorch-env: no libtorch; LIBTORCH not set" >&2
    unset LIBTORCH
    return 1
fi
export LIBTORCH
if [ -n "${PROPULATE_LIBTORCH:-}" ]; then
    # tch compares the part before "+" (2.11.0+cu130 is 2.11.0).
    if [ -f "$LIBTORCH/build-version" ]; then
        libtorch_version="$(head -n 1 "$LIBTORCH/build-version")"
    else
        libtorch_version="$(sed -n "s/^__version__ = ['\"]\([^'\"]*\)['\"].*/\1/p" "$LIBTORCH/version.py" 2>/dev/null)"
    fi
    if [ -z "$libtorch_version" ]; then
        echo "libtorch-env: $LIBTORCH has neither build-version nor a __version__ in version.py; cannot tell its version" >&2
        unset LIBTORCH libtorch_version
        return 1
    fi
    if [ "${libtorch_version%%+*}" != "2.9.0" ]; then
        export LIBTORCH_BYPASS_VERSION_CHECK=1
    fi
    if [ -f "$LIBTORCH/lib/libtorch_cuda.so" ]; then
        export PROPULATE_LINK_TORCH_CUDA=1
    fi
    echo "libtorch-env: LIBTORCH=$LIBTORCH (torch $libtorch_version)${LIBTORCH_BYPASS_VERSION_CHECK:+, version check bypassed}${PROPULATE_LINK_TORCH_CUDA:+, libtorch_cuda linked}" >&2
    unset libtorch_version
fi
nccl_link="$(bash "$(dirname "${BASH_SOURCE[0]}")/torch-nccl-link.sh" "$LIBTORCH" \
    "${PROPULATE_NCCL_LINK_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.torch-nccl}" || true)"
export LD_LIBRARY_PATH="${nccl_link:+$nccl_link:}$LIBTORCH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset nccl_link
