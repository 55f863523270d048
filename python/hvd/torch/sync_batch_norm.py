"""Batch normalisation with statistics over every rank's batch."""

from typing import Any, Optional, Tuple

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from hvd.torch.mpi_ops import allreduce, size, Sum


def _stats_shape(x: torch.Tensor) -> Tuple[int, ...]:
    return (1, x.shape[1]) + (1,) * (x.dim() - 2)


def _reduce_dims(x: torch.Tensor) -> Tuple[int, ...]:
    return (0,) + tuple(range(2, x.dim()))


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    """Half types compute their statistics in float32; others in their own."""
    if x.dtype in (torch.float16, torch.bfloat16):
        return torch.float32
    return x.dtype


class _SyncBatchNormFunction(torch.autograd.Function):
    """Normalises with the mean and variance of the global batch; the
    backward pass sums its two per-channel reductions over ranks too."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: Optional[torch.Tensor],
                bias: Optional[torch.Tensor], eps: float,
                name: str) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                    torch.Tensor]:
        dims = _reduce_dims(x)
        cdt = _compute_dtype(x)
        xf = x.to(cdt)
        local_count = float(x.numel() // x.shape[1])
        # One allreduce: the count, then the sums, then the sums of squares.
        packed = torch.cat([
            torch.tensor([local_count], dtype=cdt),
            xf.sum(dim=dims),
            (xf * xf).sum(dim=dims),
        ])
        packed = allreduce(packed, op=Sum, name=name + ".stats")
        c = x.shape[1]
        count = packed[0]
        mean = packed[1:1 + c] / count
        var = (packed[1 + c:] / count - mean * mean).clamp_min(0)
        invstd = torch.rsqrt(var + eps)
        shape = _stats_shape(x)
        xhat = (xf - mean.view(shape)) * invstd.view(shape)
        y = xhat
        if weight is not None:
            y = y * weight.to(cdt).view(shape)
        if bias is not None:
            y = y + bias.to(cdt).view(shape)
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.count = count
        ctx.has_bias = bias is not None
        ctx.name = name
        ctx.mark_non_differentiable(mean, var, count)
        return y.to(x.dtype), mean, var, count

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor, *unused: Any) -> Tuple[Any, ...]:
        xhat, invstd, weight = ctx.saved_tensors
        dims = _reduce_dims(dy)
        shape = _stats_shape(dy)
        dyf = dy.to(xhat.dtype)
        sum_dy = dyf.sum(dim=dims)
        sum_dy_xhat = (dyf * xhat).sum(dim=dims)
        # Weight and bias gradients stay local sums: the optimizer averages
        # them over ranks like every other gradient.
        grad_weight = sum_dy_xhat if weight is not None else None
        grad_bias = sum_dy if ctx.has_bias else None
        c = dy.shape[1]
        both = allreduce(torch.cat([sum_dy, sum_dy_xhat]), op=Sum,
                         name=ctx.name + ".grad")
        mean_dy = (both[:c] / ctx.count).view(shape)
        mean_dy_xhat = (both[c:] / ctx.count).view(shape)
        scale = invstd.view(shape)
        if weight is not None:
            scale = scale * weight.to(xhat.dtype).view(shape)
        dx = scale * (dyf - mean_dy - xhat * mean_dy_xhat)
        return (dx.to(dy.dtype), grad_weight, grad_bias, None, None)


class SyncBatchNorm(_BatchNorm):
    """BatchNorm whose statistics in training are those of the batch of
    every rank together (Horovod's ``hvd.SyncBatchNorm``); in evaluation, or
    with one rank, it is the usual batch normalisation."""

    _count = 0

    def __init__(self, num_features: int, eps: float = 1e-5,
                 momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine,
                         track_running_stats)
        SyncBatchNorm._count += 1
        self._name = f"sync_batch_norm.{SyncBatchNorm._count}"
        self._calls = 0

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(
                f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(input)
        if not self.training or size() == 1:
            return super().forward(input)
        if self.momentum is None:
            factor = 0.0
        else:
            factor = self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        self._calls += 1
        y, mean, var, count = _SyncBatchNormFunction.apply(
            input, self.weight, self.bias, self.eps,
            f"{self._name}.{self._calls}")
        if self.track_running_stats:
            with torch.no_grad():
                n = float(count)
                unbiased = var * (n / max(n - 1.0, 1.0))
                self.running_mean.mul_(1 - factor).add_(
                    mean.to(self.running_mean.dtype), alpha=factor)
                self.running_var.mul_(1 - factor).add_(
                    unbiased.to(self.running_var.dtype), alpha=factor)
        return y
