"""Allgather, broadcast, alltoall and the sparse allreduce (built on
allgathers) on torch tensors, with Horovod's gradients."""

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import torch

from hvd import _core
from hvd.common.basics import rank, size
from hvd.common.process_sets import ProcessSet, _set_id, global_process_set
from hvd.torch._allreduce import allreduce
from hvd.torch._common import (Average, Sum, _Handles, _device, _dtype_code,
                               _from_output, _handles, _host, _name,
                               _register, synchronize)


# ---------------------------------------------------------------- allgather


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
