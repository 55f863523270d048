"""Gradient compression on the wire, as Horovod's ``Compression``."""

from typing import Any, Tuple

import torch


class Compressor:
    """Turns a tensor into what is sent, and the received one back."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        raise NotImplementedError

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 (half the bytes)."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        dtype = tensor.dtype
        if dtype.is_floating_point and dtype != torch.float16:
            return tensor.type(torch.float16), dtype
        return tensor, dtype

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        if ctx is not None and ctx.is_floating_point and tensor.dtype != ctx:
            return tensor.type(ctx)
        return tensor


class Compression:
    """The compressors by name: ``Compression.none``, ``Compression.fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor
