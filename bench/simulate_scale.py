#!/usr/bin/python3
"""A discrete-event model of hvd's negotiation cycle and allreduce at many
ranks, against a coordinator that gathers and broadcasts (Horovod's
controller) and the full mesh hvd negotiated over before.

Each rank runs a program of steps; a step posts its sends, waits for its
receives, then goes on. A message costs its sender and its receiver CPU
time (a fixed cost per message and one per byte: copies, reductions); CPUs
are one per rank, or a pool the ranks share (this machine: 2 cores for 16
namespace hosts). A message between hosts waits for its host's link out,
then the wire's latency, then the receiving host's link in, each link a
FIFO at the link's bandwidth; ranks of one host reach each other in a
local latency. Ranks are numbered host by host, as horovodrun places them.

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
import heapq
import itertools
import json
import math
import os
import statistics
import sys
from collections import defaultdict, deque
from dataclasses import asdict, dataclass, replace
from typing import Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_FILE = os.path.join(HERE, "results", "scale_model.json")

# hvd's choices (runtime/transport/tcp/collective_algorithm.h, the engine's
# eager bound) and a cycle message's size with one cached tensor.
EAGER_BYTES = 16 << 10
DOUBLING_BYTES = 64 << 10
HALVING_BYTES = 4 << 20
MESSAGE_BYTES = 32


@dataclass
class Costs:
    """What a message costs (seconds, seconds per byte)."""
    msg_cpu: float = 5e-6
    byte_cpu: float = 0.2e-9
    latency: float = 20e-6
    local_latency: float = 5e-6
    link_bytes_per_s: float = 2e9
    cores: Optional[int] = None  # None: a core per rank
    # Where ranks outnumber cores, each message costs this much more per
    # rank beyond a core's one (the scheduler's round of waiting ranks).
    crowding: float = 0.0
    # Reducing a byte that came in, beside byte_cpu's copy of it.
    reduce_cpu: float = 0.2e-9
    # Several ranks per host: how many times each rank's shared memory
    # passes over the whole buffer (reduce, copy out), at byte_cpu each.
    shm_passes: float = 2.0
    # As crowding, for each byte (ranks sharing a core share its caches).
    byte_crowding: float = 0.0


# A step: sends (peer, bytes), receives (peer, bytes), and whether what
# comes in is reduced (its bytes cost CPU once more).
Step = Tuple[List[Tuple[int, int]], List[Tuple[int, int]], bool]
Program = List[Step]


def doubling_plan(rank: int, n: int) -> Tuple[int, bool, List[int]]:
    """runtime/transport/tcp/doubling.cc: (fold, extra, partners)."""
    q = 1
    while q * 2 <= n:
        q *= 2
    if rank >= q:
        return rank - q, True, []
    fold = rank + q if rank + q < n else -1
    return fold, False, [rank ^ bit for bit in
                         (1 << k for k in range(int(math.log2(q))))]


def doubling(n: int, size_of_round: Callable[[int], int],
             reduce: bool = True) -> List[Program]:
    """Recursive doubling: round k's frames of size_of_round(k) bytes."""
    programs = []
    for r in range(n):
        fold, extra, partners = doubling_plan(r, n)
        m0 = size_of_round(0)
        if extra:
            programs.append([([(fold, m0)], [], False),
                             ([], [(fold, size_of_round(len(partners)))],
                              False)])
            continue
        prog: Program = []
        if fold >= 0:
            prog.append(([], [(fold, m0)], reduce))
        for k, p in enumerate(partners):
            m = size_of_round(k)
            prog.append(([(p, m)], [(p, m)], reduce))
        if fold >= 0:
            prog.append(([(fold, size_of_round(len(partners)))], [], False))
        programs.append(prog)
    return programs


