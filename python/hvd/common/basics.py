"""Joining the job and asking where this process stands in it."""

import os
from typing import Optional, Sequence

from hvd import _core

_NOT_INITIALIZED = "Horovod has not been initialized; use hvd.init()."
# Horovod's rule: start_timeline() works when HOROVOD_TIMELINE was set as
# the job joined (a file, or DYNAMIC to start recording later).
_timeline_set_at_init = False

# A collective's submission site in the flight recorder is the innermost
# frame outside hvd's own package (and the frameworks', added by theirs).
_core.add_library_dir(os.path.dirname(os.path.dirname(__file__)) + os.sep)

# Every Python thread's stack goes with each flight recorder dump:
# faulthandler writes them to a memory file when libhvd raises this
# real-time signal on its dumping thread (one no library is known to use).
_STACK_SIGNAL_OFFSET = 6
_stack_file = None


def _arm_stack_dumps() -> None:
    global _stack_file
    if _stack_file is not None or not hasattr(os, "memfd_create"):
        return
    import faulthandler
    import signal
    try:
        sig = signal.SIGRTMIN + _STACK_SIGNAL_OFFSET
        stacks = os.fdopen(os.memfd_create("hvd-stacks", os.MFD_CLOEXEC), "w+")
        faulthandler.register(sig, file=stacks, all_threads=True, chain=False)
    except (OSError, ValueError, RuntimeError):
        return  # the dumps go without stacks
    _stack_file = stacks
    _core.set_stack_dump(stacks.fileno(), int(sig))


def init(comm: Optional[object] = None,
         process_sets: Optional[Sequence[object]] = None) -> None:
    """Joins the job horovodrun started (or runs alone as rank 0 of 1).

    ``comm`` is an MPI communicator in Horovod; hvd starts no MPI, so only
    None (or an empty list) is accepted. ``process_sets``: ProcessSet
    objects to register (every rank passes the same), or "dynamic" to allow
    add_process_set/remove_process_set later. Calling it again while
    initialised does nothing.
    """
    if comm not in (None, []):
        raise ValueError(
            "hvd.init(comm=...) takes no MPI communicator: hvd joins the job "
            "through horovodrun's rendezvous; call hvd.init() without comm")
    from hvd.common import process_sets as _ps
    _ps._check_init_argument(process_sets)
    ranks, dynamic = _ps._init_arguments(process_sets)
    if _core.is_initialized():
        return
    _core.init(ranks, dynamic)
    _arm_stack_dumps()
    global _timeline_set_at_init
    _timeline_set_at_init = bool(os.environ.get("HOROVOD_TIMELINE"))
    _ps._after_init(process_sets)


def shutdown() -> None:
    """Leaves the job; init() may join it again afterwards."""
    from hvd.common import process_sets as _ps
    _ps._before_shutdown()
    _core.shutdown()


def is_initialized() -> bool:
    return _core.is_initialized()


def _checked(value: int) -> int:
    if value < 0:
        raise ValueError(_NOT_INITIALIZED)
    return value


def rank() -> int:
    return _checked(_core.rank())


def size() -> int:
    return _checked(_core.size())


def local_rank() -> int:
    return _checked(_core.local_rank())


def local_size() -> int:
    return _checked(_core.local_size())


def cross_rank() -> int:
    return _checked(_core.cross_rank())


def cross_size() -> int:
    return _checked(_core.cross_size())


def is_homogeneous() -> bool:
    """True when every host runs the same number of ranks."""
    _checked(_core.size())
    return _core.size() == _core.local_size() * _core.cross_size()


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """Records the timeline into ``file_path`` from now on (rank 0 writes).

    As in Horovod, the job must have joined with HOROVOD_TIMELINE set (to a
    file, or to DYNAMIC to record only between start and stop)."""
    _checked(_core.size())
    if not _timeline_set_at_init:
        raise ValueError(
            "Set HOROVOD_TIMELINE=DYNAMIC to enable dynamic timeline usage.")
    _core.start_timeline(file_path, mark_cycles)


def stop_timeline() -> None:
    _checked(_core.size())
    _core.stop_timeline()


# What this build has, answered as Horovod answers for a Gloo build: hvd's
# collectives run on its own shared memory, Gloo and NCCL; it never runs
# MPI, DDL, oneCCL or ROCm.
def mpi_threads_supported() -> bool:
    raise ValueError("Horovod MPI is not enabled; Please make sure it's "
                     "installed and enabled.")


def mpi_enabled() -> bool:
    return False


def mpi_built() -> bool:
    return False


def gloo_enabled() -> bool:
    return True


def gloo_built() -> bool:
    return True


def nccl_built() -> int:
    """The NCCL version this build has (NCCL_VERSION_CODE, e.g. 22809 for
    2.28.9), 0 without NCCL: code compares it with versions."""
    return int(_core.nccl_built)


def ddl_built() -> bool:
    return False


def ccl_built() -> bool:
    return False


def cuda_built() -> bool:
    return _core.nccl_built > 0


def rocm_built() -> bool:
    return False
