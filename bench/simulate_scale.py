#!/usr/bin/python3
"""A discrete-event model of hvd's negotiation cycle and allreduce at many
ranks, against a coordinator that gathers and broadcasts (Horovod's
controller) and the full mesh hvd negotiated over before.

The model (bench/scale_model.py): each rank runs a program of steps, a
message costs CPU at both ends and waits for the hosts' links, and CPUs
are one per rank or a pool the ranks share (this machine: 2 cores for 16
namespace hosts). This script fits its costs and runs it at scale.

    simulate_scale.py calibrate RAW... [--cores 2]   fit the costs to
        bench/run_scale.sh's figures (RAW=FILE of it; of several runs, the
        medians) at 4, 8 and 16 hosts
    simulate_scale.py project [--latency-us 25] [--gbps 100] [--per-host 8]
        [--ranks 4096 16384] [--plot FILE.png]    run the fitted model
        (bench/results/scale_model.json) at scale
    simulate_scale.py selftest                    the model's own checks

Lines: BENCH sim.<design>.<ranks>.negotiation (us) and
BENCH sim.<design>.<ranks>.allreduce.<size> (us); calibrate prints each
measured figure beside the model's, and the largest error.
"""
import argparse
import itertools
import json
import math
import os
import statistics
import sys
from collections import defaultdict
from dataclasses import asdict, replace
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale_model import (MESSAGE_BYTES, Costs, Sim, allreduce_time,  # noqa: E402
                         closed_mesh, closed_ring, doubling, doubling_plan,
                         halving, mesh, negotiation_time, ring)

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_FILE = os.path.join(HERE, "results", "scale_model.json")

SIZES = [4, 4096, 65536, 1 << 20, 16 << 20]


def size_name(b: int) -> str:
    if b >= 1 << 20:
        return f"{b >> 20}MiB"
    if b >= 1 << 10:
        return f"{b >> 10}KiB"
    return f"{b}B"


def read_raw(paths: List[str]) -> Dict[Tuple[str, int, int, int], float]:
    """Medians of run_scale.sh's RESULT lines over the files: (who, hosts,
    per host, size) -> seconds."""
    runs: Dict[Tuple[str, int, int, int], List[float]] = defaultdict(list)
    for path in paths:
        with open(path) as f:
            lines = f.read().splitlines()
        for line in lines:
            w = line.split()
            if (len(w) != 4 or w[0] != "RESULT" or w[1].startswith("launch.")
                    or not w[2].isdigit()):
                continue
            who, _, shape = w[1].rpartition(".")
            hosts, per = (int(x) for x in shape.split("x"))
            runs[(who, hosts, per, int(w[2]))].append(float(w[3]))
    return {k: statistics.median(v) for k, v in runs.items()}


def model_of(design: str) -> str:
    # hvd's engine is the model's "hvd"; OpenMPI's allreduce is the
    # coordinator-free data path alone, not modelled here.
    return {"hvd": "hvd"}.get(design, "")


def worst_error(c: Costs, points: List[Tuple[Tuple[str, int, int, int],
                                            float]],
                bound: float = math.inf) -> float:
    """The largest relative error of the model over `points`; stops once
    past `bound`."""
    worst = 0.0
    for (_, hosts, per, size), t in points:
        got = allreduce_time(c, "hvd", hosts * per, per, size)
        worst = max(worst, abs(got - t) / t)
        if worst >= bound:
            break
    return worst


def log_error(c: Costs, points, bound: float = math.inf) -> float:
    """The sum of squared log ratios, model to measured (smooth, so a
    descent on it finds the basin that the largest error's corners hide)."""
    total = 0.0
    for (_, hosts, per, size), t in points:
        got = allreduce_time(c, "hvd", hosts * per, per, size)
        total += math.log(got / t) ** 2
        if total >= bound:
            break
    return total


# What the fit moves, and the steps it tries (factors of each).
FIT_FIELDS = ["msg_cpu", "byte_cpu", "reduce_cpu", "latency",
              "local_latency", "link_bytes_per_s", "crowding", "shm_passes",
              "byte_crowding"]
