"""Workers that span several MPI ranks: the Python version of tutorials/multi_rank_worker.rs.

    mpirun -np 8 python -m mpi4py tutorials/python/multi_rank_worker.py

With `ranks_per_worker=2`, 8 ranks form 4 workers of 2 ranks. Only each worker's root breeds and
talks to its island; every rank of the worker calls the loss with the same candidate, and the
ranks cooperate through `ctx.comm` (here each rank sums the squares of its share of the
coordinates, and an all-reduce over the worker's ranks adds the shares up). A data-parallel
training does the same with its gradients (tutorials/python/torch_ddp_example.py).
"""

import sys

from mpi4py import MPI

import propulate_rs as pr


def loss(params, ctx):
    x = [params[f"x{i}"] for i in range(8)]
    # Rank r of the worker squares coordinates r, r + size, r + 2 size, ...
    share = sum(v * v for v in x[ctx.rank::ctx.size])
    return ctx.comm.allreduce(share)  # the same value on every rank of the worker


def main():
    checkpoint = sys.argv[1] if len(sys.argv) > 1 else "checkpoints/multi-rank-worker-tutorial"
    space = {f"x{i}": pr.Float(-5.0, 5.0) for i in range(8)}
    result = pr.optimize(loss, space, generations=100, islands=2, ranks_per_worker=2, seed=3, propagator="ga",
                         checkpoint=checkpoint, quiet=True)
    if MPI.COMM_WORLD.rank == 0:
        workers = MPI.COMM_WORLD.size // 2
        print(f"{workers} workers of 2 ranks, {result.evaluations} evaluations; best loss {result.best.loss:.4g}")


if __name__ == "__main__":
    main()
