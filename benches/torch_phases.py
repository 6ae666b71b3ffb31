"""The fixed part of a PyTorch DDP command trial, phase by phase: what every evaluation pays
before and after its training. Run by benches/command_fixed_cost.sh as the trial command; it
does what tutorials/pytorch_ddp/train.py does around its epochs (imports torch, reads the same
data subset, joins its process group from torchrun's variables, all-reduces once, leaves) and
prints on stderr one line `phase NAME UNIX_TIME` at the end of each phase; rank 0 reports a loss of
0 so that the trial succeeds. With PHASES_EXIT=hard it leaves by os._exit(0), as train.py does,
skipping the interpreter's teardown; with `normal`, by returning, as most scripts do.
"""

import os
import sys
import time


def phase(name):
    print(f"phase {name} {time.time():.6f}", file=sys.stderr, flush=True)


phase("started")  # Python is up: the interpreter's start lies before this line
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

phase("imported")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tutorials", "pytorch_ddp"))
from pathlib import Path  # noqa: E402

import train  # noqa: E402  (the tutorial's data reading, not its training)

data = Path(os.environ.get("DATA", "/usr/share/datasets/fashion-mnist"))
train.dataset(data, "train", int(os.environ.get("TRAIN_IMAGES", 2000)))
train.dataset(data, "t10k", int(os.environ.get("VALID_IMAGES", 500)))
phase("data")
dist.init_process_group("gloo")
phase("joined")
x = torch.ones(1)
dist.all_reduce(x)
dist.barrier()
dist.destroy_process_group()
phase("left")
if os.environ.get("RANK") == "0":
    print("propulate: loss=0", flush=True)
if os.environ.get("PHASES_EXIT") == "hard":
    sys.stderr.flush()
    os._exit(0)