FIT_STEPS = [0.5, 0.7, 0.85, 0.95, 1.05, 1.15, 1.4, 2.0]


def fit(points, cores: Optional[int]) -> Tuple[float, Costs]:
    """A coarse grid and a descent on the squared log errors (smooth), then
    a descent on the largest error from there (whose surface is all
    corners: started anywhere else it stops short)."""
    best: Optional[Tuple[float, Costs]] = None
    for msg_us, byte_ns, lat_us, gbps, crowding in itertools.product(
            [3, 6, 12], [0.1, 0.25, 0.5], [5, 20], [8, 32], [0.0, 0.1]):
        c = Costs(msg_us * 1e-6, byte_ns * 1e-9, lat_us * 1e-6, 2e-6,
                  gbps * 1e9 / 8, cores, crowding, byte_ns * 1e-9, 2.0)
        worst = log_error(c, points, best[0] if best else math.inf)
        if best is None or worst < best[0]:
            best = (worst, c)
    _, c = descend(points, best[1], log_error)
    return descend(points, c, worst_error)


def descend(points, start: Costs, error) -> Tuple[float, Costs]:
    """Scales each cost in turn while `error` falls."""
    best = (error(start, points), start)
    improved = True
    while improved:
        improved = False
        for field in FIT_FIELDS:
            for step in FIT_STEPS:
                value = getattr(best[1], field) * step
                if field in ("crowding", "byte_crowding") and value == 0.0:
                    value = 0.05 * step
                c = replace(best[1], **{field: value})
                e = error(c, points, best[0])
                if e < best[0] * (1 - 1e-3):
                    best, improved = (e, c), True
    return best


def calibrate(args: argparse.Namespace) -> int:
    measured = read_raw(args.raw)
    points = sorted((k, v) for k, v in measured.items()
                    if k[0] == "hvd" and k[1] in (4, 8, 16))
    if not points:
        print(f"simulate_scale.py: no hvd figures at 4, 8 or 16 hosts in "
              f"{' '.join(args.raw)}", file=sys.stderr)
        return 1
    _, c = fit(points, args.cores)
    worst = worst_error(c, points)
    for (_, hosts, per, size), t in points:
        got = allreduce_time(c, "hvd", hosts * per, per, size)
        print(f"hvd {hosts}x{per} {size_name(size):>6}: measured "
              f"{t * 1e6:10.1f} us, model {got * 1e6:10.1f} us "
              f"({(got - t) / t * 100:+.0f} %)")
    print(f"BENCH sim.calibration.max_error {worst * 100:.1f} %")
    os.makedirs(os.path.dirname(MODEL_FILE), exist_ok=True)
    with open(MODEL_FILE, "w") as f:
        json.dump(asdict(c), f, indent=1)
    print(f"costs: {asdict(c)} -> {MODEL_FILE}")
    return 0


def project(args: argparse.Namespace) -> int:
    if not os.path.exists(MODEL_FILE):
        print(f"simulate_scale.py: no {MODEL_FILE}; run 'calibrate' first",
              file=sys.stderr)
        return 1
    with open(MODEL_FILE) as f:
        fitted = Costs(**json.load(f))
    # At scale: a core per rank, the link and latency asked for; the costs
    # per message and byte as fitted.
    c = replace(fitted, latency=args.latency_us * 1e-6,
                link_bytes_per_s=args.gbps * 1e9 / 8, cores=None,
                crowding=0.0, byte_crowding=0.0)
    rows = []
    for n in args.ranks:
        for design in ("hvd", "coordinator", "mesh"):
            neg = negotiation_time(c, design, n, args.per_host)
            print(f"BENCH sim.{design}.{n}.negotiation {neg * 1e6:.1f} us")
            row = {"design": design, "ranks": n, "negotiation": neg}
            for size in args.sizes:
                t = allreduce_time(c, design, n, args.per_host, size)
                row[size] = t
                print(f"BENCH sim.{design}.{n}.allreduce.{size_name(size)} "
                      f"{t * 1e6:.1f} us")
            rows.append(row)
            sys.stdout.flush()
    if args.plot:
        draw(rows, args.sizes, args.plot)
    return 0


