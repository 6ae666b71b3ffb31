"""A real PyTorch DDP program as a command trial in the tests: it joins its process group from the
environment propulate-rs sets (as torchrun would), all-reduces across its ranks over gloo, and
reports a loss that only the all-reduce can produce: (sum of rank + 1 over the ranks) * (x - 0.5)^2.
Parameters arrive as --x=<value>; rank 0 writes the result file, with whether torch was imported
before the program began (it was when propulate-rs forked it from a Python with --preload torch)."""
import sys

TORCH_PRELOADED = "torch" in sys.modules

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--x", type=float, required=True)
args = parser.parse_args()

dist.init_process_group("gloo")  # init_method "env://": MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
assert json.loads(os.environ["PROPULATE_PARAMS"])["x"] == args.x
contribution = torch.tensor([float(rank + 1)], dtype=torch.float64)
dist.all_reduce(contribution)  # every rank's rank + 1, summed
loss = contribution.item() * (args.x - 0.5) ** 2
if rank == 0:
    print(f"propulate: step=1 loss={loss}")
    with open(os.environ["PROPULATE_RESULT"], "w") as f:
        json.dump({"loss": loss, "rank_sum": contribution.item(), "world_size": world, "torch_preloaded": float(TORCH_PRELOADED)}, f)
dist.destroy_process_group()
