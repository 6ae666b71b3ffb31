"""Propulate's tutorials/torch_ddp_example.py on propulate-rs: the reference tutorial's CNN tuned
on Fashion-MNIST, every candidate trained data-parallel (DistributedDataParallel over gloo on
CPUs, NCCL on GPUs) by the ranks of one worker, in the worker's own processes.

    mpirun -np 4 python -m mpi4py tutorials/python/torch_ddp_example.py --ranks-per-worker 2

The network, the data and the recipe are those of the command-trial tutorial
(tutorials/pytorch_ddp/train.py), imported from it. What differs from Propulate's version: the
process group is formed once per process, on the first evaluation, from the variables propulate_rs
sets before it (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK), not once per evaluation;
the validation loss is reported every epoch (`ctx.report`), so `--early-stop median` can end
hopeless trainings; the run resumes from its checkpoint when started again.
"""

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from mpi4py import MPI
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "pytorch_ddp"))
from train import Net, dataset, validate  # noqa: E402 - the command-trial tutorial's network, data, validation

import propulate_rs as pr  # noqa: E402

SPACE = {
    "conv_layers": pr.Int(2, 10),
    "activation": pr.Categorical(["relu", "sigmoid", "tanh"]),
    "lr": pr.Float(0.0001, 0.01, log=True),
    "gamma": pr.Float(0.5, 0.999),
}


def device_of(ctx):
    return torch.device(ctx.device) if ctx.device.startswith("cuda") and torch.cuda.is_available() else torch.device("cpu")


def process_group(device):
    """The worker's process group, formed on the first evaluation and kept for the run."""
    if not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")


def make_loss(args):
    train_set = dataset(args.data, "train", args.train_images)
    valid_set = dataset(args.data, "t10k", args.valid_images)

    def loss(params, ctx):
        device = device_of(ctx)
        process_group(device)
        torch.manual_seed(ctx.seed)
        train_sampler = DistributedSampler(train_set, num_replicas=ctx.size, rank=ctx.rank, seed=ctx.seed)
        valid_sampler = DistributedSampler(valid_set, num_replicas=ctx.size, rank=ctx.rank, shuffle=False)
        train_loader = DataLoader(train_set, batch_size=args.batch, sampler=train_sampler)
        valid_loader = DataLoader(valid_set, batch_size=100, sampler=valid_sampler)
        model = DistributedDataParallel(Net(params["conv_layers"], params["activation"]).to(device))
        optimizer = torch.optim.Adadelta(model.parameters(), lr=params["lr"])
        schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=params["gamma"])
        best = float("inf")
        for epoch in range(1, args.epochs + 1):
            train_sampler.set_epoch(epoch)
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                F.nll_loss(model(x.to(device)), y.to(device)).backward()
                optimizer.step()
            schedule.step()
            value, accuracy = validate(model, valid_loader, device)
            if value < best:
                best = value
                ctx.record("accuracy", accuracy)
            if not ctx.report(epoch, value):
                break
        return best

    return loss


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks-per-worker", type=int, default=2)
    p.add_argument("--generations", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--train-images", type=int, default=2000)
    p.add_argument("--valid-images", type=int, default=500)
    p.add_argument("--data", type=Path, default=Path("/usr/share/datasets/fashion-mnist"))
    p.add_argument("--early-stop", default="none")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", default="checkpoints/torch-ddp-example")
    p.add_argument("--out", default=None)
    args = p.parse_args()

    torch.set_num_threads(1)  # the ranks share the cores
    result = pr.optimize(make_loss(args), SPACE, generations=args.generations,
                         ranks_per_worker=args.ranks_per_worker, early_stop=args.early_stop, seed=args.seed,
                         checkpoint=args.checkpoint, out=args.out, quiet=True)
    if MPI.COMM_WORLD.rank == 0:
        print(f"best validation loss {result.best.loss:.4f} ({result.best.metrics.get('accuracy', 0):.3f} accuracy) "
              f"with {result.best.params}; {result.evaluations} trainings in {result.wall_s:.1f} s")
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
