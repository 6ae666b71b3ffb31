#!/usr/bin/env python3
"""Utilization against workers, measured and projected told apart: docs/benchmarks/scale.png.

Measured: every run of benches/utilization.py in benches/scale-data/utilization-*.jsonl (filled
markers, one colour per machine; 15 generations per worker, evaluations of 1 s; a star for a longer run). Projected: the rows
of benches/scale_sim.py's projection, benches/scale-data/projection-h200.jsonl (lines, the genetic
propagator on InfiniBand HDR; one panel per evaluation time).

    python3 benches/plot_scale.py [OUT.png]      # needs matplotlib (e.g. 3.11.2)
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benches" / "scale-data"


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "benchmarks" / "scale.png"
    projected = [r for r in rows(DATA / "projection-h200.jsonl") if r["propagator"] == "ga" and "HDR" in r["network"]]
    measured = {p.stem.removeprefix("utilization-"): rows(p) for p in sorted(DATA.glob("utilization-*.jsonl"))}
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), sharey=True)
    for ax, (eval_s, title) in zip(axes, ((1.0, "evaluations of 1 s"), (60.0, "60 s"), (3600.0, "1 h"))):
        for spread, shared, style, label in ((0.0, False, "-", "projected, equal times"),
                                             (0.5, False, "--", "projected, spread +-50 %"),
                                             (0.5, True, ":", "projected, spread +-50 %, --shared-budget")):
            line = sorted((r["workers"], r["utilization"]) for r in projected
                          if r["eval_s"] == eval_s and r["spread"] == spread and r.get("shared_budget", False) == shared)
            if line:
                ax.plot(*zip(*line), style, color="black", marker="o", markersize=3, label=label)
        if eval_s == 1.0:
            for (machine, runs), colour in zip(measured.items(), ("tab:blue", "tab:orange")):
                for transport, marker in (("mpi", "s"), ("local", "^")):
                    for spread, shared, fill in ((0.0, False, colour), (0.5, False, "white"), (0.5, True, "grey")):
                        pts = [(r["ranks"], r["job_utilization"]) for r in runs if r["transport"] == transport
                               and r.get("spread", 0.0) == spread and r.get("shared_budget", False) == shared
                               and r["long"] == 15]
                        if pts:
                            what = "MPI" if transport == "mpi" else "in-process"
                            extra = "" if not spread else (", spread, shared" if shared else ", spread")
                            ax.scatter(*zip(*pts), marker=marker, s=40, facecolors=fill, edgecolors=colour,
                                       label=f"measured, {machine}, {what}{extra} (15 generations)", zorder=3)
                # Longer runs (a 5-minute one: the start and end weigh less), marked apart.
                for r in runs:
                    if r["long"] != 15:
                        what = "MPI" if r["transport"] == "mpi" else "in-process"
                        ax.scatter([r["ranks"]], [r["job_utilization"]], marker="*", s=90, color=colour, zorder=3,
                                   label=f"measured, {machine}, {what}, islands of {r['island']} ({r['long']} generations)")
        ax.axhline(0.95, color="red", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("utilization (evaluating / the job's time)")
    axes[0].set_ylim(0.2, 1.02)
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7.5, frameon=False)
    fig.suptitle("propulate-rs: utilization measured (2 and 16 cores, one host) and projected (HDR, islands of 64)")
    fig.tight_layout(rect=(0, 0.17, 1, 1))
    fig.savefig(out, dpi=100)
    print(f"plot: {out}")


if __name__ == "__main__":
    main()
