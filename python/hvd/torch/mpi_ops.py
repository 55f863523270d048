"""Horovod's collectives on torch tensors, over libhvd.

Tensors reach libhvd as views of torch's memory: an in-place operation
works in the tensor itself, an out-of-place one in a fresh output tensor,
and the outputs libhvd sizes itself (allgather, alltoall, reducescatter)
are handed over without a copy (``torch.frombuffer`` on libhvd's bytes).

Every operation returns a handle (an int) for ``poll`` and ``synchronize``,
as Horovod's do. Names: ``<op>.<name>``, or ``<op>.noname.<n>`` when none
is given, n counting the process set's unnamed operations, so unnamed
operations must be called in the same order on every member.
"""

import itertools
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from hvd import _core
from hvd.common.basics import (ccl_built, cross_rank, cross_size, cuda_built,
                               ddl_built, gloo_built, gloo_enabled, init,
                               is_homogeneous, is_initialized, local_rank,
                               local_size, mpi_built, mpi_enabled,
                               mpi_threads_supported, nccl_built, rank,
                               rocm_built, shutdown, size, start_timeline,
                               stop_timeline)
from hvd.common.exceptions import HorovodInternalError
from hvd.common.process_sets import (ProcessSet, add_process_set,
                                     global_process_set, remove_process_set)
from hvd.common.process_sets import _on_shutdown, _set_id
from hvd.torch.compression import Compression

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


# ---------------------------------------------------------------- allreduce


def empty_shared(*size: int, dtype: torch.dtype = torch.float32
                 ) -> torch.Tensor:
    """A zeroed CPU tensor in memory the ranks of a host reduce between
    directly (hvd::alloc_shared): when every rank of a host allreduces such
    a tensor in place, each reads its peers' tensors and writes the result
    into all of them, with no copy through shared segments. hvd's own, not
    Horovod's. The shape as torch.empty takes it: ints, or one sequence."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    shape = torch.Size(size)
    count = shape.numel()
    if count == 0:
        return torch.zeros(shape, dtype=dtype)
    itemsize = torch.empty((), dtype=dtype).element_size()
    buffer = _core.SharedBuffer(count * itemsize)
    return torch.frombuffer(buffer, dtype=dtype, count=count).view(shape)



def _work(tensor: torch.Tensor, output: torch.Tensor,
          op: int) -> torch.Tensor:
    """The memory libhvd reduces `tensor` in: `output` itself where it can
    (in place), else a contiguous copy that is copied back after. Adasum
    combines on the host, so a CUDA tensor goes through a host copy."""
    if op == Adasum and output.is_cuda:
        return tensor.detach().cpu().contiguous()
    work = output if output.is_contiguous() else output.contiguous()
    if output is not tensor:
        work.copy_(tensor)
    return work


def _allreduce_async(tensor: torch.Tensor, output: torch.Tensor,
                     name: Optional[str], op: int, prescale_factor: float,
                     postscale_factor: float,
                     process_set: ProcessSet) -> int:
    """Reduces into `output` (`tensor` itself when in place)."""
    ps = _set_id(process_set)
    handle = next(_handles)
    work = _work(tensor, output, op)
    core = _core.allreduce(_name("allreduce", name, ps), work.data_ptr(),
                           _dtype_code(work), list(work.shape), _device(work),
                           _CORE_OP[op], float(prescale_factor),
                           float(postscale_factor), ps)
    if work is output:
        return _register(core, (tensor, output), lambda: output, handle)

    def finish() -> torch.Tensor:
        output.copy_(work)
        return output
    return _register(core, (tensor, output, work), finish, handle)


def allreduce_async(tensor: torch.Tensor, average: Optional[bool] = None,
                    name: Optional[str] = None, op: Optional[int] = None,
                    prescale_factor: float = 1.0,
                    postscale_factor: float = 1.0,
                    process_set: ProcessSet = global_process_set) -> int:
    """Starts reducing `tensor` over ranks into a new tensor; the input is
    not modified. Returns a handle for poll() and synchronize()."""
    op = _resolve_op(op, average)
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _allreduce_async(tensor, output, name, op, prescale_factor,
                            postscale_factor, process_set)


def allreduce_async_(tensor: torch.Tensor, average: Optional[bool] = None,
                     name: Optional[str] = None, op: Optional[int] = None,
                     prescale_factor: float = 1.0,
                     postscale_factor: float = 1.0,
                     process_set: ProcessSet = global_process_set) -> int:
    """Starts reducing `tensor` over ranks in place."""
    op = _resolve_op(op, average)
    return _allreduce_async(tensor, tensor, name, op, prescale_factor,
                            postscale_factor, process_set)


class HorovodAllreduce(torch.autograd.Function):
    """Allreduce with a gradient: the gradient is reduced the same way."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str], op: int,
                prescale_factor: float, postscale_factor: float,
                process_set: ProcessSet) -> torch.Tensor:
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        ctx.process_set = process_set
        return synchronize(allreduce_async(tensor, None, name, op,
                                           prescale_factor, postscale_factor,
                                           process_set))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = allreduce(grad_output, op=ctx.op,
                         prescale_factor=ctx.prescale_factor,
                         postscale_factor=ctx.postscale_factor,
                         process_set=ctx.process_set)
        return grad, None, None, None, None, None


