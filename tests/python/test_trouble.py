"""Trouble on one rank of a Python job (trouble_train.py), as a user of
horovod.torch meets it: the stall inspector asks for every rank's flight
recorder, and horovodrun's report names the rank, host, tensor and the
Python lines it is at; a 3x slower rank is named as the straggler."""

import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Dict, List

from hvd.runner import _horovodrun

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "trouble_train.py")


def _line(marker: str) -> int:
    """The line of trouble_train.py that carries '# site: MARKER'."""
    with open(SCRIPT) as f:
        for number, text in enumerate(f, start=1):
            if text.rstrip().endswith("# site: " + marker):
                return number
    raise AssertionError(f"no '# site: {marker}' in {SCRIPT}")


def _processes_with(tag: str) -> List[int]:
    """Pids whose command line carries `tag`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if tag.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass  # gone meanwhile
    return found


def _expect_nothing_left(tag: str) -> None:
    """No worker of the job outlives it (the kernel may take a moment to
    deliver the last SIGKILLs)."""
    deadline = time.monotonic() + 10
    while _processes_with(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_with(tag), "workers outlived the job"


def _run(kind: str, *flags: str, steps: int = 6) -> subprocess.CompletedProcess:
    env: Dict[str, str] = dict(os.environ)
    env.update({"HOROVOD_STALL_CHECK_TIME_SECONDS": "1",
                "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "3",
                "HOROVOD_GLOO_TIMEOUT_SECONDS": "3"})
    tag = "tag-" + uuid.uuid4().hex  # on every worker's command line
    with tempfile.TemporaryDirectory() as tmp:
        env["TMPDIR"] = tmp  # the dumps
        run = subprocess.run(
            [_horovodrun(), "-np", "2", *flags, sys.executable, SCRIPT, kind,
             "1", str(steps), tag],
            env=env, capture_output=True, text=True, timeout=120)
    _expect_nothing_left(tag)
    return run


def _stall_report(run: subprocess.CompletedProcess) -> str:
    """The stall report's finding: the job's last line says it."""
    assert run.returncode == 1, run.stderr
    found = re.search(r"the stall inspector ended the job: (.*)", run.stderr)
    assert found, run.stderr
    return found.group(1)


def test_a_rank_asleep_in_its_data_loading_is_named_with_its_line() -> None:
    finding = _stall_report(_run("sleep"))
    # Asleep before its step's first tensor, after the last of the step
    # before.
    assert re.match(
        r'rank 1 \(host localhost\) never submitted "allreduce\.loss" .*; '
        r'rank 0 waits there since \d+\.\d s; rank 1\'s last op: allreduce '
        r'"allreduce\.grad/fc2\.weight" \(seq \d+\) done \d+\.\d s ago, '
        rf'submitted at trouble_train\.py:{_line("reduce")} in reduce; '
        rf'rank 1 is in trouble_train\.py:{_line("asleep")} in load_batch$',
        finding), finding


def test_a_deadlocked_rank_is_named_with_the_lock_it_waits_for() -> None:
    finding = _stall_report(_run("deadlock"))
    assert finding.startswith(
        'rank 1 (host localhost) never submitted '
        '"allreduce.grad/fc2.weight"'), finding
    assert finding.endswith(
        f"rank 1 is in trouble_train.py:{_line('deadlocked')} in deadlock"), \
        finding


def test_a_rank_that_skips_a_tensor_is_named() -> None:
    finding = _stall_report(_run("skip"))
    assert re.match(
        r'rank 1 \(host localhost\) never submitted "allreduce\.grad/fc2\.'
        r'weight" .*it went on without it', finding), finding


def test_another_shape_is_refused_naming_both_ranks() -> None:
    run = _run("shape")
    assert run.returncode != 0, run.stderr
    assert re.search(r"tensor 'allreduce\.grad/fc1\.weight': rank 0 asks for "
                     r"\w+ allreduce of float32 shape \[1024\] but rank 1 "
                     r"for \w+ allreduce of float32 shape \[1000\]",
                     run.stderr), run.stderr


def test_a_three_times_slower_rank_is_named_as_the_straggler() -> None:
    run = _run("slow", "--monitor", steps=12)
    assert run.returncode == 0, run.stderr
    found = re.search(r"monitor: stragglers: rank 1 \(host localhost\) "
                      r"arrived last in (\d+) % of (\d+) collectives",
                      run.stderr)
    assert found, run.stderr
    assert int(found.group(1)) >= 75, run.stderr
    assert int(found.group(2)) >= 36, run.stderr


def test_ranks_out_of_step_end_naming_the_rank_that_left() -> None:
    run = _run("out-of-step")
    assert run.returncode == 1, run.stderr
    assert re.search(r"\[1\]<stderr>:.*waited for the job's ranks: rank 0 "
                     r"\(host localhost\) (exited with status 0 after "
                     r"generation 1|is still in generation 1)",
                     run.stderr), run.stderr
    assert ("horovodrun: rank 0 (host localhost) exited with status 0 after "
            "generation 1, but rank 1 (host localhost) joined generation 2 "
            "and waits for it there") in run.stderr, run.stderr
