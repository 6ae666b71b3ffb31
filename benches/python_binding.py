"""What the Python binding costs per evaluation (benches/python.sh): one process, one worker,
the genetic propagator, no checkpoint, N evaluations of the 2-D sphere, once with the loss in
Python (propulate_rs.optimize) and once as the engine's own Rust function (propulate-rs
--function sphere), alternating, REPEATS times. Both times are the engine's (`wall_s` of the run,
start-up excluded).

    python benches/python_binding.py BIN [N] [REPEATS]

Prints one JSON line per run and a last one with the medians: microseconds per evaluation with
the Python loss, with the Rust function, their difference, and the Python loss alone (timeit).
"""

import json
import statistics
import subprocess
import sys
import tempfile
import timeit

import propulate_rs as pr


def sphere(params):
    return params["x0"] ** 2 + params["x1"] ** 2


def python_run(n):
    result = pr.optimize(sphere, {"x0": (-5.12, 5.12), "x1": (-5.12, 5.12)}, generations=n, propagator="ga",
                         no_checkpoint=True, quiet=True)
    return result.wall_s


def rust_run(binary, n):
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([binary, "--function", "sphere", "--generations", str(n), "--propagator", "ga",
                        "--no-checkpoint", "--quiet", "--out", out], check=True, capture_output=True)
        return json.load(open(f"{out}/best.json"))["wall_s"]


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    py, rs = [], []
    for i in range(repeats):
        py.append(python_run(n) / n * 1e6)
        rs.append(rust_run(binary, n) / n * 1e6)
        print(json.dumps({"repeat": i, "python_us": py[-1], "rust_us": rs[-1]}), flush=True)
    params = {"x0": 0.5, "x1": -0.25}
    alone = min(timeit.repeat(lambda: sphere(params), number=100000, repeat=5)) / 100000 * 1e6
    print(json.dumps({"evaluations": n, "repeats": repeats, "python_us": statistics.median(py),
                      "rust_us": statistics.median(rs),
                      "binding_us": statistics.median(p - r for p, r in zip(py, rs)),
                      "python_loss_alone_us": alone}))


if __name__ == "__main__":
    main()