def halving(n: int, size: int) -> List[Program]:
    """Reduce-scatter by halving, allgather by doubling, after the fold."""
    programs = []
    for r in range(n):
        fold, extra, partners = doubling_plan(r, n)
        if extra:
            programs.append([([(fold, size)], [], False),
                             ([], [(fold, size)], False)])
            continue
        prog: Program = []
        if fold >= 0:
            prog.append(([], [(fold, size)], True))
        block = size
        for p in reversed(partners):
            block //= 2
            prog.append(([(p, block)], [(p, block)], True))
        for p in partners:
            prog.append(([(p, block)], [(p, block)], False))
            block *= 2
        if fold >= 0:
            prog.append(([(fold, size)], [], False))
        programs.append(prog)
    return programs


def ring(n: int, size: int) -> List[Program]:
    block = max(size // n, 1)
    return [[([((r + 1) % n, block)], [((r - 1) % n, block)], s < n - 1)
             for s in range(2 * (n - 1))] for r in range(n)]


def mesh(n: int, m: int) -> List[Program]:
    """Every rank sends its message to every other (an allgather)."""
    return [[([(p, m) for p in range(n) if p != r],
              [(p, m) for p in range(n) if p != r], False)]
            for r in range(n)]


def coordinator(n: int, m: int, answer: int) -> List[Program]:
    """Gather to rank 0, then a binomial broadcast of its answer."""
    programs: List[Program] = [[] for _ in range(n)]
    programs[0].append(([], [(p, m) for p in range(1, n)], False))
    for r in range(1, n):
        programs[r].append(([(0, m)], [], False))
    bit = 1
    while bit < n:
        for r in range(bit):
            if r + bit < n:
                programs[r].append(([(r + bit, answer)], [], False))
                programs[r + bit].append(([], [(r, answer)], False))
        bit *= 2
    return programs


class Sim:
    """Runs programs to their end; returns the time the last rank ends."""

    def __init__(self, costs: Costs, per_host: int):
        self.c = costs
        self.per_host = per_host

    def run(self, programs: List[Program]) -> float:
        c = self.c
        n = len(programs)
        crowd = max(0.0, n / c.cores - 1) if c.cores else 0.0
        self.msg_cpu = c.msg_cpu * (1 + c.crowding * crowd)
        byte_scale = 1 + c.byte_crowding * crowd
        self.byte_cpu = c.byte_cpu * byte_scale
        self.reduce_cpu = c.reduce_cpu * byte_scale
        self.events: List[Tuple[float, int, Callable[[], None]]] = []
        self.seq = itertools.count()
        self.now = 0.0
        self.free_cores = c.cores if c.cores else len(programs)
        self.cpu_queue: deque = deque()
        self.link_free: Dict[Tuple[int, str], float] = defaultdict(float)
        self.mail: Dict[Tuple[int, int], int] = defaultdict(int)
        self.programs = programs
        self.pc = [0] * len(programs)
        self.waiting: List[Optional[set]] = [None] * len(programs)
        self.pending_cpu = [0] * len(programs)
        self.end = 0.0
        for r in range(len(programs)):
            self._start_step(r)
        while self.events:
            t, _, fn = heapq.heappop(self.events)
            self.now = t
            fn()
        return self.end

    def _at(self, t: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self.events, (t, next(self.seq), fn))

    def _cpu(self, seconds: float, then: Callable[[], None]) -> None:
        if self.free_cores > 0:
            self.free_cores -= 1
            self._at(self.now + seconds, lambda: self._cpu_done(then))
        else:
            self.cpu_queue.append((seconds, then))

    def _cpu_done(self, then: Callable[[], None]) -> None:
        self.free_cores += 1
        if self.cpu_queue:
            seconds, nxt = self.cpu_queue.popleft()
            self.free_cores -= 1
            self._at(self.now + seconds, lambda: self._cpu_done(nxt))
        then()

    def _start_step(self, r: int) -> None:
        if self.pc[r] >= len(self.programs[r]):
            self.end = max(self.end, self.now)
            return
        sends, recvs, reduce = self.programs[r][self.pc[r]]
        self.waiting[r] = {p for p, _ in recvs}
        self.pending_cpu[r] = len(sends)
        for p, b in sends:
            cost = self.msg_cpu + b * self.byte_cpu
            self._cpu(cost, lambda p=p, b=b: self._sent(r, p, b))
        for p, b in recvs:
            if self.mail[(p, r)] > 0:
                self.mail[(p, r)] -= 1
                self._take(r, p, b, reduce)
        self._maybe_next(r)

    def _sent(self, r: int, p: int, b: int) -> None:
        self.pending_cpu[r] -= 1
        hr, hp = r // self.per_host, p // self.per_host
        if hr == hp:
            self._at(self.now + self.c.local_latency,
                     lambda: self._arrive(r, p))
        else:
            # The bytes leave while they go: a message takes each link for
            # its serialization, the one in a latency after the one out.
            wire = b / self.c.link_bytes_per_s
            leaves = max(self.now, self.link_free[(hr, "out")])
            self.link_free[(hr, "out")] = leaves + wire
            enters = max(leaves + self.c.latency, self.link_free[(hp, "in")])
            self.link_free[(hp, "in")] = enters + wire
            self._at(enters + wire, lambda: self._arrive(r, p))
        self._maybe_next(r)

    def _arrive(self, src: int, dst: int) -> None:
        w = self.waiting[dst]
        if w is not None and src in w and self.pc[dst] < len(
                self.programs[dst]):
            _, recvs, reduce = self.programs[dst][self.pc[dst]]
            b = next(b for p, b in recvs if p == src)
            self._take(dst, src, b, reduce)
        else:
            self.mail[(src, dst)] += 1

    def _take(self, r: int, p: int, b: int, reduce: bool) -> None:
        self.waiting[r].discard(p)
        self.pending_cpu[r] += 1
        cost = (self.msg_cpu + b * self.byte_cpu +
                (b * self.reduce_cpu if reduce else 0.0))

        def done() -> None:
            self.pending_cpu[r] -= 1
            self._maybe_next(r)
        self._cpu(cost, done)

    def _maybe_next(self, r: int) -> None:
        if self.pending_cpu[r] == 0 and not self.waiting[r]:
            self.waiting[r] = None
            self.pc[r] += 1
            self._start_step(r)


def hvd_data(n: int, size: int) -> List[Program]:
    if size <= DOUBLING_BYTES:
        return doubling(n, lambda k: size)
    if n > 3 and size <= HALVING_BYTES:
        return halving(n, size)
    return ring(n, size)


def hierarchical_data(hosts: int, per_host: int,
                      size: int) -> List[Program]:
    """Several ranks per host (runtime/transport/hierarchical/): each local
    rank allreduces its 1/per_host of the buffer with the ranks of its
    local rank on the other hosts, all at once over the host's link; the
    host's shared memory reduces and copies the rest (a step of its own)."""
    part = max(size // per_host, 4)
    cross = hvd_data(hosts, part)
    programs: List[Program] = []
    for g in range(hosts * per_host):
        h, local = divmod(g, per_host)
        mine = [([(p * per_host + local, b) for p, b in sends],
                 [(p * per_host + local, b) for p, b in recvs], red)
                for sends, recvs, red in cross[h]]
        programs.append(mine)
    return programs


def mpi_data(n: int, size: int) -> List[Program]:
    """OpenMPI's tuned choice, roughly: doubling small, ring large."""
    if size <= DOUBLING_BYTES:
        return doubling(n, lambda k: size)
    return ring(n, size)


def design_negotiation(design: str, n: int) -> List[Program]:
    if design == "hvd":
        return doubling(n, lambda k: MESSAGE_BYTES, reduce=False)
    if design == "coordinator":
        return coordinator(n, MESSAGE_BYTES, MESSAGE_BYTES)
    return mesh(n, MESSAGE_BYTES)


def design_allreduce(sim: Sim, design: str, n: int, size: int) -> float:
    """One allreduce of `size` bytes, negotiation included."""
    if design == "hvd" and size <= EAGER_BYTES:
        # The data rides in the negotiation and merges on the way.
        return sim.run(doubling(n, lambda k: MESSAGE_BYTES + size))
    if design == "mesh" and size <= EAGER_BYTES:
        # An allgather of every rank's data, reduced by each rank.
        return sim.run(mesh(n, MESSAGE_BYTES + size)) + \
            n * size * sim.c.byte_cpu
    negotiate = sim.run(design_negotiation(design, n))
    data = hvd_data if design == "hvd" else mpi_data
    return negotiate + sim.run(data(n, size))


# Past this many ranks the mesh and the ring are taken in closed form (all
# ranks alike, a core each): their n^2 messages are too many to simulate.
DES_LIMIT = 512


def closed_mesh(c: Costs, n: int, per_host: int, m: int) -> float:
    """Each rank's core sends and takes n - 1 messages; each host's link
    carries its ranks' messages to every other host."""
    cpu = 2 * (n - 1) * (c.msg_cpu + m * c.byte_cpu)
    link = per_host * (n - per_host) * m / c.link_bytes_per_s
    return max(cpu, link) + c.latency


def closed_ring(c: Costs, n: int, per_host: int, size: int,
                rings: int = 1) -> float:
    """2(n - 1) steps, each as slow as a block crossing between hosts
    (whose link `rings` rings cross at once)."""
    b = max(size // n, 1)
    hop = c.latency if per_host < n else c.local_latency
    wire = rings * b / c.link_bytes_per_s if per_host < n else 0.0
    send = c.msg_cpu + b * c.byte_cpu
    take = c.msg_cpu + b * c.byte_cpu
    return ((n - 1) * (send + wire + hop + take + b * c.reduce_cpu) +
            (n - 1) * (send + wire + hop + take))


def negotiation_time(c: Costs, design: str, n: int, per_host: int) -> float:
    if design == "mesh" and n > DES_LIMIT:
        return closed_mesh(c, n, per_host, MESSAGE_BYTES)
    return Sim(c, per_host).run(design_negotiation(design, n))


def allreduce_time(c: Costs, design: str, n: int, per_host: int,
                   size: int) -> float:
    sim = Sim(c, per_host)
    large = n > DES_LIMIT
    if design == "hvd" and size <= EAGER_BYTES:
        return sim.run(doubling(n, lambda k: MESSAGE_BYTES + size))
    if design == "mesh" and size <= EAGER_BYTES:
        m = MESSAGE_BYTES + size
        t = closed_mesh(c, n, per_host, m) if large else sim.run(mesh(n, m))
        return t + n * size * c.byte_cpu
    negotiate = negotiation_time(c, design, n, per_host)
    if design == "hvd" and 1 < per_host < n:
        return negotiate + hierarchical_time(c, n // per_host, per_host, size)
    pick = hvd_data if design == "hvd" else mpi_data
    uses_ring = (size > HALVING_BYTES or n <= 3 or design != "hvd") and \
        size > DOUBLING_BYTES
    if large and uses_ring:
        return negotiate + closed_ring(c, n, per_host, size)
    return negotiate + sim.run(pick(n, size))


def hierarchical_time(c: Costs, hosts: int, per_host: int,
                      size: int) -> float:
    """hierarchical_data's time, and the shared memory's two passes over
    the buffer (reduce, then copy out) on each rank."""
    part = max(size // per_host, 4)
    # Every rank's passes, on the cores they share (if fewer).
    ranks = hosts * per_host
    crowd = max(1.0, ranks / c.cores) if c.cores else 1.0
    local = (c.shm_passes * size * c.byte_cpu * crowd *
             (1 + c.byte_crowding * (crowd - 1)))
    rings = (part > HALVING_BYTES or hosts <= 3) and part > DOUBLING_BYTES
    if rings and hosts * per_host > DES_LIMIT:
        return local + closed_ring(c, hosts, 1, part, rings=per_host)
    return local + Sim(c, per_host).run(
        hierarchical_data(hosts, per_host, size))


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
