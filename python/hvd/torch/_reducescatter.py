"""Reducescatter and grouped reducescatter on torch tensors, with
Horovod's gradients."""

from typing import Any, List, Optional, Sequence, Tuple

import torch

from hvd import _core
from hvd.common.basics import size
from hvd.common.exceptions import HorovodInternalError
from hvd.common.process_sets import ProcessSet, _set_id, global_process_set
from hvd.torch._common import (Adasum, Average, Sum, _CORE_OP, _Handles,
                               _dtype_code, _from_output, _handles, _host,
                               _name, _register, _resolve_op, synchronize)
from hvd.torch._gather import allgather
from hvd.torch.compression import Compression


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
