"""Seeded chaos runs: a small job, one or two faults at random moments of
its life, and the invariants checked after each run.

    chaos.py BUILD_DIR [--runs N] [--seed S] [--faults K,K...] [--bench]
             [--verbose]

Run i uses seed S + i; a failing run prints its seed, and
``--runs 1 --seed THAT`` (with the same --faults) replays it: the same
scenario, faults, moments and pauses (the machine's timing still varies,
as it does for any fault). The scenarios and fault kinds are in
faults.py; a fault that finds the job already ended, or no process of
its kind yet, is counted apart (missed).

Invariants, each run:
- the job finishes with every result right (hvd_hello's every round's
  sum; the elastic job's weights, which count its steps), or fails with a
  ``horovodrun:`` line saying why, within its deadline; a killed
  horovodrun is the one end without that line;
- nothing of the job is left once it ended (after a settling bound: 10 s,
  30 s after horovodrun was killed): no process of the job here or on a
  namespace host, no /dev/shm segment of the job, no file in the job's
  TMPDIR other than a flight recorder dump horovodrun announced;
- nothing the daemon answered is lost: a probe client writes and reads
  keys throughout (hvd_store_probe), and after the job the daemon is
  killed with -9, started again on its store, and must hold every key it
  answered or showed;
- a SIGTERMed daemon exits within its grace and the margin.
Exits 1 when any run breaks one.
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from faults import KINDS, SCENARIOS, Fault, Injector, draw, wait_gone
from world import CLOSE_MARGIN_S, GRACE_S, Daemon, World, unavailable

ROUNDS = 300  # hvd_hello's rounds: about 2.5 s
ELASTIC_STEPS = 60  # the elastic job's steps, 40 ms each
# Faults land over the job's life: its start (job creation, the first
# joins), its steps, its end (the last rounds, shutdown).
WINDOW_S = {"local": 3.0, "etcd": 3.0, "hosts": 4.0, "elastic": 4.0}
START_P, START_S = 0.2, 0.12  # this share of the faults come in the start
END_P = 0.1  # and this share at the job's end (its last rounds or steps)
JOB_DEADLINE_S = 120.0  # a job still running then is hung
SETTLE_S = 10.0  # for the job's processes to go once horovodrun ended
KILLED_SETTLE_S = 30.0  # ... once horovodrun was killed
ADMIN_TOKEN = "chaos-admin-token"


@dataclass
class Outcome:
    seed: int
    scenario: str
    faults: List[Fault]
    verdict: str = ""  # finished, failed-clearly, launcher-killed, wrong, hung
    detail: str = ""
    leftovers: List[str] = field(default_factory=list)
    lost: str = ""  # what the durability check found missing
    end_after_fault_s: float = 0.0
    settle_s: float = 0.0
    daemon_exits: List[float] = field(default_factory=list)
    stderr_tail: List[str] = field(default_factory=list)  # the job's

    @property
    def broken(self) -> bool:
        return (self.verdict in ("wrong", "hung") or bool(self.leftovers) or
                bool(self.lost) or
                any(t > GRACE_S + CLOSE_MARGIN_S + 1
                    for t in self.daemon_exits))


def job_pids(address: str) -> List[int]:
    """Processes whose environment names this job's rendezvous (its
    workers and their wrappers, here and on namespace hosts)."""
    needle = ("HVD_RENDEZVOUS_ADDR=" + address + "\0").encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read():
                    out.append(int(name))
        except OSError:
            pass  # it ended, or is not ours to read
    return out


class Run:
    """One run's parts: its daemon (replaced by faults), its job, and the
    shared world."""

    def __init__(self, build: str, world: World, scenario: str, seed: int,
                 work: str) -> None:
        self.build, self.world, self.scenario = build, world, scenario
        self.work = work
        self.token = os.path.join(work, "admin-token")
        with open(os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600),
                  "w") as f:
            f.write(ADMIN_TOKEN + "\n")
        self.tmp = os.path.join(work, "tmp")
        os.makedirs(self.tmp)
        self.state_dir = ""
        if scenario == "etcd":
            assert world.etcd is not None
            self.store = ["--store", world.etcd.store(), "--etcd-prefix",
                          f"/hvd-chaos/{seed}-{os.getpid()}-"
                          f"{time.monotonic_ns()}/"]
        else:
            base = world.disk.path if world.disk else work
            self.state_dir = tempfile.mkdtemp(dir=base)
            self.store = ["--state-dir", self.state_dir]
        self.daemons: List[Daemon] = []
        self.daemon_exits: List[float] = []
        self.launcher_killed = False
        listen = world.hosts.gateway + ":0" if scenario == "hosts" \
            else "127.0.0.1:0"
        self.daemon = self._start_daemon(listen)
        self.address = self.daemon.address
        self.discovery = os.path.join(work, "hosts")
        self.job: Optional[subprocess.Popen] = None

    def _start_daemon(self, listen: str) -> Daemon:
        d = Daemon(self.build, self.token, self.store, listen)
        self.daemons.append(d)
        return d

    def restart_daemon(self) -> None:
        self.daemon = self._start_daemon(self.address)

    def job_pids(self) -> List[int]:
        return job_pids(self.address)

    def discover(self, hosts: List[str]) -> None:
        tmp = self.discovery + ".tmp"
        with open(tmp, "w") as f:
            f.write("".join(h + "\n" for h in hosts))
        os.rename(tmp, self.discovery)

    def argv(self) -> List[str]:
        run = [os.path.join(self.build, "launcher", "horovodrun"),
               "--rendezvous-addr", self.address, "--rendezvous-token-file",
               self.token]
        hello = [os.path.join(self.build, "examples", "hello", "hvd_hello"),
                 "--rounds", str(ROUNDS)]
        if self.scenario == "hosts":
            assert self.world.hosts is not None
            return run + ["-i", self.world.hosts.user_key, "-np", "2", "-H",
                          self.world.hosts.host_list()] + hello
        if self.scenario == "elastic":
            self.discover(["127.0.0.1:1", "127.0.0.2:1"])
            return run + [
                "-np", "2", "--min-np", "1", "--max-np", "3",
                "--host-discovery-script", "cat " + self.discovery,
                "--elastic-timeout", "30", "--blacklist-cooldown-range", "1",
                "2", os.path.join(self.build, "tests", "integration",
                                  "hvd_test_worker"),
                "--elastic-job", str(ELASTIC_STEPS), "--step-ms", "40",
                "--commit-every", "5"]
        return run + ["-np", "2"] + hello

    def env(self) -> Dict[str, str]:
        env = dict(os.environ, TMPDIR=self.tmp)
        if self.scenario == "hosts":
            assert self.world.hosts is not None
            env["HOME"] = self.world.hosts.home
        return env

    def leftover_processes(self) -> List[int]:
        found = self.job_pids()
        if self.scenario == "hosts" and self.world.hosts is not None:
            found += self.world.hosts.processes()
        return sorted(set(found))

    def close(self) -> None:
        for d in self.daemons:
            if d.proc.poll() is None:
                d.stop(signal.SIGTERM)
        if self.state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)


def phase_of(scenario: str, out: str, since_change: Optional[float]) -> str:
    if scenario == "elastic":
        if "ELASTIC rank=" in out:
            return "end"
        if since_change is not None and since_change < 1.5:
            return "elastic-change"
        return "steps" if "STEP step=" in out else "start"
    if f"round {ROUNDS - 2} sum=" in out:
        return "end"
    return "rounds" if "round 1 sum=" in out else "start"


def near_end(scenario: str, out: str) -> bool:
    if scenario == "elastic":
        return f"STEP step={ELASTIC_STEPS - 1} " in out
    return f"round {ROUNDS - 2} sum=" in out


def wait_for_end(run: Run, out_path: str, deadline: float) -> None:
    """Until the job's output shows its last steps, or it ended."""
    while run.job is not None and run.job.poll() is None and \
            time.monotonic() < deadline:
        with open(out_path) as f:
            if near_end(run.scenario, f.read()):
                return
        time.sleep(0.01)