def draw(rows: List[dict], sizes: List[int], out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(sizes) + 1, figsize=(3.6 * (len(sizes) + 1),
                                                         3.6))
    keys = ["negotiation"] + sizes
    for ax, key in zip(axes, keys):
        for design in ("hvd", "coordinator", "mesh"):
            pts = sorted((r["ranks"], r[key] * 1e6) for r in rows
                         if r["design"] == design)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label=design)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title("negotiation" if key == "negotiation"
                     else f"allreduce {size_name(key)}")
        ax.set_xlabel("ranks")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("µs")
    axes[-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def selftest() -> int:
    """The plan is doubling.cc's; every program ends (no receive without
    its send); the closed forms agree with the simulation where both run;
    a slower link or a costlier message never makes anything faster."""
    failures = []
    checks = [0]

    def check(ok: bool, what: str) -> None:
        checks[0] += 1
        if not ok:
            failures.append(what)
    # DoublingTest.PlansAsATable's rows.
    for rank, n, want in [(0, 1, (-1, False, [])), (2, 3, (0, True, [])),
                          (0, 3, (2, False, [1])), (3, 8, (-1, False, [2, 1, 7])),
                          (1, 6, (5, False, [0, 3])), (6, 12, (-1, False, [7, 4, 2])),
                          (11, 12, (3, True, []))]:
        check(doubling_plan(rank, n) == want, f"plan of {rank} of {n}")
    c = Costs(cores=None)
    for n in range(2, 20):
        for design in ("hvd", "coordinator", "mesh"):
            t = negotiation_time(c, design, n, 1)
            check(math.isfinite(t) and t > 0, f"{design} at {n} ends")
        for algo in (doubling(n, lambda k: 1000), halving(n, 1 << 16),
                     ring(n, 1 << 16)):
            check(Sim(c, 2).run(algo) > 0, f"an algorithm at {n} ends")
    for n, per in ((64, 8), (256, 8)):
        des = Sim(c, per).run(mesh(n, MESSAGE_BYTES))
        closed = closed_mesh(c, n, per, MESSAGE_BYTES)
        check(abs(des - closed) / des < 0.1, f"mesh at {n}: {des} vs {closed}")
    for n in (16, 64):
        des = Sim(c, 1).run(ring(n, 1 << 20))
        closed = closed_ring(c, n, 1, 1 << 20)
        check(abs(des - closed) / des < 0.1, f"ring at {n}: {des} vs {closed}")
    slow = Costs(msg_cpu=2 * c.msg_cpu, latency=2 * c.latency, cores=None)
    for design in ("hvd", "coordinator", "mesh"):
        check(negotiation_time(slow, design, 32, 4) >=
              negotiation_time(c, design, 32, 4), f"{design} slower costs")
    for f in failures:
        print(f"simulate_scale.py selftest: {f}", file=sys.stderr)
    print(f"{checks[0] - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cal = sub.add_parser("calibrate")
    cal.add_argument("raw", nargs="+",
                     help="RAW=FILE of bench/run_scale.sh (several: the "
                          "median of each figure over them)")
    cal.add_argument("--cores", type=int, default=os.cpu_count())
    pro = sub.add_parser("project")
    pro.add_argument("--latency-us", type=float, default=25.0)
    pro.add_argument("--gbps", type=float, default=100.0)
    pro.add_argument("--per-host", type=int, default=8)
    pro.add_argument("--ranks", type=int, nargs="+", default=[4096, 16384])
    pro.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    pro.add_argument("--plot")
    sub.add_parser("selftest")
    args = parser.parse_args(argv[1:])
    if args.command == "selftest":
        return selftest()
    return calibrate(args) if args.command == "calibrate" else project(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