def allreduce(tensor: torch.Tensor, average: Optional[bool] = None,
              name: Optional[str] = None, compression: Any = Compression.none,
              op: Optional[int] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0,
              process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Reduces `tensor` over ranks (Average by default) into a new tensor,
    with a gradient if `tensor` requires one."""
    op = _resolve_op(op, average)
    compressed, ctx = compression.compress(tensor)
    reduced = HorovodAllreduce.apply(compressed, name, op, prescale_factor,
                                     postscale_factor, process_set)
    return compression.decompress(reduced, ctx)


def allreduce_(tensor: torch.Tensor, average: Optional[bool] = None,
               name: Optional[str] = None, op: Optional[int] = None,
               prescale_factor: float = 1.0, postscale_factor: float = 1.0,
               process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Reduces `tensor` over ranks in place and returns it."""
    return synchronize(allreduce_async_(tensor, average, name, op,
                                        prescale_factor, postscale_factor,
                                        process_set))


# -------------------------------------------------------- grouped allreduce


def _grouped_allreduce_async(tensors: Sequence[torch.Tensor],
                             outputs: Sequence[torch.Tensor],
                             name: Optional[str], op: int,
                             prescale_factor: float, postscale_factor: float,
                             process_set: ProcessSet) -> int:
    ps = _set_id(process_set)
    if len(tensors) == 0:
        raise ValueError("grouped_allreduce needs at least one tensor")
    handle = next(_handles)
    base = _name("grouped_allreduce", name, ps)
    works = [_work(t, o, op) for t, o in zip(tensors, outputs)]
    # libhvd groups one dtype on one device per call: a mixed list becomes
    # one group per kind, in order of first appearance (alike on every rank).
    kinds: Dict[Tuple[int, int], List[int]] = {}
    for i, w in enumerate(works):
        kinds.setdefault((_dtype_code(w), _device(w)), []).append(i)
    ops = []
    for k, ((dtype, device), idx) in enumerate(kinds.items()):
        group_name = base if len(kinds) == 1 else f"{base}.{k}"
        ops.extend(_core.grouped_allreduce(
            group_name, [works[i].data_ptr() for i in idx], dtype,
            [list(works[i].shape) for i in idx], device, _CORE_OP[op],
            float(prescale_factor), float(postscale_factor), ps))

    def finish() -> List[torch.Tensor]:
        for o, w in zip(outputs, works):
            if w is not o:
                o.copy_(w)
        return list(outputs)
    return _register(_Group(ops), (tensors, outputs, works), finish, handle)


class _Group:
    """Several libhvd ops behind one handle."""

    __slots__ = ("ops",)

    def __init__(self, ops: List[Any]) -> None:
        self.ops = ops

    def poll(self) -> bool:
        return all(o.poll() for o in self.ops)

    def wait(self) -> None:
        for o in self.ops:
            o.wait()


def grouped_allreduce_async(tensors: Sequence[torch.Tensor],
                            average: Optional[bool] = None,
                            name: Optional[str] = None,
                            op: Optional[int] = None,
                            prescale_factor: float = 1.0,
                            postscale_factor: float = 1.0,
                            process_set: ProcessSet = global_process_set
                            ) -> int:
    """Starts reducing a list of tensors as one group into new tensors."""
    op = _resolve_op(op, average)
    outputs = [torch.empty_like(t, memory_format=torch.contiguous_format)
               for t in tensors]
    return _grouped_allreduce_async(tensors, outputs, name, op,
                                    prescale_factor, postscale_factor,
                                    process_set)


def grouped_allreduce_async_(tensors: Sequence[torch.Tensor],
                             average: Optional[bool] = None,
                             name: Optional[str] = None,
                             op: Optional[int] = None,
                             prescale_factor: float = 1.0,
                             postscale_factor: float = 1.0,
                             process_set: ProcessSet = global_process_set
                             ) -> int:
    """Starts reducing a list of tensors as one group, in place."""
    op = _resolve_op(op, average)
    return _grouped_allreduce_async(tensors, tensors, name, op,
                                    prescale_factor, postscale_factor,
                                    process_set)


class HorovodGroupedAllreduce(torch.autograd.Function):
    """Grouped allreduce with gradients reduced the same way."""

    @staticmethod
    def forward(ctx: Any, name: Optional[str], op: int, prescale_factor: float,
                postscale_factor: float, process_set: ProcessSet,
                *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allreduce_async(
            tensors, None, name, op, prescale_factor, postscale_factor,
            process_set)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Any, ...]:
        reduced = grouped_allreduce(list(grads), op=ctx.op,
                                    prescale_factor=ctx.prescale_factor,
                                    postscale_factor=ctx.postscale_factor,
                                    process_set=ctx.process_set)
        return (None, None, None, None, None, *reduced)


def grouped_allreduce(tensors: Sequence[torch.Tensor],
                      average: Optional[bool] = None,
                      name: Optional[str] = None,
                      compression: Any = Compression.none,
                      op: Optional[int] = None, prescale_factor: float = 1.0,
                      postscale_factor: float = 1.0,
                      process_set: ProcessSet = global_process_set
                      ) -> List[torch.Tensor]:
    """Reduces a list of tensors as one group (fused where they allow)."""
    op = _resolve_op(op, average)
    pairs = [compression.compress(t) for t in tensors]
    reduced = HorovodGroupedAllreduce.apply(
        name, op, prescale_factor, postscale_factor, process_set,
        *[p[0] for p in pairs])
    return [compression.decompress(r, p[1]) for r, p in zip(reduced, pairs)]


def grouped_allreduce_(tensors: Sequence[torch.Tensor],
                       average: Optional[bool] = None,
                       name: Optional[str] = None, op: Optional[int] = None,
                       prescale_factor: float = 1.0,
                       postscale_factor: float = 1.0,
                       process_set: ProcessSet = global_process_set
                       ) -> List[torch.Tensor]:
    """Reduces a list of tensors as one group, in place."""
    return synchronize(grouped_allreduce_async_(
        tensors, average, name, op, prescale_factor, postscale_factor,
        process_set))


# ---------------------------------------------------------------- allgather


def _host(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous host tensor with `tensor`'s values (itself when it is
    one): libhvd gathers, scatters and exchanges host memory."""
    if tensor.is_cuda:
        tensor = tensor.cpu()
    return tensor if tensor.is_contiguous() else tensor.contiguous()


def allgather_async(tensor: torch.Tensor, name: Optional[str] = None,
                    process_set: ProcessSet = global_process_set) -> int:
    """Starts concatenating every rank's `tensor` along the first
    dimension (which may differ per rank)."""
    ps = _set_id(process_set)
    handle = next(_handles)
    work = _host(tensor)
    core = _core.allgather(_name("allgather", name, ps), work.data_ptr(),
                           _dtype_code(work), list(work.shape) or [1], -1, ps)
    dtype, device = tensor.dtype, tensor.device
    return _register(core, work,
                     lambda: _from_output(core, dtype, device), handle)


def _allgather_grad(grad_output: torch.Tensor, rows: int,
                    process_set: ProcessSet) -> torch.Tensor:
    """Horovod's gradient of an allgather: the gradient averaged over the
    ranks, cut back to this rank's rows."""
    grad = allreduce(grad_output, op=Average, process_set=process_set)
    counts = allgather(torch.tensor([rows], dtype=torch.int64),
                       process_set=process_set)
    me = process_set.rank() if process_set.ranks else rank()
    return grad.narrow(0, int(counts[:me].sum()), rows)


class HorovodAllgather(torch.autograd.Function):
    """Allgather with Horovod's gradient (_allgather_grad)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str],
                process_set: ProcessSet) -> torch.Tensor:
        ctx.dim = tensor.shape[0] if tensor.dim() > 0 else 1
        ctx.process_set = process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        return (_allgather_grad(grad_output, ctx.dim, ctx.process_set), None,
                None)


def allgather(tensor: torch.Tensor, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Every rank's `tensor` concatenated along the first dimension."""
    return HorovodAllgather.apply(tensor, name, process_set)


def grouped_allgather_async(tensors: Sequence[torch.Tensor],
                            name: Optional[str] = None,
                            process_set: ProcessSet = global_process_set
                            ) -> int:
    """Starts an allgather of each tensor of the list."""
    handle = next(_handles)
    base = _name("grouped_allgather", name, _set_id(process_set))
    inner = [allgather_async(t, f"{base}.{i}", process_set)
             for i, t in enumerate(tensors)]
    return _register(_Handles(inner), None,
                     lambda: [synchronize(h) for h in inner], handle)


class _Handles:
    """Several handles of this module behind one."""

    __slots__ = ("handles",)

    def __init__(self, handles: List[int]) -> None:
        self.handles = handles

    def poll(self) -> bool:
        return all(poll(h) for h in self.handles)

    def wait(self) -> None:
        pass  # finish() synchronizes each


class HorovodGroupedAllgather(torch.autograd.Function):
    """A grouped allgather with each tensor's allgather gradient."""

    @staticmethod
    def forward(ctx: Any, name: Optional[str], process_set: ProcessSet,
                *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        ctx.rows = [t.shape[0] if t.dim() > 0 else 1 for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allgather_async(
            list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Any, ...]:
        return (None, None) + tuple(
            _allgather_grad(g, rows, ctx.process_set)
            for g, rows in zip(grads, ctx.rows))


def grouped_allgather(tensors: Sequence[torch.Tensor],
                      name: Optional[str] = None,
                      process_set: ProcessSet = global_process_set
                      ) -> List[torch.Tensor]:
    return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))


def sparse_allreduce_async(tensor: torch.Tensor, name: str, op: int,
                           process_set: ProcessSet = global_process_set
                           ) -> Callable[[], torch.Tensor]:
    """Starts reducing a sparse (COO) tensor as Horovod does: every rank's
    indices and values are gathered (allgather), and the sum (or, for
    Average, the sum over the set's size) is the sparse tensor of all of
    them, duplicates left to coalesce. Returns a function that waits and
    gives the result."""
    if op not in (Average, Sum):
        raise ValueError("sparse_allreduce_async takes op=hvd.Average or "
                         "hvd.Sum")
    t = tensor.coalesce() if not tensor.is_coalesced() else tensor
    # Allgather concatenates along the first dimension: the indices go
    # one per row, and back once gathered.
    indices = allgather_async(t.indices().t().contiguous(),
                              name=f"{name}.indices", process_set=process_set)
    values = allgather_async(t.values(), name=f"{name}.values",
                             process_set=process_set)

    def result() -> torch.Tensor:
        v = synchronize(values)
        i = synchronize(indices)
        if op == Average:
            n = process_set.size() if process_set.ranks else size()
            v = v / n
        return torch.sparse_coo_tensor(i.t(), v, t.size())

    return result


# ---------------------------------------------------------------- broadcast


def _broadcast_async(tensor: torch.Tensor, output: torch.Tensor,
                     root_rank: int, name: Optional[str],
                     process_set: ProcessSet) -> int:
    ps = _set_id(process_set)
    handle = next(_handles)
    work = output if output.is_contiguous() else output.contiguous()
    if output is not tensor:
        work.copy_(tensor)
    core = _core.broadcast(_name("broadcast", name, ps), work.data_ptr(),
                           _dtype_code(work), list(work.shape) or [1],
                           _device(work), int(root_rank), ps)
    if work is output:
        return _register(core, (tensor, output), lambda: output, handle)

    def finish() -> torch.Tensor:
        output.copy_(work)
        return output
    return _register(core, (tensor, output, work), finish, handle)


def broadcast_async(tensor: torch.Tensor, root_rank: int,
                    name: Optional[str] = None,
                    process_set: ProcessSet = global_process_set) -> int:
    """Starts copying root_rank's `tensor` into a new tensor on every rank."""
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _broadcast_async(tensor, output, root_rank, name, process_set)


def broadcast_async_(tensor: torch.Tensor, root_rank: int,
                     name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> int:
    """Starts copying root_rank's `tensor` into every rank's, in place."""
    return _broadcast_async(tensor, tensor, root_rank, name, process_set)


class HorovodBroadcast(torch.autograd.Function):
    """Broadcast with Horovod's gradient: the gradient averaged over the
    ranks, on the root only (zero elsewhere)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, root_rank: int,
                name: Optional[str],
                process_set: ProcessSet) -> torch.Tensor:
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(broadcast_async(tensor, root_rank, name,
                                           process_set))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:  # root_rank is a rank of the job
            grad = grad * 0
        return grad, None, None, None


def broadcast(tensor: torch.Tensor, root_rank: int,
              name: Optional[str] = None,
              process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """root_rank's `tensor` as a new tensor on every rank."""
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


def broadcast_(tensor: torch.Tensor, root_rank: int,
               name: Optional[str] = None,
               process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Copies root_rank's `tensor` into every rank's, in place."""
    return synchronize(broadcast_async_(tensor, root_rank, name,
                                        process_set))


# ----------------------------------------------------------------- alltoall


def alltoall_async(tensor: torch.Tensor,
                   splits: Optional[Union[torch.Tensor, Sequence[int]]] = None,
                   name: Optional[str] = None,
                   process_set: ProcessSet = global_process_set) -> int:
    """Starts sending splits[r] first-dimension rows of `tensor` to rank r
    (equal parts when splits is None). synchronize() returns the received
    rows and the number received from each rank."""
    ps = _set_id(process_set)
    handle = next(_handles)
    work = _host(tensor)
    n = _core.process_set_size(ps)
    rows = work.shape[0] if work.dim() > 0 else 1
    if splits is None:
        if n <= 0:
            raise ValueError("Horovod has not been initialized; use hvd.init().")
        if rows % n != 0:
            raise ValueError(
                f"alltoall without splits needs a first dimension divisible "
                f"by the number of ranks ({rows} rows, {n} ranks)")
        split_list = [rows // n] * n
    elif isinstance(splits, torch.Tensor):
        if splits.dtype != torch.int32:  # as Horovod: no silent rounding
            raise ValueError(f"alltoall's splits must be a torch.int32 "
                             f"tensor, not {splits.dtype}")
        split_list = [int(s) for s in splits.reshape(-1).tolist()]
    else:
        split_list = [int(s) for s in splits]
    core = _core.alltoall(_name("alltoall", name, ps), work.data_ptr(),
                          _dtype_code(work), list(work.shape) or [1], -1,
                          split_list, ps)
    dtype, device = tensor.dtype, tensor.device

    def finish() -> Tuple[torch.Tensor, torch.Tensor]:
        received = torch.tensor(core.received_splits(), dtype=torch.int32)
        return _from_output(core, dtype, device), received
    return _register(core, work, finish, handle)


class HorovodAlltoall(torch.autograd.Function):
    """Alltoall with a gradient: the gradient sent back where it came from."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, splits: Any,
                name: Optional[str],
                process_set: ProcessSet) -> Tuple[torch.Tensor, torch.Tensor]:
        ctx.process_set = process_set
        output, received = synchronize(alltoall_async(tensor, splits, name,
                                                      process_set))
        ctx.received = received
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor,
                 grad_received: Any) -> Tuple[Any, ...]:
        grad, _ = alltoall(grad_output, splits=ctx.received,
                           process_set=ctx.process_set)
        return grad, None, None, None


def alltoall(tensor: torch.Tensor,
             splits: Optional[Union[torch.Tensor, Sequence[int]]] = None,
             name: Optional[str] = None,
             process_set: ProcessSet = global_process_set) -> Any:
    """Exchanges first-dimension slices with every rank. Returns the
    received tensor, and with `splits` given also the rows received from
    each rank (an int32 tensor), as Horovod does."""
    output, received = HorovodAlltoall.apply(tensor, splits, name,
                                             process_set)
    if splits is None:
        return output
    return output, received


# ------------------------------------------------------------ reducescatter


def reducescatter_async(tensor: torch.Tensor, name: Optional[str] = None,
                        op: int = Average,
                        process_set: ProcessSet = global_process_set,
                        prescale_factor: float = 1.0,
                        postscale_factor: float = 1.0) -> int:
    """Starts reducing `tensor` over ranks and keeping this rank's block of
    first-dimension rows (the first rows % size ranks get one more)."""
    ps = _set_id(process_set)
    # Raised as Horovod raises them (its extension's errors come through
    # as HorovodInternalError, a RuntimeError).
    if op == Adasum:
        raise HorovodInternalError(
            "Reducescatter does not support Adasum: use hvd.Sum or "
            "hvd.Average")
    if tensor.dim() == 0:
        raise HorovodInternalError(
            "Reducescatter needs a tensor of at least one dimension (its "
            "rows are scattered); got a 0-d tensor")
    op = _resolve_op(op, None)
    handle = next(_handles)
    work = _host(tensor)
    core = _core.reducescatter(_name("reducescatter", name, ps),
                               work.data_ptr(), _dtype_code(work),
                               list(work.shape) or [1], -1, _CORE_OP[op],
                               float(prescale_factor), float(postscale_factor),
                               ps)
    dtype, device = tensor.dtype, tensor.device
    return _register(core, work,
                     lambda: _from_output(core, dtype, device), handle)


def _reducescatter_grad(grad_output: torch.Tensor, op: int, scale: float,
                        process_set: ProcessSet) -> torch.Tensor:
    """Horovod's gradient of a reducescatter: every rank's gradient
    gathered back, times the set's size for Sum (1 for Average), and the
    scale factors the forward applied."""
    grad = allgather(grad_output, process_set=process_set)
    n = process_set.size() if process_set.ranks else size()
    scale *= n if op == Sum else 1
    return grad * scale if scale != 1 else grad


class HorovodReducescatter(torch.autograd.Function):
    """Reducescatter with Horovod's gradient (_reducescatter_grad)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str], op: int,
                process_set: ProcessSet, prescale_factor: float,
                postscale_factor: float) -> torch.Tensor:
        ctx.op = op
        ctx.process_set = process_set
        ctx.scale = prescale_factor * postscale_factor
        return synchronize(reducescatter_async(tensor, name, op, process_set,
                                               prescale_factor,
                                               postscale_factor))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = _reducescatter_grad(grad_output, ctx.op, ctx.scale,
                                   ctx.process_set)
        return grad, None, None, None, None, None


def reducescatter(tensor: torch.Tensor, name: Optional[str] = None,
                  compression: Any = Compression.none, op: int = Average,
                  process_set: ProcessSet = global_process_set,
                  prescale_factor: float = 1.0,
                  postscale_factor: float = 1.0) -> torch.Tensor:
    """This rank's block of the reduction of `tensor` over ranks."""
    compressed, ctx = compression.compress(tensor)
    out = HorovodReducescatter.apply(compressed, name, op, process_set,
                                     prescale_factor, postscale_factor)
    return compression.decompress(out, ctx)


def grouped_reducescatter_async(tensors: Sequence[torch.Tensor],
                                name: Optional[str] = None,
                                op: int = Average,
                                process_set: ProcessSet = global_process_set,
                                prescale_factor: float = 1.0,
                                postscale_factor: float = 1.0) -> int:
    """Starts a reducescatter of each tensor of the list."""
    handle = next(_handles)
    base = _name("grouped_reducescatter", name, _set_id(process_set))
    inner = [reducescatter_async(t, f"{base}.{i}", op, process_set,
                                 prescale_factor, postscale_factor)
             for i, t in enumerate(tensors)]
    return _register(_Handles(inner), None,
                     lambda: [synchronize(h) for h in inner], handle)


def grouped_reducescatter(tensors: Sequence[torch.Tensor],
                          name: Optional[str] = None,
                          compression: Any = Compression.none,
                          op: int = Average,
                          process_set: ProcessSet = global_process_set,
                          prescale_factor: float = 1.0,
                          postscale_factor: float = 1.0
                          ) -> List[torch.Tensor]:
    pairs = [compression.compress(t) for t in tensors]
    outs = HorovodGroupedReducescatter.apply(
        name, op, process_set, prescale_factor, postscale_factor,
        *[p[0] for p in pairs])
    return [compression.decompress(o, p[1]) for o, p in zip(outs, pairs)]


class HorovodGroupedReducescatter(torch.autograd.Function):
    """A grouped reducescatter with each tensor's reducescatter gradient."""

    @staticmethod
    def forward(ctx: Any, name: Optional[str], op: int,
                process_set: ProcessSet, prescale_factor: float,
                postscale_factor: float,
                *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        ctx.op = op
        ctx.process_set = process_set
        ctx.scale = prescale_factor * postscale_factor
        return tuple(synchronize(grouped_reducescatter_async(
            list(tensors), name, op, process_set, prescale_factor,
            postscale_factor)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Any, ...]:
        return (None,) * 5 + tuple(
            _reducescatter_grad(g, ctx.op, ctx.scale, ctx.process_set)
            for g in grads)


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


__all__ = [
    "Average", "Sum", "Adasum", "Min", "Max", "Product",
    "HorovodInternalError", "ProcessSet", "global_process_set",
    "add_process_set", "remove_process_set",
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank",
    "local_size", "cross_rank", "cross_size", "is_homogeneous",
    "start_timeline", "stop_timeline", "mpi_threads_supported",
    "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built", "nccl_built",
    "ddl_built", "ccl_built", "cuda_built", "rocm_built",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "allgather", "allgather_async",
    "grouped_allgather", "grouped_allgather_async", "broadcast",
    "broadcast_", "broadcast_async", "broadcast_async_", "alltoall",
    "alltoall_async", "reducescatter", "reducescatter_async",
    "grouped_reducescatter", "grouped_reducescatter_async", "poll",
    "sparse_allreduce_async",
    "synchronize", "join", "barrier", "Compression", "empty_shared",
]
