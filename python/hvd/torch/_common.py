"""What every collective of hvd.torch shares: Horovod's reduction ops,
libhvd's types, the operations' names, and the handles that ``poll`` and
``synchronize`` take (mpi_ops.py says how tensors reach libhvd)."""

import itertools
import warnings
from typing import Any, Callable, Dict, List, Optional

import torch

from hvd import _core
from hvd.common.process_sets import (ProcessSet, _on_shutdown, _set_id,
                                     global_process_set)

# Reduction ops, with Horovod's values.
Average = 0
Sum = 1
Adasum = 2
Min = 3
Max = 4
Product = 5

# Horovod's op -> libhvd's (hvd::ReduceOp, bound by name in hvd._core).
_CORE_OP = {Average: _core.ReduceOp.Average, Sum: _core.ReduceOp.Sum,
            Min: _core.ReduceOp.Min, Max: _core.ReduceOp.Max,
            Product: _core.ReduceOp.Product, Adasum: _core.ReduceOp.Adasum}
_OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min",
             Max: "Max", Product: "Product"}

# torch dtype -> libhvd's (hvd::DataType), by the same names.
_DTYPE = {getattr(torch, name): value
          for name, value in _core.DataType.__members__.items()}


class _Entry:
    """A submitted operation: libhvd's op, what must stay alive until it is
    done, and how its result becomes what synchronize() returns."""

    __slots__ = ("op", "keep", "finish")

    def __init__(self, op: Any, keep: Any,
                 finish: Callable[[], Any]) -> None:
        self.op = op
        self.keep = keep
        self.finish = finish


_handle_map: Dict[int, _Entry] = {}
_handles = itertools.count()
_unnamed: Dict[int, "itertools.count[int]"] = {}
# Barriers are numbered per process set (see barrier()).
_barriers: Dict[int, "itertools.count[int]"] = {}
_on_shutdown.append(_unnamed.clear)
# Operations of a job left behind: they completed with an error at
# shutdown, and nothing will wait for them now.
_on_shutdown.append(_handle_map.clear)
_on_shutdown.append(_barriers.clear)


def _dtype_code(tensor: torch.Tensor) -> "_core.DataType":
    code = _DTYPE.get(tensor.dtype)
    if code is None:
        raise ValueError(f"Tensor type {tensor.type()} is not supported.")
    return code


def _device(tensor: torch.Tensor) -> int:
    """libhvd's device of `tensor`. For a CUDA tensor, first waits for the
    work torch has queued on it: NCCL runs on libhvd's own streams, which
    would not otherwise wait for the kernels that produce the data."""
    if not tensor.is_cuda:
        return -1
    torch.cuda.current_stream(tensor.device).synchronize()
    return tensor.device.index


def _resolve_op(op: Optional[int], average: Optional[bool],
                default: int = Average) -> int:
    if op is not None and average is not None:
        raise ValueError("The op parameter supersedes average. "
                         "Please provide only one of them.")
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and "
                      "will be removed", DeprecationWarning)
        op = Average if average else Sum
    if op is None:
        op = default
    if op not in _CORE_OP:
        raise ValueError(f"unknown reduction op {op!r}: use hvd.Average, "
                         "hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max or "
                         "hvd.Product")
    return op


def _name(prefix: str, name: Optional[str], process_set: int) -> str:
    """``<prefix>.<name>``, or ``<prefix>.noname.<n>`` where n counts this
    process set's unnamed operations (alike on its members when they make
    them in the same order; other sets' operations do not shift it)."""
    if name is None:
        count = _unnamed.setdefault(process_set, itertools.count())
        return f"{prefix}.noname.{next(count)}"
    return f"{prefix}.{name}"


def _register(op: Any, keep: Any, finish: Callable[[], Any],
              handle: int) -> int:
    _handle_map[handle] = _Entry(op, keep, finish)
    return handle


def _from_output(op: Any, dtype: torch.dtype,
                 device: torch.device) -> torch.Tensor:
    """The tensor over libhvd's output bytes (no copy on the host)."""
    data, shape = op.take_output()
    if len(data) == 0:
        out = torch.empty(shape, dtype=dtype)
    else:
        out = torch.frombuffer(data, dtype=dtype).view(shape)
    return out if device.type == "cpu" else out.to(device)


def _host(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous host tensor with `tensor`'s values (itself when it is
    one): libhvd gathers, scatters and exchanges host memory."""
    if tensor.is_cuda:
        tensor = tensor.cpu()
    return tensor if tensor.is_contiguous() else tensor.contiguous()


class _Handles:
    """Several handles of this module behind one."""

    __slots__ = ("handles",)

    def __init__(self, handles: List[int]) -> None:
        self.handles = handles

    def poll(self) -> bool:
        return all(poll(h) for h in self.handles)

    def wait(self) -> None:
        pass  # finish() synchronizes each


# ------------------------------------------------------------------ control


def poll(handle: int) -> bool:
    """True once the operation of `handle` is done (never blocks)."""
    entry = _handle_map.get(handle)
    if entry is None:
        raise ValueError(f"unknown handle {handle}: it was never returned by "
                         "an operation or was already synchronized")
    return entry.op.poll()


def synchronize(handle: int) -> Any:
    """Waits for the operation of `handle` and returns its result; raises
    HorovodInternalError when the collective failed. None for a handle
    that is not pending."""
    entry = _handle_map.pop(handle, None)
    if entry is None:
        return None
    entry.op.wait()
    return entry.finish()


def join(device: int = -1) -> int:
    """Says this rank has no more data: until every rank has joined, the
    others' allreduces go on with zeros in its place. Returns the last rank
    to join."""
    op = _core.join()
    op.wait()
    return int(op.value())


def barrier(process_set: ProcessSet = global_process_set) -> None:
    """Returns once every rank has called it."""
    ps = _set_id(process_set)
    # Numbered by barriers alone: ranks may have made different numbers of
    # other operations (after a join, say), but every rank makes each
    # barrier.
    count = _barriers.setdefault(ps, itertools.count())
    _core.barrier(f"barrier.{next(count)}", ps).wait()
