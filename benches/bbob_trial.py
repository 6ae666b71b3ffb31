"""One evaluation of a BBOB function for propulate-rs's command trials (benches/bbob.sh).

    python bbob_trial.py FID INSTANCE DIM --x0=... --x1=... ...

Prints `propulate: loss=<f(x) - f_opt>` (the precision reached: 0 at the optimum). ioh is imported
at the top, so that `--preload ioh` pays its import once per rank.
"""
import sys

import ioh


def main() -> None:
    fid, instance, dim = (int(a) for a in sys.argv[1:4])
    values = {}
    for arg in sys.argv[4:]:
        name, _, value = arg.removeprefix("--").partition("=")
        values[name] = float(value)
    x = [values[f"x{i}"] for i in range(dim)]
    problem = ioh.get_problem(fid, instance=instance, dimension=dim)
    print(f"propulate: loss={problem(x) - problem.optimum.y!r}", flush=True)


if __name__ == "__main__":
    main()