def hello_right(out: str) -> bool:
    """Every rank printed every round once, each with its right sum."""
    seen: Dict[int, Dict[int, float]] = {0: {}, 1: {}}
    for m in re.finditer(r"rank (\d+)/2: round (\d+) sum=(\S+)", out):
        rank, rnd = int(m.group(1)), int(m.group(2))
        if rank not in seen or rnd in seen[rank]:
            return False
        seen[rank][rnd] = float(m.group(3))
    return all(sorted(s) == list(range(1, ROUNDS + 1)) and
               all(v == 3 + 2 * (r - 1) for r, v in s.items())
               for s in seen.values())


def elastic_right(out: str) -> bool:
    """The last generation's ranks each report every step in the weight
    (each step adds one, whatever the resets)."""
    ends = re.findall(r"ELASTIC rank=(\d+) size=(\d+) steps=\d+ weight=(\S+)",
                      out)
    if not ends:
        return False
    size = int(ends[0][1])
    return (sorted(int(r) for r, _, _ in ends) == list(range(size)) and
            all(int(s) == size and float(w) == ELASTIC_STEPS
                for _, s, w in ends))


def judge(scenario: str, code: Optional[int], launcher_killed: bool,
          out: str, err: str) -> str:
    if code is None:
        return "hung"
    if code == 0:
        right = elastic_right(out) if scenario == "elastic" else \
            hello_right(out)
        return "finished" if right else "wrong"
    if launcher_killed and code == -signal.SIGKILL:
        return "launcher-killed"
    if any(line.startswith("horovodrun: ") for line in err.splitlines()):
        return "failed-clearly"
    return "wrong"


