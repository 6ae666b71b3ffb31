#!/usr/bin/env python3
"""Benchmark driver for the Python reference implementation (Propulate 1.2.2).

Run it under MPI with the interpreter of the reference venv, e.g.::

    mpirun -np 8 .venv-ref/bin/python benches/reference/run_reference.py \
        --function sphere --islands 2 --generations 1000 --seed 0

Every rank runs ``--generations`` evaluations (Propulate counts generations per
worker), so the total budget is ``generations * ranks``. Rank 0 prints exactly
one JSON line on stdout, starting with ``{"impl": "reference"``::

    {"impl": "reference", "function": ..., "ranks": ..., "islands": ...,
     "generations": ..., "seed": ..., "evaluations": ..., "wall_s": ...,
     "evals_per_s": ..., "best_loss": ..., ...}

``wall_s`` is measured on rank 0 from just after a barrier preceding
``Islands.propulate()`` to just after a barrier following it (so it includes
Propulate's own end-of-run synchronisation and its final checkpoint write, but
not MPI start-up, imports or ``Islands`` construction). ``evaluations`` is the
number of loss-function calls, counted by a wrapper and summed over ranks.
``best_loss`` is the minimum loss over every rank's local population.

Propulate 1.2.2 always writes pickle checkpoints, so they are directed to a
fresh temporary directory (``--checkpoint-dir`` to choose the parent) that is
removed at the end. A non-empty checkpoint directory would make the reference
*resume* instead of starting fresh, which is why a new one is made per run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
import warnings

FUNCTIONS = (
    "sphere", "rosenbrock", "step", "quartic", "rastrigin", "griewank", "schwefel",
    "bisphere", "birastrigin", "bukin", "eggcrate", "himmelblau", "keane", "leon",
)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--function", default="sphere", choices=FUNCTIONS)
    p.add_argument("--generations", type=int, default=1000, help="evaluations per worker (>= 1)")
    p.add_argument("--islands", type=int, default=2)
    p.add_argument("--seed", type=int, default=0, help="rank r uses seed + r")
    p.add_argument("--pop-size", type=int, default=None, help="breeding pool size (default: 2 * workers)")
    p.add_argument("--migration-probability", type=float, default=0.9,
                   help="island-level migration probability (default 0.9; Islands' own 1.2.2 default is 0.0)")
    p.add_argument("--pollination", action="store_true",
                   help="pollination instead of real migration (Islands' own 1.2.2 default is pollination=True)")
    p.add_argument("--crossover-prob", type=float, default=0.7)
    p.add_argument("--mutation-prob", type=float, default=0.4)
    p.add_argument("--random-init-prob", type=float, default=0.1)
    p.add_argument("--sigma-factor", type=float, default=0.05)
    p.add_argument("--propagator", default="ga", choices=("ga", "pso", "cmaes", "nm"),
                   help="ga: the default genetic propagator on islands; pso (BasicPSO, inertia 0.729, "
                        "c1 = c2 = 1.49445), cmaes (CMAPropagator with BasicCMA) or nm (ParallelNelderMead): "
                        "built as the reference's pso/cmaes/nm tutorials build them, on one Propulator "
                        "(its PSO needs world rank = island rank, issue #82, so these run on one island)")
    p.add_argument("--checkpoint-dir", default=None,
                   help="parent directory for the throw-away checkpoint dir (default: $TMPDIR)")
    p.add_argument("--verbose", action="store_true", help="keep Propulate's banner and INFO logging")
    args = p.parse_args(argv)
    if args.generations < 1:
        p.error("--generations must be >= 1 (0 leaves Propulate 1.2.2's Propulator half-built)")
    if args.islands < 1:
        p.error("--islands must be >= 1")
    if args.propagator != "ga" and args.islands != 1:
        p.error("--propagator pso|cmaes|nm runs on one island, as the reference's tutorials do")
    return args


def main() -> int:
    args = parse_args()

    # Quieten third-party import noise (GPy/matplotlib/paramz are imported by propulate.surrogate).
    if not args.verbose:
        warnings.filterwarnings("ignore")
        os.environ.setdefault("MPLBACKEND", "Agg")

    import numpy as np
    from mpi4py import MPI

    with contextlib.redirect_stdout(io.StringIO()) if not args.verbose else contextlib.nullcontext():
        import propulate
        from propulate.utils import get_default_propagator
        from propulate.utils.benchmark_functions import get_function_search_space

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size

    if args.islands > size:
        if rank == 0:
            print(f"error: {args.islands} islands need at least as many ranks (got {size})", file=sys.stderr)
        return 2

    plog = logging.getLogger("propulate")
    if args.verbose:
        propulate.set_logger_config(level=logging.INFO, log_rank=True, colors=False)
    else:
        # Without handlers Python's last-resort handler would still print WARNING+ to stderr.
        plog.setLevel(logging.ERROR)
        plog.propagate = False
        plog.addHandler(logging.NullHandler())

    # Seeding as in Propulate's tutorials: one random.Random per rank, seed + rank.
    # The global numpy RNG is seeded too, because `quartic` draws its noise from it.
    rng = random.Random(args.seed + rank)
    np.random.seed((args.seed + rank) % 2**32)

    function, limits = get_function_search_space(args.function)

    n_evals = 0

    def loss_fn(params) -> float:
        nonlocal n_evals
        n_evals += 1
        return function(params)

    pop_size = args.pop_size if args.pop_size is not None else 2 * size

    # Propulate 1.2.2 crashes with a single island and migration_probability > 0: the default
    # topology is all zeros, and SelectMin(0) raises "Propagator has to sire more than 0
    # offspring" on the first emigration attempt. With one island there is nowhere to migrate
    # to anyway, so migration is switched off.
    migration_probability = args.migration_probability if args.islands > 1 else 0.0
    if args.propagator == "ga":
        propagator = get_default_propagator(
            pop_size=pop_size,
            limits=limits,
            crossover_prob=args.crossover_prob,
            mutation_prob=args.mutation_prob,
            random_init_prob=args.random_init_prob,
            sigma_factor=args.sigma_factor,
            rng=rng,
        )
    else:
        propagator = tutorial_propagator(args, limits, rng, rank, pop_size)

    # One fresh checkpoint directory shared by all ranks (files are per island).
    ckpt_dir = None
    if rank == 0:
        ckpt_dir = tempfile.mkdtemp(prefix="propulate-ref-ckpt-", dir=args.checkpoint_dir)
    ckpt_dir = comm.bcast(ckpt_dir, root=0)

    quiet = contextlib.redirect_stdout(io.StringIO()) if not args.verbose else contextlib.nullcontext()
    try:
        with quiet:  # Islands() prints an ASCII-art banner on rank 0.
            if args.propagator == "ga":
                propulator = None
                islands = propulate.Islands(
                    loss_fn=loss_fn,
                    propagator=propagator,
                    rng=rng,
                    generations=args.generations,
                    num_islands=args.islands,
                    migration_probability=migration_probability,
                    pollination=args.pollination,
                    checkpoint_path=ckpt_dir,
                )
            else:
                islands = None
                propulator = propulate.Propulator(
                    loss_fn, propagator, rng=rng, island_comm=comm, generations=args.generations,
                    checkpoint_path=ckpt_dir,
                )

        comm.barrier()
        t0 = time.perf_counter()
        with quiet:
            (propulator or islands).propulate(logging_interval=10**9, debug=0)
        comm.barrier()
        wall_s = time.perf_counter() - t0

        population = (propulator or islands.propulator).population
        local_best = min((ind.loss for ind in population), default=float("inf"))
        best_loss = comm.reduce(local_best, op=MPI.MIN, root=0)
        evaluations = comm.reduce(n_evals, op=MPI.SUM, root=0)
    finally:
        comm.barrier()
        if rank == 0 and ckpt_dir is not None:
            shutil.rmtree(ckpt_dir, ignore_errors=True)

    if rank == 0:
        record = {
            "impl": "reference",
            "function": args.function,
            "ranks": size,
            "islands": args.islands,
            "generations": args.generations,
            "seed": args.seed,
            "evaluations": int(evaluations),
            "wall_s": wall_s,
            "evals_per_s": evaluations / wall_s if wall_s > 0 else None,
            "best_loss": float(best_loss),
            "pop_size": pop_size,
            "migration_probability": migration_probability,
            "pollination": args.pollination,
            "propagator": args.propagator,
            "version": _version("propulate"),
        }
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
    return 0


def tutorial_propagator(args, limits, rng, rank, pop_size):
    """The propagator of the reference's pso_example.py, cmaes_example.py or nm_example.py
    (Propulate 1.2.2), with those tutorials' defaults."""
    from propulate.propagators import Conditional
    if args.propagator == "pso":
        from propulate.propagators.pso import BasicPSO, InitUniformPSO
        pso = BasicPSO(0.729, 1.49445, 1.49445, rank, limits, rng)
        return Conditional(pop_size, pso, InitUniformPSO(limits, rng=rng, rank=rank))
    if args.propagator == "cmaes":
        from propulate.propagators import BasicCMA, CMAPropagator
        return CMAPropagator(BasicCMA(), limits, rng=rng)
    import numpy as np
    from propulate.propagators.nm import ParallelNelderMead
    # nm_example.py draws its start point from its own generator seeded with seed + 235231.
    start = np.random.default_rng(seed=args.seed + 235231).uniform(
        low=[lo for lo, _ in limits.values()], high=[hi for _, hi in limits.values()])
    return ParallelNelderMead(limits, rng=rng, start=start)


def _version(pkg: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(pkg)
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
