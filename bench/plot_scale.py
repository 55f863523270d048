#!/usr/bin/python3
"""Draws bench/run_scale.sh's medians: time per allreduce against hosts, a
panel per size, a line per contender and ranks per host.

    plot_scale.py TABLE OUT.png

TABLE has lines "WHO.HxR SIZE SECONDS" (run_scale.sh's medians).
"""
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path: str) -> dict:
    """{size: {(who, ranks per host): [(hosts, us)]}}"""
    series: dict = defaultdict(lambda: defaultdict(list))
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 3 or parts[0].startswith("launch."):
                continue
            label, size, seconds = parts[0], int(parts[1]), float(parts[2])
            who, _, shape = label.rpartition(".")
            hosts, ranks = (int(x) for x in shape.split("x"))
            series[size][(who, ranks)].append((hosts, seconds * 1e6))
    return series


def size_name(b: int) -> str:
    if b >= 1 << 20:
        return f"{b >> 20} MiB"
    if b >= 1 << 10:
        return f"{b >> 10} KiB"
    return f"{b} B"


def main(argv: list) -> int:
    if len(argv) != 3:
        print("usage: plot_scale.py TABLE OUT.png", file=sys.stderr)
        return 2
    series = read(argv[1])
    if not series:
        print(f"plot_scale.py: no figures in {argv[1]}", file=sys.stderr)
        return 1
    sizes = sorted(series)
    fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.8),
                             squeeze=False)
    for ax, size in zip(axes[0], sizes):
        for (who, ranks), points in sorted(series[size].items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points],
                    marker="o", linestyle="-" if ranks == 1 else "--",
                    label=f"{who} ({ranks}/host)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(size_name(size))
        ax.set_xlabel("hosts")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("µs per allreduce")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
