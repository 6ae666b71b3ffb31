"""Summary of benches/pbt.sh: the best validation loss each method reached by wall time.

    python benches/summarize_pbt.py WORK SEED...

Reads WORK/METHOD-sSEED/ (start: the Unix time the run was started; propulate-rs's trials.jsonl,
Ray's evaluations.jsonl), prints per seed a table and the two comparisons of issue 34's goals, and
draws WORK/pbt.png (best loss by wall time, one panel per seed).
"""

import datetime
import json
import math
import re
import sys
from pathlib import Path

METHODS = ["propulate-pbt", "propulate-pb2", "propulate-default", "ray-pbt"]
# propulate-rs's two ways to explore, each held against the default search and Ray Tune's PBT.
OURS = {"propulate-pbt": "PBT", "propulate-pb2": "PB2"}


def unix_time(rfc3339: str) -> float:
    # chrono writes nanoseconds; Python's parser takes at most microseconds.
    return datetime.datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", rfc3339)).timestamp()


def evaluations(run: Path):
    """(seconds since the run's start when the evaluation ended, its loss), in time order."""
    start = float((run / "start").read_text())
    points = []
    if (run / "trials.jsonl").exists():
        for line in (run / "trials.jsonl").read_text().splitlines():
            t = json.loads(line)
            if t["loss"] is not None and math.isfinite(t["loss"]):
                points.append((unix_time(t["start"]) + t["duration_s"] - start, t["loss"]))
    else:
        for line in (run / "evaluations.jsonl").read_text().splitlines():
            e = json.loads(line)
            points.append((e["end"] - start, e["loss"]))
    return sorted(points)


def best_by_time(points):
    """The best loss so far after each evaluation: [(seconds, best)]."""
    curve, best = [], math.inf
    for t, loss in points:
        best = min(best, loss)
        curve.append((t, best))
    return curve


def best_at(curve, t):
    return min((b for s, b in curve if s <= t), default=math.inf)


def main():
    work, seeds = Path(sys.argv[1]), sys.argv[2:]
    runs = {}
    for seed in seeds:
        for m in METHODS:
            run = work / f"{m}-s{seed}"
            if (run / "done").exists():
                wall = float((run / "end").read_text()) - float((run / "start").read_text())
                runs[m, seed] = (wall, best_by_time(evaluations(run)))

    reached_half, beat_ray = {m: 0 for m in OURS}, {m: 0 for m in OURS}
    for seed in seeds:
        print(f"seed {seed}")
        print(f"  {'method':<18} {'wall s':>7} {'evaluations':>11} {'best loss':>10}")
        for m in METHODS:
            if (m, seed) in runs:
                wall, curve = runs[m, seed]
                print(f"  {m:<18} {wall:>7.0f} {len(curve):>11} {curve[-1][1] if curve else math.nan:>10.4f}")
        for ours, name in OURS.items():
            if (ours, seed) in runs and ("propulate-default", seed) in runs:
                default_wall, default_curve = runs["propulate-default", seed]
                target = default_curve[-1][1]
                reach = next((t for t, b in runs[ours, seed][1] if b <= target), None)
                if reach is None:
                    print(f"  {name} never reached the default search's final best {target:.4f}")
                else:
                    share = reach / default_wall
                    reached_half[ours] += share <= 0.5
                    print(f"  {name} reached the default search's final best {target:.4f} after {reach:.0f} s: "
                          f"{share:.2f} of the default's {default_wall:.0f} s")
            if (ours, seed) in runs and ("ray-pbt", seed) in runs:
                t = min(runs[ours, seed][0], runs["ray-pbt", seed][0])
                mine, ray = best_at(runs[ours, seed][1], t), best_at(runs["ray-pbt", seed][1], t)
                beat_ray[ours] += mine <= ray
                print(f"  at {t:.0f} s (the first of the two to end): propulate-rs {name} {mine:.4f}, Ray Tune PBT {ray:.4f}")
    for ours, name in OURS.items():
        if not any((ours, seed) in runs for seed in seeds):
            continue
        print(f"{name} reached the default's final best within half its wall time on {reached_half[ours]} of {len(seeds)} seeds")
        print(f"{name}'s best at equal wall time was at most Ray Tune PBT's on {beat_ray[ours]} of {len(seeds)} seeds")
    plot(work, seeds, runs)


def plot(work, seeds, runs):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(seeds), figsize=(4.2 * len(seeds), 3.6), sharey=True, squeeze=False)
    styles = {"propulate-pbt": "C0", "propulate-pb2": "C2", "propulate-default": "C7", "ray-pbt": "C3"}
    for ax, seed in zip(axes[0], seeds):
        for m in METHODS:
            if (m, seed) in runs:
                wall, curve = runs[m, seed]
                if curve:
                    xs = [0.0] + [t for t, _ in curve] + [wall]
                    ys = [curve[0][1]] + [b for _, b in curve] + [curve[-1][1]]
                    ax.step(xs[1:], ys[1:], where="post", color=styles[m], label=m)
                    ax.plot([wall], [curve[-1][1]], "|", color=styles[m], markersize=10)
        ax.set_title(f"seed {seed}")
        ax.set_xlabel("wall time (s)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("best validation loss")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(work / "pbt.png", dpi=110)
    print(f"plot: {work / 'pbt.png'}")


if __name__ == "__main__":
    main()
