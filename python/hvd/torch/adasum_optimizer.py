"""DistributedOptimizer(op=hvd.Adasum): Horovod's delta optimizer.

Adasum combines what each rank's optimizer would do, not the gradients:
as soon as a parameter's gradient is final (backward still running), the
wrapped optimizer steps that parameter alone on this rank, the change it
made (the delta) starts its Adasum allreduce, and the parameter goes back
to where the step began. ``step()`` waits for the combined deltas and adds
them. Momentum and the like stay per rank, as in Horovod.
"""

import contextlib
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch

from hvd.common.process_sets import ProcessSet, global_process_set
from hvd.torch.grad_hooks import GradientHooks
from hvd.torch.mpi_ops import Adasum, allreduce_async_, synchronize


class _DistributedAdasumOptimizer(GradientHooks):
    """Mixed in before the wrapped optimizer's class (DistributedOptimizer
    picks it for op=Adasum)."""

    def _setup(self, named: List[Tuple[str, torch.Tensor]], compression: Any,
               backward_passes_per_step: int,
               process_set: ProcessSet) -> None:
        self._compression = compression
        self._process_set = process_set
        self.backward_passes_per_step = backward_passes_per_step
        self._names: Dict[torch.Tensor, str] = {p: n for n, p in named}
        self._parameter_names = self._names
        params = [p for g in self.param_groups for p in g["params"]]
        self._delay: Dict[torch.Tensor, int] = {
            p: backward_passes_per_step for p in params}
        # Where each parameter's step began; the combined delta lands here.
        self._start: Dict[torch.Tensor, torch.Tensor] = {
            p: torch.zeros_like(p, requires_grad=False) for p in params}
        self._handles: Dict[torch.Tensor, Tuple[Optional[int], Any]] = {}
        self._grad_accs: List[Any] = []
        self._requires_update = {p for p in params if p.requires_grad}
        member = process_set is global_process_set or process_set.included()
        if member:
            ordered = sorted(self._requires_update,
                             key=lambda q: self._names[q])
            for p in ordered:
                if p.grad is None:
                    p.grad = torch.zeros_like(p.data)
            self._register_hooks(ordered)

    def _gradient_final(self, p: torch.Tensor) -> None:
        self._handles[p] = self._reduce_delta_async(p)

    def _reduce_delta_async(self, p: torch.Tensor) -> Tuple[int, Any]:
        """Steps `p` alone, leaves the delta in it, and starts its
        Adasum allreduce."""
        start = self._start[p]
        start.copy_(p.data)
        kept = [g["params"] for g in self.param_groups]
        for g in self.param_groups:
            g["params"] = [p] if any(p is q for q in g["params"]) else []
        try:
            super().step()
        finally:
            for g, params in zip(self.param_groups, kept):
                g["params"] = params
        p.data.sub_(start)
        compressed, ctx = self._compression.compress(p.data)
        handle = allreduce_async_(compressed, name=self._names[p], op=Adasum,
                                  process_set=self._process_set)
        return handle, (compressed, ctx)

    def synchronize(self) -> None:
        """Nothing to wait for apart from step(): the deltas are the
        update (Horovod's Adasum optimizer does the same)."""

    @contextlib.contextmanager
    def skip_synchronize(self) -> Iterator[None]:
        raise AssertionError("Skipping synchronization is not supported "
                             "when using Adasum optimizer.")
        yield  # pragma: no cover (a generator, as the context needs)

    def step(self, closure: Any = None) -> Any:
        loss = closure() if closure is not None else None
        if not (self._process_set is global_process_set
                or self._process_set.included()):
            return loss
        for p in sorted(self._requires_update - set(self._handles),
                        key=lambda q: self._names[q]):
            self._handles[p] = self._reduce_delta_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:  # step() before the last backward pass
                handle, ctx = self._reduce_delta_async(p)
            synchronize(handle)
            compressed, comp_ctx = ctx
            delta = self._compression.decompress(compressed, comp_ctx)
            start = self._start[p]
            start.add_(delta)
            p.data.copy_(start)
            self._delay[p] = self.backward_passes_per_step
        self._handles.clear()
        return loss

    def load_state_dict(self, *args: Any, **kwargs: Any) -> None:
        if self._handles:
            for handle, _ in self._handles.values():
                if handle is not None:
                    synchronize(handle)
            for p in self._handles:
                p.data.copy_(self._start[p])
            self._handles.clear()
        for p in self._delay:
            self._delay[p] = self.backward_passes_per_step
        super().load_state_dict(*args, **kwargs)



def adasum_optimizer(optimizer: torch.optim.Optimizer,
                     named: List[Tuple[str, torch.Tensor]], compression: Any,
                     backward_passes_per_step: int,
                     process_set: ProcessSet) -> torch.optim.Optimizer:
    """`optimizer` as a delta optimizer over Adasum (of a class derived
    from its own, over the same parameter groups)."""
    base = optimizer.__class__
    cls = type(base.__name__, (_DistributedAdasumOptimizer, base), {})
    wrapped = cls.__new__(cls)
    base.__init__(wrapped, optimizer.param_groups)
    wrapped._setup(named, compression, backward_passes_per_step, process_set)
    return wrapped
