"""Seeded chaos runs: one small job on hvd-rendezvousd, one fault at a
random moment of its life, and the invariants checked after each run.

    chaos.py BUILD_DIR [--runs N] [--seed S] [--faults K,K...] [--bench]

Run i uses seed S + i; a failing run prints its seed, and
``--runs 1 --seed THAT`` replays it (the same fault, moment and pause; the
machine's timing still varies, as it does for any fault).

The job: ``horovodrun -np 2 --rendezvous-addr ... hvd_hello --rounds R``
on ``hvd-rendezvousd --state-dir`` (hvd_hello checks every round's sum
itself). Faults, one per run:

- daemon-kill: the daemon ``kill -9``ed, started again on its address
  after a pause;
- daemon-term: the daemon SIGTERMed (it must exit within its grace and
  the margin), then started again;
- worker-stop: a worker SIGSTOPped for a while, then SIGCONTed;
- worker-kill: a worker ``kill -9``ed.

Each comes at a random moment of the job's first FAULT_WITHIN_S seconds
(its start, its steps, its shutdown); one that finds the job already
ended is counted apart.

Invariants, each run: the job finishes with every round right, or fails
with a ``horovodrun:`` line saying why, within its deadline; nothing of
the job is left afterwards (a process of the job, a /dev/shm segment of
the job, a file in the job's TMPDIR other than a flight recorder dump
horovodrun announced); a SIGTERMed daemon exits within its grace and
margin. Exits 1 when any run breaks one.
"""

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

FAULTS = ("daemon-kill", "daemon-term", "worker-stop", "worker-kill")
ROUNDS = 300  # about 2.5 s: the faults land over its whole life
FAULT_WITHIN_S = 2.5
JOB_DEADLINE_S = 120.0  # a job still running then is hung
GRACE_S = 2  # the daemon's --shutdown-grace-seconds
CLOSE_MARGIN_S = 5.0  # past the grace, the daemon's own bound
ADMIN_TOKEN = "chaos-admin-token"


