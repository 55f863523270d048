"""Allreduce and grouped allreduce on torch tensors, with Horovod's
gradients."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from hvd import _core
from hvd.common.process_sets import ProcessSet, _set_id, global_process_set
from hvd.torch._common import (Adasum, _CORE_OP, _device, _dtype_code,
                               _handles, _name, _register, _resolve_op,
                               synchronize)
from hvd.torch.compression import Compression


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
