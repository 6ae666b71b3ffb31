#!/usr/bin/env bash
# libtorch's own NCCL, as the name cudarc opens: `scripts/torch-nccl-link.sh TORCH_DIR LINK_DIR`.
# When TORCH_DIR (a wheel's site-packages/torch) has the wheel's NCCL beside it
# (site-packages/nvidia/nccl/lib/libnccl.so.2), makes LINK_DIR/libnccl.so a link to it and prints
# LINK_DIR, to be put first on LD_LIBRARY_PATH; prints nothing otherwise. cudarc opens NCCL as
# libnccl.so, which may find a system NCCL while libtorch has loaded its own: two NCCL libraries
# in one process break each other (crates/ddp/src/nccl_library.rs has what was measured).
set -euo pipefail
torch="$1" link_dir="$2"
# The wheel's layout (nvidia-nccl beside torch), or an NCCL inside torch's own lib/.
nccl="$torch/../nvidia/nccl/lib/libnccl.so.2"
if [ ! -f "$nccl" ]; then nccl="$torch/lib/libnccl.so.2"; fi
if [ -f "$nccl" ]; then
    mkdir -p "$link_dir"
    ln -sfn "$(cd "$(dirname "$nccl")" && pwd)/libnccl.so.2" "$link_dir/libnccl.so"
    echo "$link_dir"
fi
