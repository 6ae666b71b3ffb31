"""The CNN of Propulate's torch_ddp_example tutorial as a stand-alone PyTorch DDP training script,
written for propulate-rs (command trials): one run trains one network data-parallel over the
processes propulate-rs starts for a worker, and reports its validation loss.

Run by propulate-rs (see tutorials/pytorch_ddp/README.md):

    mpirun -np 4 propulate-rs --ranks-per-worker 2 --space tutorials/pytorch_ddp/space.toml \
        -- python tutorials/pytorch_ddp/train.py --epochs 3

propulate-rs appends the candidate as --conv_layers=4 --activation=relu --lr=0.003 --gamma=0.8.
By hand, one process (or under torchrun) works too:

    python tutorials/pytorch_ddp/train.py --conv_layers 3 --activation relu --lr 0.01 --gamma 0.9

The recipe: 2-10 convolutions of 10 channels (3x3, padding 1) with the activation, a linear
classifier, log-softmax; Adadelta (or --optimizer sgd with --momentum, adam with --beta1 and
--beta2) with StepLR (its learning rate times gamma after every epoch);
batch 8 per process; each process trains on its DistributedSampler shard, DDP averages the
gradients. After every epoch the validation loss (mean negative log-likelihood over the whole
validation subset: each process its shard, summed over the processes) is reported as
`propulate: step=<epoch> loss=<value>`, which propulate-rs's early stopping can act on; at the end
rank 0 writes the best epoch's loss, with the accuracy, to $PROPULATE_RESULT.

Population-based training (`--propagator pbt`): where propulate-rs sets PROPULATE_SAVE_TO, the
script trains PROPULATE_STEPS epochs from epoch PROPULATE_STEP, first loading the network and the
optimizer from PROPULATE_RESTORE_FROM/state.pt when that is set (torch.load), with this
evaluation's learning rate (its gamma applied for the epochs done); rank 0 then saves both into
PROPULATE_SAVE_TO/state.pt (torch.save), and the loss is the last epoch's (where the saved state is).

Data: MNIST-format idx files (plain or .gz), Fashion-MNIST from Debian's dataset-fashion-mnist by
default. Needs only torch: the README's set-up installs it (.torch/bin/python).
"""

import argparse
import gzip
import json
import math
import os
import struct
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

ACTIVATIONS = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}
# The optimizer and its own parameters: --momentum only means something to SGD, --beta1 and
# --beta2 only to Adam (space-conditional.toml makes them conditional on --optimizer).
OPTIMIZERS = {
    "adadelta": lambda params, a: torch.optim.Adadelta(params, lr=a.lr),
    "sgd": lambda params, a: torch.optim.SGD(params, lr=a.lr, momentum=a.momentum),
    "adam": lambda params, a: torch.optim.Adam(params, lr=a.lr, betas=(a.beta1, a.beta2)),
}


def read_idx(path: Path, first: int) -> torch.Tensor:
    """The first `first` items of an idx file (the MNIST format) as a uint8 tensor; `path` or
    `path.gz`. Only their bytes are read: the whole training set is 47 MB uncompressed."""
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        path = path.with_name(path.name + ".gz")
    with gzip.open(path) if path.suffix == ".gz" else open(path, "rb") as f:
        dims = f.read(4)[3]
        shape = list(struct.unpack(">" + "I" * dims, f.read(4 * dims)))
        shape[0] = min(shape[0], first)
        raw = f.read(math.prod(shape))
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).reshape(shape)


def dataset(data: Path, split: str, first: int) -> TensorDataset:
    images = read_idx(data / f"{split}-images-idx3-ubyte", first)
    labels = read_idx(data / f"{split}-labels-idx1-ubyte", first)
    # The normalization of the reference tutorial (MNIST's mean and spread).
    x = (images.float().unsqueeze(1) / 255.0 - 0.1307) / 0.3081
    return TensorDataset(x, labels.long())


