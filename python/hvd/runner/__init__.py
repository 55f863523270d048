"""``horovod.run``: Horovod's Python launcher API on hvd's own horovodrun.

``run(func, args, kwargs, np=..., hosts=...)`` starts ``func(*args,
**kwargs)`` on every rank of a job that horovodrun launches, and returns
each rank's return value in rank order. The function travels pickled
(cloudpickle, so functions of ``__main__`` and lambdas do too), and each
rank's answer comes back the same way; a rank that raises sends its
exception back with its traceback, and ``run`` raises it.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# What each rank writes: (True, value) or (False, exception, traceback).
_RESULT = "rank.{}.result"


def _horovodrun() -> str:
    """The horovodrun that came with this package (a build tree or an
    installation), else the one on PATH."""
    given = os.environ.get("HVD_HOROVODRUN")
    if given:
        return given
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # build/python/hvd: build/launcher; PREFIX/lib/python3/dist-packages/hvd:
    # PREFIX/bin.
    for rel in ("../../launcher/horovodrun", "../../../../bin/horovodrun"):
        path = os.path.normpath(os.path.join(here, rel))
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("horovodrun")
    if found is None:
        raise RuntimeError("horovod.run: horovodrun is neither beside this "
                           "package nor on PATH; install hvd or add it to "
                           "PATH")
    return found


def _flags(np: int, hosts: Optional[str], hostfile: Optional[str],
           options: Dict[str, Any]) -> List[str]:
    """horovodrun's command line for Horovod's run() arguments."""
    flags = ["-np", str(np)]
    if hosts:
        flags += ["-H", hosts]
    if hostfile:
        flags += ["--hostfile", hostfile]
    valued = {"min_np": "--min-np", "max_np": "--max-np",
              "slots": "--slots-per-host", "reset_limit": "--reset-limit",
              "start_timeout": "--start-timeout", "ssh_port": "--ssh-port",
              "ssh_identity_file": "--ssh-identity-file",
              "output_filename": "--output-filename",
              "mpi_args": "--mpi-args",
              "network_interface": "--network-interface"}
    for key, flag in valued.items():
        if options.get(key) is not None:
            flags += [flag, str(options[key])]
    if options.get("cooldown_range") is not None:
        low, high = options["cooldown_range"]
        flags += ["--blacklist-cooldown-range", str(low), str(high)]
    for key, flag in (("verbose", "--verbose"), ("use_gloo", "--gloo"),
                      ("use_mpi", "--mpi")):
        if options.get(key):
            flags.append(flag)
    return flags


def _collect(folder: str, np: int) -> Tuple[List[Any], Optional[tuple]]:
    """Each rank's value in rank order, and the first failure (the lowest
    rank's), if any: (rank, exception, traceback)."""
    import cloudpickle
    values: List[Any] = []
    failure = None
    for r in range(np):
        path = os.path.join(folder, _RESULT.format(r))
        if not os.path.exists(path):
            values.append(None)
            continue
        with open(path, "rb") as f:
            answer = cloudpickle.load(f)
        if answer[0]:
            values.append(answer[1])
        else:
            values.append(None)
            if failure is None:
                failure = (r, answer[1], answer[2])
    return values, failure


def run(func: Callable[..., Any], args: Sequence[Any] = (),
        kwargs: Optional[Dict[str, Any]] = None, np: int = 1,
        min_np: Optional[int] = None, max_np: Optional[int] = None,
        slots: Optional[int] = None, reset_limit: Optional[int] = None,
        cooldown_range: Optional[Tuple[int, int]] = None,
        hosts: Optional[str] = None, hostfile: Optional[str] = None,
        start_timeout: Optional[int] = None, ssh_port: Optional[int] = None,
        ssh_identity_file: Optional[str] = None,
        disable_cache: Optional[bool] = None,
        output_filename: Optional[str] = None,
        verbose: Optional[bool] = None, use_gloo: Optional[bool] = None,
        use_mpi: Optional[bool] = None, mpi_args: Optional[str] = None,
        network_interface: Optional[str] = None,
        executable: Optional[str] = None) -> List[Any]:
    """Runs ``func(*args, **kwargs)`` on every rank of a new job and
    returns the ranks' return values, index = rank.

    Arguments as Horovod's run(); ``disable_cache`` is accepted and has
    nothing to do (hvd keeps no cache of host checks). ``executable``: the
    Python the ranks run (this one by default)."""
    import cloudpickle
    del disable_cache  # nothing to disable
    options = dict(min_np=min_np, max_np=max_np, slots=slots,
                   reset_limit=reset_limit, cooldown_range=cooldown_range,
                   start_timeout=start_timeout, ssh_port=ssh_port,
                   ssh_identity_file=ssh_identity_file,
                   output_filename=output_filename, verbose=verbose,
                   use_gloo=use_gloo, use_mpi=use_mpi, mpi_args=mpi_args,
                   network_interface=network_interface)
    with tempfile.TemporaryDirectory(prefix="hvd-run-") as folder:
        with open(os.path.join(folder, "func.pkl"), "wb") as f:
            cloudpickle.dump((func, tuple(args), dict(kwargs or {})), f)
        env = dict(os.environ)
        # The ranks import what the function refers to as this process does.
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        env["PYTHONPATH"] = os.pathsep.join(
            paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        command = ([_horovodrun()] + _flags(np, hosts, hostfile, options) +
                   [executable or sys.executable, "-m", "hvd.runner.task",
                    folder])
        done = subprocess.run(command, env=env, stdout=sys.stdout,
                              stderr=subprocess.PIPE, text=True)
        sys.stderr.write(done.stderr)
        values, failure = _collect(folder, np)
    if failure is not None:
        rank, error, trace = failure
        if isinstance(error, BaseException):
            error.add_note(f"raised on rank {rank} of horovod.run:\n{trace}")
            raise error
        raise RuntimeError(f"rank {rank} of horovod.run failed:\n{trace}")
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"horovod.run: horovodrun exited with status "
                           f"{done.returncode}: {last[0]}")
    return values
