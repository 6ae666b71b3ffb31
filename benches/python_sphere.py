"""The engine with a Python loss (benches/python.sh): the reference's sphere (2-D, [-5.12, 5.12])
written in Python, minimized by propulate_rs.optimize under mpirun, timed as
benches/reference/run_reference.py times Propulate 1.2.2 (from a barrier before the run to one
after it).

    mpirun -np 8 python -m mpi4py benches/python_sphere.py --generations 1000 --islands 2

Rank 0 prints one JSON line: {"impl": "propulate_rs", "evaluations", "wall_s", "evals_per_s",
"best_loss", ...}.
"""

import argparse
import json
import tempfile
import time

from mpi4py import MPI

import propulate_rs as pr


def sphere(params):
    return params["x0"] ** 2 + params["x1"] ** 2


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--generations", type=int, default=1000)
    p.add_argument("--islands", type=int, default=2)
    p.add_argument("--propagator", default="ga")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-checkpoint", action="store_true")
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    # A fresh checkpoint per run, as the reference always writes one.
    directory = comm.bcast(tempfile.mkdtemp(prefix="python-sphere-") if comm.rank == 0 else None, root=0)
    space = {"x0": (-5.12, 5.12), "x1": (-5.12, 5.12)}
    comm.Barrier()
    start = time.perf_counter()
    result = pr.optimize(sphere, space, generations=args.generations, islands=args.islands,
                         propagator=args.propagator, migration_probability=0.9, seed=args.seed, quiet=True,
                         checkpoint=None if args.no_checkpoint else directory, no_checkpoint=args.no_checkpoint)
    comm.Barrier()
    wall = time.perf_counter() - start
    if comm.rank == 0:
        print(json.dumps({"impl": "propulate_rs", "ranks": comm.size, "islands": args.islands,
                          "generations": args.generations, "propagator": args.propagator,
                          "evaluations": result.evaluations, "wall_s": wall,
                          "evals_per_s": result.evaluations / wall, "best_loss": result.best.loss}))


if __name__ == "__main__":
    main()