def files_left(run: Run, err: str) -> List[str]:
    """The job's /dev/shm segments and TMPDIR files. A flight recorder dump
    that horovodrun announced (a failed job's report, for its user) is
    output, not a leftover."""
    announced = re.findall(r"flight recorder dump \d+.* ranks in ([^\s;]+)",
                           err)
    ids = [j for d in run.daemons for j in d.job_ids()]
    found = ["/dev/shm/" + e for e in os.listdir("/dev/shm")
             if any(f"hvd-{job}-" in e for job in ids)]
    for root, _, files in os.walk(run.tmp):
        if any(os.path.commonpath([root, d]) == d for d in announced):
            continue
        found += [os.path.join(root, f) for f in files]
    return found


def check_durable(run: Run, log: str) -> str:
    """Kills the daemon with -9, starts one again on the store, and asks
    the probe to read back what the daemon answered; "" when all is kept."""
    run.daemon.stop(signal.SIGKILL)
    run.restart_daemon()
    probe = subprocess.run(
        [os.path.join(run.build, "tests", "chaos", "hvd_store_probe"), "check",
         run.address, log], capture_output=True, text=True, timeout=120)
    return "" if probe.returncode == 0 else \
        (probe.stdout + probe.stderr).strip() or f"probe exit {probe.returncode}"


