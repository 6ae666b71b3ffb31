"""One evaluation of a BBOB function for propulate-rs's command trials (benches/bbob.sh).

    python bbob_trial.py FID INSTANCE DIM --x0=... --x1=... ...

Prints `propulate: loss=<f(x) - f_opt>` (the precision reached: 0 at the optimum). ioh is imported
at the top, so that `--preload ioh` pays its import once per rank.

BBOB_EVAL_SECONDS=T makes each evaluation last between 0.5 T and 1.5 T (spread by the point, so
that workers fall out of step as trainings of different lengths do): with instant evaluations every
worker breeds at the same moment and none sees the others' children, which a search whose
evaluations are trainings never meets.
"""
import os
import sys
import time
import zlib

import ioh


def main() -> None:
    fid, instance, dim = (int(a) for a in sys.argv[1:4])
    values = {}
    for arg in sys.argv[4:]:
        name, _, value = arg.removeprefix("--").partition("=")
        values[name] = float(value)
    x = [values[f"x{i}"] for i in range(dim)]
    problem = ioh.get_problem(fid, instance=instance, dimension=dim)
    seconds = float(os.environ.get("BBOB_EVAL_SECONDS", "0"))
    if seconds > 0:
        spread = zlib.crc32(repr(x).encode()) / 2**32
        time.sleep(seconds * (0.5 + spread))
    print(f"propulate: loss={problem(x) - problem.optimum.y!r}", flush=True)


if __name__ == "__main__":
    main()
