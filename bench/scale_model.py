"""The model behind simulate_scale.py: a rank runs a program of steps;
a step posts its sends, waits for its receives, then goes on. A message
costs its sender and its receiver CPU time (a fixed cost per message and
one per byte: copies, reductions); CPUs are one per rank, or a pool the
ranks share. A message between hosts waits for its host's link out, then
the wire's latency, then the receiving host's link in, each link a FIFO at
the link's bandwidth; ranks of one host reach each other in a local
latency. Ranks are numbered host by host, as horovodrun places them.

The programs: hvd's (doubling negotiation; doubling, halving, ring or
hierarchical data), a coordinator's (Horovod's controller), the full mesh,
and MPI's; past DES_LIMIT ranks the mesh and the ring in closed form.
"""
import heapq
import itertools
import math
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

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