class Net(nn.Module):
    def __init__(self, conv_layers: int, activation: str):
        super().__init__()
        act = ACTIVATIONS[activation]
        layers = [nn.Conv2d(1, 10, 3, padding=1), act()]
        for _ in range(conv_layers - 1):
            layers += [nn.Conv2d(10, 10, 3, padding=1), act()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(10 * 28 * 28, 10)

    def forward(self, x):
        return F.log_softmax(self.classifier(self.features(x).flatten(1)), dim=1)


def validate(model, loader, device):
    """The mean validation loss and accuracy over the whole validation set: each process its
    shard, summed over the processes."""
    model.eval()
    totals = torch.zeros(3, dtype=torch.float64, device=device)  # summed loss, correct, images
    with torch.no_grad():
        for x, y in loader:
            out = model(x.to(device))
            y = y.to(device)
            totals += torch.stack([F.nll_loss(out, y, reduction="sum").double(),
                                   (out.argmax(1) == y).sum().double(),
                                   torch.tensor(float(len(y)), dtype=torch.float64, device=device)])
    dist.all_reduce(totals)
    return (totals[0] / totals[2]).item(), (totals[1] / totals[2]).item()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--conv_layers", type=int, default=3)
    p.add_argument("--activation", choices=sorted(ACTIVATIONS), default="relu")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--gamma", type=float, default=0.9)
    p.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="adadelta")
    p.add_argument("--momentum", type=float, default=0.0, help="SGD's (--optimizer sgd)")
    p.add_argument("--beta1", type=float, default=0.9, help="Adam's first beta (--optimizer adam)")
    p.add_argument("--beta2", type=float, default=0.999, help="Adam's second beta (--optimizer adam)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=8, help="images per step on each process")
    p.add_argument("--train-images", type=int, default=2000)
    p.add_argument("--valid-images", type=int, default=500)
    p.add_argument("--data", type=Path, default=Path("/usr/share/datasets/fashion-mnist"))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    # torchrun's variables, as propulate-rs sets them; a process started by hand is a job of one.
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    # torchrun shows every process all the node's GPUs, and LOCAL_RANK picks one; propulate-rs narrows
    # CUDA_VISIBLE_DEVICES to the rank's own, which is then device 0 (LOCAL_RANK would name a GPU
    # this process cannot see).
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    else:
        device = torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)  # before the group: NCCL's communicator lives on this GPU
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:  # what this run trains: the candidate's flags as propulate-rs passed them
        print("arguments:", " ".join(sys.argv[1:]), flush=True)
    torch.manual_seed(args.seed)  # the same initial weights on every process (DDP broadcasts rank 0's anyway)

    train = dataset(args.data, "train", args.train_images)
    valid = dataset(args.data, "t10k", args.valid_images)
    train_sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    valid_sampler = DistributedSampler(valid, num_replicas=world, rank=rank, shuffle=False)
    train_loader = DataLoader(train, batch_size=args.batch, sampler=train_sampler)
    valid_loader = DataLoader(valid, batch_size=100, sampler=valid_sampler)

    model = DistributedDataParallel(Net(args.conv_layers, args.activation).to(device))
    optimizer = OPTIMIZERS[args.optimizer](model.parameters(), args)
    # Population-based training: continue a saved state for PROPULATE_STEPS epochs.
    pbt = "PROPULATE_SAVE_TO" in os.environ
    done, epochs = 0, args.epochs
    if pbt:
        done, epochs = int(os.environ["PROPULATE_STEP"]), int(os.environ["PROPULATE_STEPS"])
        restore = os.environ.get("PROPULATE_RESTORE_FROM")
        if restore:
            state = torch.load(os.path.join(restore, "state.pt"), map_location=device)
            model.module.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
        for group in optimizer.param_groups:  # this evaluation's learning rate, not the saved one's
            group["lr"] = args.lr * args.gamma ** done
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=args.gamma)

    best = (float("inf"), 0.0)
    for epoch in range(done + 1, done + epochs + 1):
        train_sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            F.nll_loss(model(x.to(device)), y.to(device)).backward()
            optimizer.step()
        schedule.step()

        loss, accuracy = validate(model, valid_loader, device)
        best = (loss, accuracy) if pbt else min(best, (loss, accuracy))  # PBT: where the state is
        if rank == 0:
            print(f"epoch {epoch}: validation loss {loss:.4f}, accuracy {accuracy:.4f}", flush=True)
            print(f"propulate: step={epoch} loss={loss}", flush=True)

    if pbt and rank == 0:
        state = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}
        torch.save(state, os.path.join(os.environ["PROPULATE_SAVE_TO"], "state.pt"))
    if rank == 0 and "PROPULATE_RESULT" in os.environ:
        with open(os.environ["PROPULATE_RESULT"], "w") as f:
            json.dump({"loss": best[0], "accuracy": best[1]}, f)
    # Leave together, then without Python's finalization: gloo's threads can still hold objects
    # that the interpreter's teardown frees, and the process then dies in C++ ("terminate called
    # without an active exception", SIGABRT) after a finished training, failing the trial (seen
    # in about 1 of 80 trainings here, with the barrier alone). os._exit skips that teardown (and
    # its 0.4-0.9 s); everything is written and flushed by now.
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
