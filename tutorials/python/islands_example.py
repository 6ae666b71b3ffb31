"""Propulate's tutorials/islands_example.py on propulate-rs: a benchmark function minimized by
islands that exchange their best individuals.

    mpirun -np 8 python -m mpi4py tutorials/python/islands_example.py --islands 2 --generations 100

Propulate's `limits` dict is taken as it is; the loss gets a plain dict of the candidate's values.
`python -m mpi4py` ends the whole job when a rank raises, instead of leaving the others waiting.
"""

import argparse
import math

from mpi4py import MPI

import propulate_rs as pr


def rastrigin(params):
    """Rastrigin in two dimensions: many local minima, the global one 0 at the origin."""
    xs = [params["a"], params["b"]]
    return 10 * len(xs) + sum(x * x - 10 * math.cos(2 * math.pi * x) for x in xs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--islands", type=int, default=2)
    p.add_argument("--generations", type=int, default=100)
    p.add_argument("--migration-probability", type=float, default=0.9)
    p.add_argument("--pollination", action="store_true")
    p.add_argument("--propagator", default="ga")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", default="checkpoints/islands-example")
    args = p.parse_args()

    limits = {"a": (-5.12, 5.12), "b": (-5.12, 5.12)}
    result = pr.optimize(
        rastrigin,
        limits,
        generations=args.generations,
        islands=args.islands,
        migration_probability=args.migration_probability,
        pollination=args.pollination,
        propagator=args.propagator,
        seed=args.seed,
        checkpoint=args.checkpoint,
        quiet=True,
    )
    if MPI.COMM_WORLD.rank == 0:
        for island, best in enumerate(result.islands):
            print(f"island {island}: best {best.loss:.6g} at {best.params}")
        print(f"best loss {result.best.loss:.6g} after {result.evaluations} evaluations, "
              f"{result.emigrated} emigrated, {result.wall_s:.2f} s")


if __name__ == "__main__":
    main()