def drive(run: Run, rng: random.Random, outcome: Outcome, out_path: str,
          change_at: Optional[float]) -> Optional[int]:
    """Starts the job, injects the faults at their moments, waits for its
    end; its exit status (None when it hung)."""
    injector = Injector(rng, run)
    with open(out_path + ".out", "w") as out, open(out_path + ".err",
                                                     "w") as err:
        run.job = subprocess.Popen(run.argv(), stdout=out, stderr=err,
                                   env=run.env())
    start = time.monotonic()
    changer = None
    if change_at is not None:
        hosts = rng.choice([["127.0.0.1:1", "127.0.0.2:1", "127.0.0.3:1"],
                            ["127.0.0.1:1"]])
        changer = threading.Timer(change_at, run.discover, [hosts])
        changer.start()
    fault_at = start
    for fault in outcome.faults:
        if fault.at_end:
            wait_for_end(run, out_path + ".out", start + JOB_DEADLINE_S)
        else:
            time.sleep(max(0.0, start + fault.at_s - time.monotonic()))
        if run.job.poll() is not None:
            continue
        fault.hit = True
        now = time.monotonic() - start
        with open(out_path + ".out") as f:
            fault.phase = phase_of(
                run.scenario, f.read(),
                now - change_at if change_at is not None and
                now >= change_at else None)
        fault_at = time.monotonic()
        injector.inject(fault)
    code: Optional[int] = None
    try:
        code = run.job.wait(max(1.0, JOB_DEADLINE_S -
                                (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        run.job.terminate()
        try:
            run.job.wait(30)
        except subprocess.TimeoutExpired:
            run.job.kill()
            run.job.wait()
    if changer is not None:
        changer.cancel()
    outcome.end_after_fault_s = time.monotonic() - fault_at
    return code


def run_once(build: str, world: World, seed: int, kinds: List[str],
             scenarios: List[str], verbose: bool = False) -> Outcome:
    rng = random.Random(seed)
    scenario, faults = draw(rng, kinds, scenarios)
    for f in faults:
        where = rng.random()
        f.at_s = rng.uniform(0.0, START_S if where < START_P else
                             WINDOW_S[scenario])
        if where > 1 - END_P:
            f.at_end, f.at_s = True, WINDOW_S[scenario]  # sorts last
    change_at = rng.uniform(0.8, 2.0) if scenario == "elastic" else None
    if change_at is not None:  # the first fault lands in the change
        faults[0].at_s = change_at + rng.uniform(-0.3, 1.0)
        faults[0].at_end = False
    faults.sort(key=lambda f: f.at_s)
    outcome = Outcome(seed, scenario, faults)
    with tempfile.TemporaryDirectory(prefix="hvd-chaos-") as work:
        run = Run(build, world, scenario, seed, work)
        log = os.path.join(work, "probe.log")
        probe = subprocess.Popen(
            [os.path.join(build, "tests", "chaos", "hvd_store_probe"), "write",
             run.address, run.token, log], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        try:
            code = drive(run, rng, outcome, os.path.join(work, "job"),
                         change_at)
            probe.send_signal(signal.SIGTERM)
            probe.wait(60)
            # At once: the probe's job keeps alive only while the probe
            # runs, and a settling wait as long as the daemon's job TTL
            # (30 s) would let the daemon end it rightly (seed 184 of the
            # long run).
            outcome.lost = check_durable(run, log)
            with open(os.path.join(work, "job.out")) as f:
                text_out = f.read()
            with open(os.path.join(work, "job.err")) as f:
                text_err = f.read()
            outcome.verdict = judge(scenario, code, run.launcher_killed,
                                    text_out, text_err)
            if outcome.verdict != "finished":
                lines = text_err.strip().splitlines()
                outcome.detail = f"exit {code}: " + \
                    (lines[-1] if lines else "(no stderr)")
            # The job's processes, and what the last of them sweep (the
            # watchdog that outlives a killed horovodrun removes its
            # segments), get the settling bound.
            outcome.settle_s = wait_gone(
                lambda: run.leftover_processes() + files_left(run, text_err),
                KILLED_SETTLE_S if run.launcher_killed else SETTLE_S)
            outcome.leftovers = [f"process {p}"
                                 for p in run.leftover_processes()]
            outcome.leftovers += files_left(run, text_err)
            if outcome.broken or verbose:
                outcome.stderr_tail = text_err.strip().splitlines()[-20:]
        except RuntimeError as e:  # a daemon or member did not come back
            outcome.verdict, outcome.detail = "wrong", str(e)
        finally:
            if probe.poll() is None:
                probe.kill()
                probe.wait()
            if run.job is not None and run.job.poll() is None:
                run.job.kill()
                run.job.wait()
            outcome.daemon_exits = run.daemon_exits
            run.close()
            # Whatever was left is this run's: end it after it was
            # counted, so that the next run starts clean.
            for pid in run.leftover_processes():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    return outcome


def report(outcomes: List[Outcome], bench: bool) -> None:
    counts: Dict[str, int] = {}
    for o in outcomes:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    if not bench:
        print(f"chaos: {len(outcomes)} runs, " +
              ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        return
    faults = [(o, f) for o in outcomes for f in o.faults]
    print(f"BENCH chaos.runs {len(outcomes)} runs")
    print(f"BENCH chaos.runs_with_two_faults "
          f"{sum(len(o.faults) > 1 for o in outcomes)} runs")
    for s in SCENARIOS:
        print(f"BENCH chaos.scenario.{s} "
              f"{sum(o.scenario == s for o in outcomes)} runs")
    for k in KINDS:
        print(f"BENCH chaos.faults.{k} "
              f"{sum(f.kind == k and f.hit for _, f in faults)} faults")
    print(f"BENCH chaos.faults.daemon-kill.etcd "
          f"{sum(f.kind == 'daemon-kill' and f.hit and o.scenario == 'etcd' for o, f in faults)} faults")
    print(f"BENCH chaos.faults_missed "
          f"{sum(not f.hit for _, f in faults)} faults")
    phases = sorted({f.phase for _, f in faults if f.hit})
    for p in phases:
        print(f"BENCH chaos.phase.{p} "
              f"{sum(f.hit and f.phase == p for _, f in faults)} faults")
    for verdict in ("finished", "failed-clearly", "launcher-killed", "wrong",
                    "hung"):
        print(f"BENCH chaos.{verdict} {counts.get(verdict, 0)} runs")
    print(f"BENCH chaos.leftovers {sum(bool(o.leftovers) for o in outcomes)} "
          "runs")
    print(f"BENCH chaos.lost {sum(bool(o.lost) for o in outcomes)} runs")
    longest = max((o.end_after_fault_s for o in outcomes), default=0.0)
    print(f"BENCH chaos.longest_fault_to_end {longest:.1f} s")
    settle = max((o.settle_s for o in outcomes), default=0.0)
    print(f"BENCH chaos.longest_settle {settle:.1f} s")
    exits = [t for o in outcomes for t in o.daemon_exits]
    print(f"BENCH chaos.longest_daemon_sigterm_exit "
          f"{max(exits, default=0.0):.1f} s")


def describe(o: Outcome) -> str:
    faults = " ".join(
        f"{f.kind}@{'end' if f.at_end else f'{f.at_s:.2f}s'}" +
        (f"[{f.phase}{', ' + f.note if f.note else ''}]" if f.hit
         else f"[missed: {f.note or 'after the end'}]") for f in o.faults)
    return (f"run seed={o.seed} {o.scenario}: {faults} verdict={o.verdict} "
            f"end={o.end_after_fault_s:.1f}s settle={o.settle_s:.1f}s" +
            "".join(f" daemon_exit={t:.1f}s" for t in o.daemon_exits) +
            (f" leftovers={o.leftovers}" if o.leftovers else "") +
            (f" LOST({o.lost})" if o.lost else "") +
            (f" ({o.detail})" if o.detail else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", default="",
                        help="the kinds to inject (all this machine can "
                        "make when not given)")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--verbose", action="store_true",
                        help="show every job's last lines of stderr")
    args = parser.parse_args()
    kinds = [k for k in args.faults.split(",") if k] or list(KINDS)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        print(f"chaos: unknown fault {unknown}; choose from "
              f"{', '.join(KINDS)}", file=sys.stderr)
        return 2
    missing = unavailable()
    scenarios = [s for s in SCENARIOS if s not in missing]
    left_out = {k: missing.get("disk") if k == "disk-full" else
                "; ".join(sorted({missing[s] for s in KINDS[k]}))
                for k in kinds
                if (k == "disk-full" and "disk" in missing) or
                not any(s in scenarios for s in KINDS[k])}
    for k, why in left_out.items():
        if args.faults:
            print(f"chaos: cannot inject {k}: {why}", file=sys.stderr)
            return 2
        print(f"chaos: leaving out {k}: {why}")
    kinds = [k for k in kinds if k not in left_out]
    scenarios = sorted({s for k in kinds for s in KINDS[k]
                        if s in scenarios})
    # Stopped by a signal (a background run ignores SIGINT unless told):
    # the run's and the world's cleanups still run.
    def stop(signum: int, _frame) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    build = os.path.abspath(args.build)
    world = World(build, "etcd" in scenarios, "disk" not in missing,
                  "hosts" in scenarios)
    outcomes: List[Outcome] = []
    stopped = ""
    try:
        for i in range(args.runs):
            o = run_once(build, world, args.seed + i, kinds, scenarios,
                         args.verbose)
            outcomes.append(o)
            print(describe(o), flush=True)
            for line in o.stderr_tail:
                print("    | " + line, flush=True)
    except KeyboardInterrupt as e:  # the runs so far still count
        stopped = str(e) or "interrupted"
    finally:
        world.close()
    if stopped:
        print(f"chaos: stopped ({stopped}) after {len(outcomes)} runs")
    report(outcomes, args.bench)
    broken = [o for o in outcomes if o.broken]
    for o in broken:
        print(f"chaos: seed {o.seed} broke an invariant ({o.scenario}, "
              f"{'+'.join(f.kind for f in o.faults)}: {o.verdict}"
              f"{', leftovers' if o.leftovers else ''}"
              f"{', lost' if o.lost else ''}); replay: chaos.py BUILD --runs 1 "
              f"--seed {o.seed}" + (f" --faults {args.faults}" if args.faults
                                     else ""), file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
