#!/usr/bin/python3
"""Draws run_multihost.sh's sweep: one panel per layout (hosts x ranks per
host) and link rate, bus bandwidth against message size for each
contender, with the shaped rate and what plain TCP carried both ways as
reference lines.

    plot_multihost.py TABLE OUT.png

TABLE holds the medians run_multihost.sh computes: "WHO.HxR.RATEg BYTES
SECONDS", "tcp.RATEg.both_ways 0 BYTES_PER_S", "link.RATEg BYTES_PER_S".
"""
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(table: str):
    series = defaultdict(lambda: defaultdict(list))
    link, tcp = {}, {}
    with open(table) as f:
        for line in f:
            parts = line.split()
            name = parts[0]
            if name.startswith("train."):
                continue
            if name.startswith("link."):
                link[name.split(".")[1]] = float(parts[1]) / 1e9
            elif name.startswith("tcp."):
                if name.endswith(".both_ways"):
                    tcp[name.split(".")[1]] = float(parts[2]) / 1e9
            else:
                who, layout, rate = name.split(".")
                hosts, ranks = (int(v) for v in layout.split("x"))
                n = hosts * ranks
                size, seconds = int(parts[1]), float(parts[2])
                busbw = size / seconds * 2 * (n - 1) / n / 1e9
                series[(layout, rate)][who].append((size, busbw))
    return series, link, tcp


def main(argv: list) -> int:
    if len(argv) != 3:
        print("usage: plot_multihost.py TABLE OUT.png", file=sys.stderr)
        return 2
    series, link, tcp = read(argv[1])
    panels = sorted(series)
    if not panels:
        print("plot_multihost.py: nothing to draw", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 4 * len(panels)),
                             squeeze=False)
    for ax, (layout, rate) in zip(axes[:, 0], panels):
        for who, points in sorted(series[(layout, rate)].items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points],
                    marker="o", label=who)
        if rate in link:
            ax.axhline(link[rate], color="gray", linestyle="--",
                       label="shaped link")
        if rate in tcp:
            ax.axhline(tcp[rate], color="black", linestyle=":",
                       label="TCP, one stream each way")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_ylabel("busbw (GB/s)")
        hosts, ranks = layout.split("x")
        ax.set_title(f"{hosts} hosts x {ranks} ranks, {rate.rstrip('g')} "
                     "Gbit/s" if rate != "0g" else
                     f"{hosts} hosts x {ranks} ranks, unshaped")
        ax.legend(fontsize="small")
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
