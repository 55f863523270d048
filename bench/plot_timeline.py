#!/usr/bin/env python3
"""A picture of a run, for people who would rather look than read.

    plot_timeline.py TIMELINE.json OUT.png   (HOROVOD_TIMELINE's file)
    plot_timeline.py METRICS.txt OUT.png     (a scrape of --metrics-port)

From a timeline: one band per rank over time, coloured by what the rank
was doing: computing (no tensor of its submitted), waiting (its tensor
submitted, some other rank's not yet: the negotiation), or communicating
(the collective running). From metrics: one bar per rank splitting its
time between waiting on allreduces and the rest (computing).

Runs on Debian's python3-matplotlib (no display needed).
"""

import json
import sys
from typing import Dict, List, Tuple

Interval = Tuple[float, float]


def merge(intervals: List[Interval]) -> List[Interval]:
    """The union of `intervals`, sorted, non-overlapping."""
    out: List[Interval] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def subtract(a: List[Interval], b: List[Interval]) -> List[Interval]:
    """Parts of the (merged) intervals `a` outside the (merged) `b`."""
    out: List[Interval] = []
    for start, end in a:
        cur = start
        for bs, be in b:
            if be <= cur or bs >= end:
                continue
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
        if cur < end:
            out.append((cur, end))
    return out


def bands(events: List[dict]) -> Tuple[Dict[int, Dict[str, List[Interval]]],
                                       Interval]:
    """Per rank, its wait and communicate intervals (seconds) and the run's
    span. A tensor's NEGOTIATE phase holds one instant per rank (when that
    rank submitted it); the rank waits from then until the collective
    starts, and every rank communicates while it runs."""
    by_pid: Dict[int, List[dict]] = {}
    for e in events:
        if "ts" in e:
            by_pid.setdefault(e["pid"], []).append(e)
    waits: Dict[int, List[Interval]] = {}
    comm: List[Interval] = []
    lo, hi = float("inf"), float("-inf")
    for evs in by_pid.values():
        evs.sort(key=lambda e: e["ts"])
        stack: List[Tuple[str, float]] = []
        ready: Dict[int, float] = {}
        for e in evs:
            t = e["ts"] / 1e6
            lo, hi = min(lo, t), max(hi, t)
            if e["ph"] == "B":
                stack.append((e["name"], t))
            elif e["ph"] == "i" and e["name"].isdigit():
                ready[int(e["name"])] = t
            elif e["ph"] == "E" and stack:
                name, start = stack.pop()
                if name.startswith("NEGOTIATE"):
                    for rank, t_ready in ready.items():
                        waits.setdefault(rank, []).append((t_ready, t))
                    ready = {}
                elif not stack:  # an outer phase: the collective itself
                    comm.append((start, t))
    comm = merge(comm)
    out: Dict[int, Dict[str, List[Interval]]] = {}
    for rank, w in waits.items():
        out[rank] = {"wait": subtract(merge(w), comm), "communicate": comm}
    return out, (lo, hi)


def shares(per_rank: Dict[int, Dict[str, List[Interval]]],
           span: Interval) -> Dict[int, Dict[str, float]]:
    """Per rank, the share of the span spent computing, waiting and
    communicating (they add up to 1)."""
    total = max(span[1] - span[0], 1e-12)
    out = {}
    for rank, b in per_rank.items():
        wait = sum(e - s for s, e in b["wait"]) / total
        comm = sum(e - s for s, e in b["communicate"]) / total
        out[rank] = {"compute": max(0.0, 1 - wait - comm), "wait": wait,
                     "communicate": comm}
    return out


def metric_shares(text: str) -> Dict[int, Dict[str, float]]:
    """Per rank, from a /metrics scrape: the share of its step time spent
    waiting on allreduces, and the rest."""
    steps: Dict[int, float] = {}
    busy: Dict[int, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or "rank=\"" not in line:
            continue
        name = line.split("{", 1)[0]
        rank = int(line.split("rank=\"", 1)[1].split("\"", 1)[0])
        value = float(line.rsplit(" ", 1)[1])
        if name == "hvd_step_seconds_sum":
            steps[rank] = value
        elif name == "hvd_allreduce_busy_seconds_total":
            busy[rank] = value
    out = {}
    for rank, total in steps.items():
        wait = min(1.0, busy.get(rank, 0.0) / total) if total > 0 else 0.0
        out[rank] = {"compute": 1 - wait, "wait": wait, "communicate": 0.0}
    return out


COLOURS = {"compute": "#4c9a2a", "wait": "#e0a020", "communicate": "#3060c0"}


def main(argv: List[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        print("usage: plot_timeline.py TIMELINE.json|METRICS.txt OUT.png",
              file=sys.stderr)
        return 2
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    src, png = argv[1], argv[2]
    with open(src) as f:
        text = f.read()
    fig, ax = plt.subplots(figsize=(10, 3))
    if text.lstrip().startswith(("[", "{")):
        data = json.loads(text)
        events = data["traceEvents"] if isinstance(data, dict) else data
        per_rank, span = bands(events)
        if not per_rank:
            print("plot_timeline.py: no collective in " + src, file=sys.stderr)
            return 1
        for rank in sorted(per_rank):
            b = per_rank[rank]
            ax.broken_barh([(span[0], span[1] - span[0])], (rank - 0.4, 0.8),
                           color=COLOURS["compute"])
            for kind in ("wait", "communicate"):
                ax.broken_barh([(s, e - s) for s, e in b[kind]],
                               (rank - 0.4, 0.8), color=COLOURS[kind])
        ax.set_xlim(span[0], span[1])
        ax.set_xlabel("seconds")
        summary = shares(per_rank, span)
    else:
        summary = metric_shares(text)
        if not summary:
            print("plot_timeline.py: no step metrics in " + src,
                  file=sys.stderr)
            return 1
        for rank, s in sorted(summary.items()):
            ax.barh(rank, s["compute"], color=COLOURS["compute"])
            ax.barh(rank, s["wait"], left=s["compute"], color=COLOURS["wait"])
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of step time")
    ax.set_ylabel("rank")
    ax.set_yticks(sorted(summary))
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()],
              loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    for rank, s in sorted(summary.items()):
        print("rank %d: compute %.0f %%, wait %.0f %%, communicate %.0f %%" %
              (rank, 100 * s["compute"], 100 * s["wait"],
               100 * s["communicate"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
