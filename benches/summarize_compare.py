#!/usr/bin/env python3
"""Turn the results.jsonl written by benches/compare_reference.sh into a markdown report.

Usage: python3 benches/summarize_compare.py bench-results/latest/results.jsonl \
           [--throughput-generations 1000] [--big-generations 10000] [--quality-generations 256]

Standard library only (runs with the system python3, not the reference venv).
Each input line is one run: {"impl": "reference"|"ours", "phase": "throughput"|"quality",
"function", "ranks", "islands", "generations", "seed", "evaluations", "wall_s", "evals_per_s",
"best_loss", "status": "ok"|"failed", ...}.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict

IMPLS = ("reference", "ours")


def fmt_num(x, digits=4) -> str:
    if x is None:
        return "—"
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 1e5 or ax < 1e-3:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def fmt_ratio(x) -> str:
    if x is None:
        return "—"
    return f"{x:.3g}×"


def load(path: str) -> list[dict]:
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def throughput_section(rows, g_small, g_big) -> list[str]:
    tp = [r for r in rows if r.get("phase") == "throughput"]
    if not tp:
        return []
    out = []
    ranks = next((r["ranks"] for r in tp if "ranks" in r), "?")
    islands = next((r["islands"] for r in tp if "islands" in r), "?")
    fn = next((r["function"] for r in tp), "sphere")
    out.append(f"### Throughput: {fn}, {ranks} ranks, {islands} islands, seed 0")
    out.append("")
    out.append("| impl | generations / worker | evaluations | wall s | evals/s | best loss | load avg before |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")

    def key(r):
        return (IMPLS.index(r["impl"]) if r["impl"] in IMPLS else 9, r.get("generations", 0))

    by = {}
    for r in sorted(tp, key=key):
        if r.get("status") != "ok":
            out.append(f"| {r['impl']} | {r.get('generations')} | FAILED (rc={r.get('rc')}) | | | | |")
            continue
        by[(r["impl"], r["generations"])] = r
        out.append(
            f"| {r['impl']} | {r['generations']} | {r['evaluations']} | {r['wall_s']:.3f} | "
            f"{r['evals_per_s']:.1f} | {fmt_num(r['best_loss'])} | {fmt_num(r.get('loadavg_before'), 3)} |"
        )
    out.append("")
    ref, ours, ours_big = by.get(("reference", g_small)), by.get(("ours", g_small)), by.get(("ours", g_big))
    if ref and ours:
        out.append(
            f"- ours vs reference, evals/s at G={g_small}: **{fmt_ratio(ours['evals_per_s'] / ref['evals_per_s'])}** "
            f"({ours['evals_per_s']:.1f} vs {ref['evals_per_s']:.1f})"
        )
    if ours and ours_big:
        out.append(
            f"- ours, evals/s at G={g_big} vs G={g_small}: **{fmt_ratio(ours_big['evals_per_s'] / ours['evals_per_s'])}** "
            f"(1× = throughput does not drop as the population grows)"
        )
    out.append(
        "- wall s covers the optimization only (no MPI start-up or imports); the machine is shared, "
        "so check the load column (1-minute load average just before the run; the runs use "
        f"{ranks} ranks themselves) before trusting a number"
    )
    out.append("")
    return out


def quality_section(rows, g_quality) -> list[str]:
    q = [r for r in rows if r.get("phase") == "quality"]
    if not q:
        return []
    losses = defaultdict(lambda: defaultdict(list))  # fn -> impl -> [(seed, loss)]
    failed = defaultdict(lambda: defaultdict(int))
    order = []
    seeds = sorted({r.get("seed") for r in q})
    for r in q:
        fn = r["function"]
        if fn not in order:
            order.append(fn)
        if r.get("status") == "ok" and r.get("best_loss") is not None:
            losses[fn][r["impl"]].append((r["seed"], r["best_loss"]))
        else:
            failed[fn][r["impl"]] += 1
    ranks = next((r["ranks"] for r in q if "ranks" in r), "?")
    islands = next((r["islands"] for r in q if "islands" in r), "?")
    out = [
        f"### Quality: median best loss, {ranks} ranks × {g_quality} generations, {islands} islands, "
        f"seeds {' '.join(str(s) for s in seeds)} (lower is better)",
        "",
        "| function | reference median | ours median | ours / reference | lower median | reference per seed | ours per seed |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    wins = defaultdict(int)
    for fn in order:
        med = {}
        per_seed = {}
        for impl in IMPLS:
            vals = sorted(losses[fn][impl])
            med[impl] = statistics.median([v for _, v in vals]) if vals else None
            s = ", ".join(fmt_num(v, 3) for _, v in vals)
            if failed[fn][impl]:
                s += (", " if s else "") + f"{failed[fn][impl]} failed"
            per_seed[impl] = s or "—"
        r, o = med["reference"], med["ours"]
        ratio = o / r if (r is not None and o is not None and r > 0 and o >= 0) else None
        if r is None or o is None:
            lower = "—"
        elif math.isclose(r, o, rel_tol=1e-9, abs_tol=1e-12):
            lower = "tie"
        else:
            lower = "ours" if o < r else "reference"
        wins[lower] += 1
        out.append(
            f"| {fn} | {fmt_num(r)} | {fmt_num(o)} | {fmt_ratio(ratio)} | {lower} | "
            f"{per_seed['reference']} | {per_seed['ours']} |"
        )
    out.append("")
    out.append(
        f"- lower median: ours {wins['ours']}, reference {wins['reference']}, tie {wins['tie']}"
        + (f", incomplete {wins['—']}" if wins["—"] else "")
    )
    out.append(
        "- caveats: best losses of an asynchronous run are not reproducible even with a fixed seed "
        "(evaluation order depends on timing); quartic is noisy by design; step's minimum is −25, so "
        "the ratio column is left empty there."
    )
    out.append("")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--throughput-generations", type=int, default=1000)
    ap.add_argument("--big-generations", type=int, default=10000)
    ap.add_argument("--quality-generations", type=int, default=256)
    a = ap.parse_args()
    rows = load(a.results)
    ok = [r for r in rows if r.get("status") == "ok"]
    ref = next((r for r in ok if r["impl"] == "reference"), None)
    setup = next((r for r in ok), {})
    lines = ["## propulate-rs vs Propulate (Python reference)", ""]
    facts = []
    if ref:
        facts.append(f"reference: Propulate {ref.get('version', '?')}")
    if setup:
        facts.append(
            f"pop size {setup.get('pop_size', '2 × ranks')}, migration probability "
            f"{setup.get('migration_probability', '0.9')}, "
            f"{'pollination' if setup.get('pollination') else 'real migration'}, "
            "crossover 0.7 / mutation 0.4 / random init 0.1 / sigma 0.05"
        )
    failed = [r for r in rows if r.get("status") != "ok"]
    if failed:
        facts.append(f"**{len(failed)} run(s) failed**: see the `log` paths in results.jsonl")
    lines += [f"- {f}" for f in facts] + [""]
    lines += throughput_section(rows, a.throughput_generations, a.big_generations)
    lines += quality_section(rows, a.quality_generations)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