class Daemon:
    """hvd-rendezvousd on a state directory, restartable on its address."""

    def __init__(self, build: str, state: str, token_file: str,
                 listen: str = "127.0.0.1:0") -> None:
        self.log: List[str] = []
        self._listening = threading.Event()
        self.proc = subprocess.Popen(
            [os.path.join(build, "rendezvous", "hvd-rendezvousd"), "--listen",
             listen, "--admin-token-file", token_file, "--state-dir", state,
             "--shutdown-grace-seconds", str(GRACE_S), "--log-level",
             "INFO"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.address = ""
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 30
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                time.sleep(0.1)  # the reader takes its last lines
                raise RuntimeError("hvd-rendezvousd did not start: " +
                                   " | ".join(self.log[-3:]))

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line.rstrip("\n"))
            m = re.search(r"listening on (\S+)", line)
            if m and not self._listening.is_set():
                self.address = m.group(1)
                self._listening.set()

    def job_ids(self) -> List[str]:
        return [m.group(1) for line in self.log
                for m in [re.search(r"created (?:elastic )?job (\w+)", line)]
                if m]

    def stop(self, sig: int) -> float:
        """Signals the daemon and waits for it; the seconds it took."""
        start = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(GRACE_S + CLOSE_MARGIN_S + 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return time.monotonic() - start


@dataclass
class Outcome:
    seed: int
    fault: str
    at_s: float
    verdict: str = ""  # finished, failed-clearly, wrong, hung
    detail: str = ""
    leftovers: List[str] = field(default_factory=list)
    end_after_fault_s: float = 0.0
    daemon_exit_s: Optional[float] = None  # for daemon-term
    hit: bool = False  # the job still ran when the fault came

    @property
    def broken(self) -> bool:
        return (self.verdict in ("wrong", "hung") or bool(self.leftovers) or
                (self.daemon_exit_s is not None and
                 self.daemon_exit_s > GRACE_S + CLOSE_MARGIN_S + 1))


def job_pids(address: str) -> List[int]:
    """Processes whose environment names this job's rendezvous (its
    workers and their wrappers)."""
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


def leftovers(address: str, job_ids: List[str], tmp: str,
              err: str) -> List[str]:
    """What the job left. A flight recorder dump that horovodrun announced
    (a failed job's report, for its user) is output, not a leftover."""
    announced = re.findall(r"flight recorder dump \d+.* ranks in ([^\s;]+)",
                           err)
    found = [f"process {pid}" for pid in job_pids(address)]
    for entry in os.listdir("/dev/shm"):
        if any(f"hvd-{job}-" in entry for job in job_ids):
            found.append("/dev/shm/" + entry)
    for root, _, files in os.walk(tmp):
        if any(os.path.commonpath([root, d]) == d for d in announced):
            continue
        found += [os.path.join(root, f) for f in files]
    return found


def inject(fault: str, rng: random.Random, daemon: Daemon,
           make_daemon, outcome: Outcome) -> Daemon:
    """Carries out `fault`; returns the daemon now serving."""
    if fault in ("daemon-kill", "daemon-term"):
        took = daemon.stop(signal.SIGKILL if fault == "daemon-kill"
                           else signal.SIGTERM)
        if fault == "daemon-term":
            outcome.daemon_exit_s = took
        time.sleep(rng.uniform(0.1, 1.0))
        return make_daemon(daemon.address)
    pids = job_pids(daemon.address)
    if not pids:
        return daemon  # the job ended before the fault
    victim = rng.choice(sorted(pids))
    try:
        if fault == "worker-kill":
            os.kill(victim, signal.SIGKILL)
        else:
            os.kill(victim, signal.SIGSTOP)
            time.sleep(rng.uniform(0.2, 2.0))
            os.kill(victim, signal.SIGCONT)
    except ProcessLookupError:
        pass  # it ended meanwhile
    return daemon


def judge(code: Optional[int], out: str, err: str) -> str:
    if code is None:
        return "hung"
    if code == 0:
        for rank in range(2):
            if f"rank {rank}/2: round {ROUNDS} sum=" not in out:
                return "wrong"
        return "finished"
    if any(line.startswith("horovodrun: ") for line in err.splitlines()):
        return "failed-clearly"
    return "wrong"


def run_once(build: str, seed: int, faults: List[str]) -> Outcome:
    rng = random.Random(seed)
    outcome = Outcome(seed, rng.choice(faults), rng.uniform(0.0, FAULT_WITHIN_S))
    with tempfile.TemporaryDirectory(prefix="hvd-chaos-") as work:
        token = os.path.join(work, "admin-token")
        with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(ADMIN_TOKEN + "\n")
        state = os.path.join(work, "state")
        tmp = os.path.join(work, "tmp")
        os.makedirs(tmp)
        daemons: List[Daemon] = []

        def make_daemon(listen: str = "127.0.0.1:0") -> Daemon:
            d = Daemon(build, state, token, listen)
            daemons.append(d)
            return d

        daemon = make_daemon()
        address = daemon.address
        env = dict(os.environ, TMPDIR=tmp)
        with open(os.path.join(work, "out"), "w+") as out, \
                open(os.path.join(work, "err"), "w+") as err:
            job = subprocess.Popen(
                [os.path.join(build, "launcher", "horovodrun"), "-np", "2",
                 "--rendezvous-addr", address, "--rendezvous-token-file",
                 token, os.path.join(build, "examples", "hello", "hvd_hello"),
                 "--rounds", str(ROUNDS)],
                stdout=out, stderr=err, env=env)
            time.sleep(outcome.at_s)
            fault_at = time.monotonic()
            code: Optional[int] = None
            try:
                if job.poll() is None:
                    outcome.hit = True
                    daemon = inject(outcome.fault, rng, daemon, make_daemon,
                                    outcome)
                code = job.wait(JOB_DEADLINE_S)
            except subprocess.TimeoutExpired:
                pass  # hung: judged below
            except RuntimeError as e:  # the daemon did not come back
                outcome.detail = str(e)
            finally:
                if job.poll() is None:
                    job.terminate()
                    try:
                        job.wait(30)
                    except subprocess.TimeoutExpired:
                        job.kill()
                        job.wait()
            outcome.end_after_fault_s = time.monotonic() - fault_at
            out.seek(0)
            err.seek(0)
            text_out, text_err = out.read(), err.read()
        outcome.verdict = judge(code, text_out, text_err)
        if outcome.detail:  # a restart that failed is the run's failure
            outcome.verdict = "wrong"
        elif outcome.verdict != "finished":
            lines = text_err.strip().splitlines()
            outcome.detail = lines[-1] if lines else "(no stderr)"
        ids = [j for d in daemons for j in d.job_ids()]
        for d in daemons:
            if d.proc.poll() is None:
                d.stop(signal.SIGTERM)
        outcome.leftovers = leftovers(address, ids, tmp, text_err)
        # Whatever was left is this run's: end it, so the next run starts
        # clean, after it was counted.
        for pid in job_pids(address):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return outcome


def report(outcomes: List[Outcome], bench: bool) -> None:
    counts: Dict[str, int] = {}
    for o in outcomes:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    per_fault = {f: sum(o.fault == f and o.hit for o in outcomes)
                 for f in FAULTS}
    if not bench:
        print(f"chaos: {len(outcomes)} runs, " +
              ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        return
    print(f"BENCH chaos.runs {len(outcomes)} runs")
    print(f"BENCH chaos.faults_after_the_end "
          f"{sum(not o.hit for o in outcomes)} runs")
    for f, n in per_fault.items():
        print(f"BENCH chaos.faults.{f} {n} runs")
    for verdict in ("finished", "failed-clearly", "wrong", "hung"):
        print(f"BENCH chaos.{verdict} {counts.get(verdict, 0)} runs")
    print(f"BENCH chaos.leftovers {sum(bool(o.leftovers) for o in outcomes)} "
          "runs")
    longest = max((o.end_after_fault_s for o in outcomes), default=0.0)
    print(f"BENCH chaos.longest_fault_to_end {longest:.1f} s")
    exits = [o.daemon_exit_s for o in outcomes if o.daemon_exit_s is not None]
    print(f"BENCH chaos.longest_daemon_sigterm_exit "
          f"{max(exits, default=0.0):.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--bench", action="store_true")
    args = parser.parse_args()
    faults = [f for f in args.faults.split(",") if f]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown or not faults:
        print(f"chaos: unknown fault {unknown or '(none given)'}; choose from "
              f"{', '.join(FAULTS)}", file=sys.stderr)
        return 2
    outcomes = []
    for i in range(args.runs):
        o = run_once(args.build, args.seed + i, faults)
        outcomes.append(o)
        print(f"run seed={o.seed} fault={o.fault}"
              f"{'' if o.hit else '(after the end)'} at={o.at_s:.2f}s "
              f"verdict={o.verdict} end={o.end_after_fault_s:.1f}s"
              + (f" daemon_exit={o.daemon_exit_s:.1f}s"
                 if o.daemon_exit_s is not None else "")
              + (f" leftovers={o.leftovers}" if o.leftovers else "")
              + (f" ({o.detail})" if o.detail else ""), flush=True)
    report(outcomes, args.bench)
    broken = [o for o in outcomes if o.broken]
    for o in broken:
        print(f"chaos: seed {o.seed} broke an invariant ({o.fault}: "
              f"{o.verdict}{', leftovers' if o.leftovers else ''}); replay: "
              f"chaos.py BUILD --runs 1 --seed {o.seed}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
