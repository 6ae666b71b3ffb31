"""A worker of two ranks trains one torch model with DistributedDataParallel over gloo: the
process group forms once per process from the variables optimize() sets, and every evaluation
trains on its shard of the data."""

import os

import pytest
from mpi4py import MPI

import propulate_rs as pr

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")


def group():
    """The worker's process group, formed on first use and kept for the run (a process has one)."""
    if not dist.is_initialized():
        dist.init_process_group("gloo")
    return dist.group.WORLD


def train(params, ctx):
    group()
    assert dist.get_world_size() == ctx.size == 2 and dist.get_rank() == ctx.rank
    torch.manual_seed(ctx.seed)
    x = torch.linspace(-1, 1, 64).unsqueeze(1)
    y = 3 * x + 0.5
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=params["lr"])
    sampler = torch.utils.data.distributed.DistributedSampler(
        torch.utils.data.TensorDataset(x, y), num_replicas=ctx.size, rank=ctx.rank, seed=ctx.seed)
    for epoch in range(params["epochs"]):
        sampler.set_epoch(epoch)
        index = list(sampler)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[index]), y[index])
        loss.backward()  # DDP averages the gradients over the worker's two ranks
        optimizer.step()
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    replicas = [torch.zeros_like(weights) for _ in range(ctx.size)]
    dist.all_gather(replicas, weights)
    assert torch.equal(replicas[0], replicas[1]), "the replicas diverged"
    with torch.no_grad():
        value = torch.nn.functional.mse_loss(model(x), y)
    dist.all_reduce(value)
    return value.item() / ctx.size


def test_a_worker_trains_one_ddp_model_on_two_ranks(shared_tmp):
    result = pr.optimize(train, {"lr": pr.Float(0.01, 0.5, log=True), "epochs": pr.Int(5, 30)}, generations=4,
                         ranks_per_worker=2, propagator="random", quiet=True,
                         checkpoint=os.path.join(shared_tmp, "ck"))
    assert result.failed == 0, [t.failure for t in result.trials]
    assert result.evaluations == 2 * 4 and result.best.loss < 4.0
    assert os.environ["MASTER_ADDR"] == "127.0.0.1" and os.environ["LOCAL_WORLD_SIZE"] == "2"
    if dist.is_initialized():
        dist.destroy_process_group()
