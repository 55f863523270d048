#!/usr/bin/python3
"""Draws run_allreduce.sh's sweep: bus bandwidth against message size for
each contender, one core's memcpy as the reference line.

    plot_allreduce.py TABLE OUT.png NP

TABLE holds lines "WHO BYTES SECONDS" (the medians run_allreduce.sh
computes).
"""
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv: list) -> int:
    if len(argv) != 4:
        print("usage: plot_allreduce.py TABLE OUT.png NP", file=sys.stderr)
        return 2
    table, out, np = argv[1], argv[2], int(argv[3])
    series = defaultdict(list)
    with open(table) as f:
        for line in f:
            who, size, seconds = line.split()
            if size in ("fusion", "pieces") or ".np" in who:
                continue
            series[who].append((int(size), float(seconds)))
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for who, points in sorted(series.items()):
        points.sort()
        sizes = [b for b, _ in points]
        if who == "memcpy":
            gbps = [b / t / 1e9 for b, t in points]
            ax.plot(sizes, gbps, "k--", label="memcpy (one core)")
            continue
        busbw = [b / t * 2 * (np - 1) / np / 1e9 for b, t in points]
        ax.plot(sizes, busbw, marker="o", label=who)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes, fp32)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"allreduce, {np} ranks on one host")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
