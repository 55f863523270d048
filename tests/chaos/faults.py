"""The faults the chaos runs inject, and the jobs they land in.

A run picks its first fault's kind uniformly, then a scenario (a job on a
store) that kind can land in; a second fault, when drawn, is one of the
kinds that scenario takes.

Scenarios:
- local: ``horovodrun -np 2 hvd_hello`` on this machine, the daemon on a
  state directory (on a small tmpfs when the harness may mount one);
- etcd: the same job, the daemon on a three-member etcd cluster;
- hosts: the same job on two network-namespace hosts over SSH, the daemon
  on the bridge's address;
- elastic: an elastic job on loopback hosts whose discovery adds or
  removes a host while the faults land (the elastic change and the
  re-init after it).
"""

import os
import random
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

SCENARIOS = ("local", "etcd", "hosts", "elastic")

# Each kind: the scenarios it can land in, with their weights.
KINDS: Dict[str, Dict[str, int]] = {
    "daemon-kill": {"local": 1, "etcd": 3, "hosts": 1, "elastic": 1},
    "daemon-term": {"local": 1, "etcd": 1, "elastic": 1},
    "worker-stop": {"local": 1, "etcd": 1, "hosts": 1, "elastic": 1},
    "worker-kill": {"local": 1, "etcd": 1, "hosts": 1, "elastic": 2},
    "launcher-kill": {"local": 1, "etcd": 1, "hosts": 1, "elastic": 1},
    "remote-exec-kill": {"hosts": 1},
    "link-cut": {"hosts": 1},
    "disk-full": {"local": 1},
    "etcd-member-kill": {"etcd": 1},
}
TWO_FAULTS_P = 0.3


@dataclass
class Fault:
    kind: str
    at_s: float  # from the job's start, as drawn
    at_end: bool = False  # instead: once the job's last steps show
    phase: str = ""  # the job's phase when it came
    hit: bool = False  # the job still ran then
    note: str = ""  # what it did (its victim, its pause)


def draw(rng: random.Random, kinds: List[str],
         scenarios: List[str]) -> Tuple[str, List[Fault]]:
    """The run's scenario and its faults' kinds (their moments are the
    caller's to draw)."""
    first = rng.choice(kinds)
    options = [(s, w) for s, w in KINDS[first].items() if s in scenarios]
    scenario = rng.choices([s for s, _ in options],
                           [w for _, w in options])[0]
    faults = [Fault(first, 0.0)]
    if rng.random() < TWO_FAULTS_P:
        seconds = [k for k in kinds if scenario in KINDS[k]]
        faults.append(Fault(rng.choice(seconds), 0.0))
    return scenario, faults


def processes_named(name: str, pids: List[int]) -> List[int]:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == name:
                    out.append(pid)
        except OSError:
            pass
    return out


def signal_one(rng: random.Random, pids: List[int], sig: int) -> int:
    """Signals one of `pids` (0 when none is left)."""
    for pid in rng.sample(sorted(pids), len(pids)):
        try:
            os.kill(pid, sig)
            return pid
        except ProcessLookupError:
            continue
    return 0


class Injector:
    """Carries out faults on one run's parts: `run` is the run (its job,
    daemon and world), whose daemon a fault may replace."""

    def __init__(self, rng: random.Random, run) -> None:
        self.rng = rng
        self.run = run

    def inject(self, fault: Fault) -> None:
        getattr(self, "_" + fault.kind.replace("-", "_"))(fault)
        if fault.note == "pid 0" or fault.note.startswith("pid 0 "):
            fault.hit = False  # no process of that kind was there yet

    def _daemon(self, fault: Fault, sig: int) -> None:
        took = self.run.daemon.stop(sig)
        if sig == signal.SIGTERM:
            self.run.daemon_exits.append(took)
        pause = self.rng.uniform(0.1, 1.0)
        fault.note = f"down {pause:.2f}s"
        time.sleep(pause)
        self.run.restart_daemon()

    def _daemon_kill(self, fault: Fault) -> None:
        self._daemon(fault, signal.SIGKILL)

    def _daemon_term(self, fault: Fault) -> None:
        self._daemon(fault, signal.SIGTERM)

    def _workers(self) -> List[int]:
        return self.run.job_pids()

    def _worker_kill(self, fault: Fault) -> None:
        fault.note = f"pid {signal_one(self.rng, self._workers(), signal.SIGKILL)}"

    def _worker_stop(self, fault: Fault) -> None:
        pid = signal_one(self.rng, self._workers(), signal.SIGSTOP)
        pause = self.rng.uniform(0.2, 2.0)
        fault.note = f"pid {pid} for {pause:.2f}s"
        time.sleep(pause)
        if pid:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def _launcher_kill(self, fault: Fault) -> None:
        self.run.job.kill()
        self.run.launcher_killed = True

    def _remote_exec_kill(self, fault: Fault) -> None:
        hosts = self.run.world.hosts
        pids = processes_named("hvd-remote-exec", hosts.processes())
        fault.note = f"pid {signal_one(self.rng, pids, signal.SIGKILL)}"

    def _link_cut(self, fault: Fault) -> None:
        hosts = self.run.world.hosts
        host = self.rng.randrange(hosts.count)
        pause = self.rng.uniform(0.2, 3.0)
        fault.note = f"host {host} for {pause:.2f}s"
        hosts.link(host, False)
        try:
            time.sleep(pause)
        finally:
            hosts.link(host, True)

    def _disk_full(self, fault: Fault) -> None:
        disk = self.run.world.disk
        # Past the clients' 5 s of retries, a full disk fails the job.
        pause = self.rng.uniform(0.2, 7.0)
        fault.note = f"full {pause:.2f}s"
        disk.fill()
        try:
            time.sleep(pause)
        finally:
            disk.free()

    def _etcd_member_kill(self, fault: Fault) -> None:
        etcd = self.run.world.etcd
        member = self.rng.randrange(len(etcd.members))
        pause = self.rng.uniform(0.2, 2.0)
        fault.note = f"member {member} for {pause:.2f}s"
        etcd.kill(member)
        time.sleep(pause)
        etcd.restart(member)


def wait_gone(find: Callable[[], list], seconds: float) -> float:
    """Waits until `find` finds nothing, up to `seconds`; how long it
    took."""
    start = time.monotonic()
    while find() and time.monotonic() - start < seconds:
        time.sleep(0.05)
    return time.monotonic() - start


def run_quiet(argv: List[str], timeout: float) -> Tuple[int, str]:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).strip()
