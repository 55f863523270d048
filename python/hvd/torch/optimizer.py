"""DistributedOptimizer: averages gradients over ranks as backward runs.

Each parameter's gradient accumulator gets a hook; when a gradient is
final for the step (after ``backward_passes_per_step`` passes), its
allreduce starts at once, so communication overlaps the rest of backward.
``step()`` waits for them all (``synchronize()``), then the wrapped
optimizer applies the averaged gradients.
"""

import contextlib
import os
import warnings
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from hvd import _core
from hvd.common.exceptions import HorovodInternalError
from hvd.common.process_sets import ProcessSet, global_process_set
from hvd.torch.adasum_optimizer import adasum_optimizer
from hvd.torch.compression import Compression
from hvd.torch.grad_hooks import GradientHooks
from hvd.torch.mpi_ops import (Adasum, Average, allreduce_async_,
                               grouped_allreduce_async_, size,
                               sparse_allreduce_async, synchronize)


def named_parameter_list(named_parameters: Optional[Any],
                         all_params: List[torch.Tensor]
                         ) -> List[Tuple[str, torch.Tensor]]:
    """The (name, parameter) pairs a distributed optimizer reduces under:
    the given ones, checked as Horovod checks them, or generated names."""
    if named_parameters is None:
        return [(f"allreduce.noname.{i}", p)
                for i, p in enumerate(all_params)]
    named = list(named_parameters)
    for item in named:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise ValueError(
                "named_parameters should be a sequence of tuples "
                "(name, parameter), usually produced by "
                "model.named_parameters().")
    names = [n for n, _ in named]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise ValueError("Parameter names in named_parameters must "
                         f"be unique. Found duplicates: {dups}")
    known = {id(p) for _, p in named}
    unnamed = [id(p) for p in all_params if id(p) not in known]
    if unnamed:
        raise ValueError(
            "named_parameters was specified, but one or more model "
            "parameters were not named. Python object ids: "
            + ", ".join(str(i) for i in unnamed))
    return named


class _DistributedOptimizer(GradientHooks):
    """Mixed in before the wrapped optimizer's class (see
    DistributedOptimizer); the optimizer's own methods do the updates."""

    def _setup(self, named_parameters: Optional[Sequence[Tuple[str, Any]]],
               compression: Any, backward_passes_per_step: int, op: int,
               gradient_predivide_factor: float, groups: Any,
               process_set: ProcessSet, sparse_as_dense: bool) -> None:
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = op
        self._process_set = process_set
        self.backward_passes_per_step = backward_passes_per_step
        if op == Average:
            # Average divides by size after the sum; the predivide factor
            # moves part of that before it (fp16 headroom).
            self._prescale = 1.0 / gradient_predivide_factor
            self._postscale = gradient_predivide_factor
        else:
            self._prescale = self._postscale = 1.0

        all_params = [p for group in self.param_groups
                      for p in group["params"]]
        named = named_parameter_list(named_parameters, all_params)
        self._names: Dict[torch.Tensor, str] = {p: n for n, p in named}
        # Horovod's name for the same map (scripts and libraries read it).
        self._parameter_names = self._names
        self._delay: Dict[torch.Tensor, int] = {
            p: backward_passes_per_step for p in all_params}
        self._handles: Dict[Any, Tuple[Optional[int], Any]] = {}
        self._grad_accs: List[Any] = []
        self._requires_update = {p for p in all_params if p.requires_grad}
        self._synchronized = False
        self._should_synchronize = True

        # Groups: lists of parameters whose gradients go in one grouped
        # allreduce once all of them are ready.
        self._group_of: Dict[torch.Tensor, int] = {}
        self._group_members: List[List[torch.Tensor]] = []
        self._group_ready: List[Dict[torch.Tensor, Any]] = []
        if groups is not None:
            if isinstance(groups, int):
                if groups <= 0:
                    raise ValueError("groups must be a positive integer or a "
                                     "list of lists of parameters")
                ordered = sorted(self._requires_update,
                                 key=lambda p: self._names[p])
                n = min(groups, len(ordered)) or 1
                lists = [ordered[i::n] for i in range(n)]
            else:
                lists = [list(g) for g in groups]
            for gi, members in enumerate(lists):
                members = [p for p in members if p in self._requires_update]
                members.sort(key=lambda p: self._names[p])
                self._group_members.append(members)
                self._group_ready.append({})
                for p in members:
                    self._group_of[p] = gi

        # Hooks only where they start allreduces: on the set's members.
        member = process_set is global_process_set or process_set.included()
        if member and (size() > 1 or
                       os.environ.get("HOROVOD_ELASTIC") == "1"):
            self._register_hooks(p for g in self.param_groups
                                 for p in g["params"] if p.requires_grad)

    def _gradient_final(self, p: torch.Tensor) -> None:
        if p in self._group_of:
            self._group_ready_for(p)
        else:
            self._handles[p] = self._allreduce_grad_async(p)

    def _group_ready_for(self, p: torch.Tensor) -> None:
        gi = self._group_of[p]
        ready = self._group_ready[gi]
        ready[p] = True
        self._handles[p] = (None, None)
        if len(ready) == len(self._group_members[gi]):
            self._start_group(gi)

    def _start_group(self, gi: int) -> None:
        members = self._group_members[gi]
        pairs = [self._compression.compress(self._grad(p)) for p in members]
        handle = grouped_allreduce_async_(
            [c for c, _ in pairs], name=f"group.{gi}." + self._names[
                members[0]], op=self._op, prescale_factor=self._prescale,
            postscale_factor=self._postscale, process_set=self._process_set)
        for p in members:
            self._handles.pop(p, None)
        self._handles[tuple(members)] = (handle, pairs)
        self._group_ready[gi] = {}

    @staticmethod
    def _grad(p: torch.Tensor) -> torch.Tensor:
        if p.grad is None:
            p.grad = torch.zeros_like(p.data)
        return p.grad

    def _allreduce_grad_async(self, p: torch.Tensor) -> Tuple[Any, Any]:
        grad = self._grad(p)
        if grad.is_sparse:
            if not self._sparse_as_dense:
                # Indices and values gathered (sparse_allreduce_async).
                return sparse_allreduce_async(
                    grad, name="sparse." + self._names[p], op=self._op,
                    process_set=self._process_set), None
            # Dense only on the wire: _set_grad gives the sum back sparse,
            # so sparse optimizers (SparseAdam) still take it.
            grad = grad.to_dense()
        compressed, ctx = self._compression.compress(grad)
        handle = allreduce_async_(compressed, name=self._names[p],
                                  op=self._op, prescale_factor=self._prescale,
                                  postscale_factor=self._postscale,
                                  process_set=self._process_set)
        return handle, (compressed, ctx)

    def synchronize(self) -> None:
        """Waits for every gradient's allreduce (starting those whose hooks
        did not run: parameters unused in this pass) and puts the averages
        into the gradients."""
        if not self._process_set.included():
            self._synchronized = True
            return
        done = set()
        for key in self._handles:
            done.update(key if isinstance(key, tuple) else (key,))
        for p in sorted(self._requires_update - done,
                        key=lambda q: self._names[q]):
            if p in self._group_of:
                self._group_ready_for(p)
            else:
                self._handles[p] = self._allreduce_grad_async(p)
        for gi, ready in enumerate(self._group_ready):
            if ready:
                self._start_group(gi)
        for key, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[key] = self._allreduce_grad_async(key)
        try:
            self._wait_all()
        except HorovodInternalError:
            # The step is lost (a peer is gone): start the next one clean,
            # as elastic training will after its reset.
            self._handles.clear()
            for p in self._delay:
                self._delay[p] = self.backward_passes_per_step
            self._group_ready = [{} for _ in self._group_ready]
            raise
        self._handles.clear()
        self._synchronized = True
        _core.mark_step()  # for the step-time metric

    def _wait_all(self) -> None:
        for key, (handle, ctx) in self._handles.items():
            if callable(handle):  # a sparse gradient's reduction
                key.grad = handle()
                self._delay[key] = self.backward_passes_per_step
                continue
            synchronize(handle)
            if isinstance(key, tuple):
                # A group: its compressed gradients were reduced in place.
                for p, (compressed, comp_ctx) in zip(key, ctx):
                    self._delay[p] = self.backward_passes_per_step
                    self._set_grad(p, compressed, comp_ctx)
            else:
                self._delay[key] = self.backward_passes_per_step
                self._set_grad(key, *ctx)

    def _set_grad(self, p: torch.Tensor, compressed: torch.Tensor,
                  ctx: Any) -> None:
        value = self._compression.decompress(compressed, ctx)
        if p.grad.is_sparse:  # reduced dense (sparse_as_dense)
            p.grad.zero_().add_(value.to_sparse())
        elif value is not p.grad:
            p.grad.copy_(value)

    def load_state_dict(self, *args: Any, **kwargs: Any) -> None:
        """The wrapped optimizer's, and what this one accumulated is
        dropped: the next step starts from the loaded state."""
        self._handles.clear()
        self._group_ready = [{} for _ in self._group_ready]
        self._synchronized = False
        self._should_synchronize = True
        for p in self._delay:
            self._delay[p] = self.backward_passes_per_step
        super().load_state_dict(*args, **kwargs)

    @contextlib.contextmanager
    def skip_synchronize(self) -> Iterator[None]:
        """step() inside it does not synchronize (call synchronize() first,
        e.g. to clip the averaged gradients)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure: Any = None) -> Any:
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn(
                    "optimizer.step() called without "
                    "optimizer.skip_synchronize() context after "
                    "optimizer.synchronize(). This can cause training "
                    "slowdown. You may want to consider using "
                    "optimizer.skip_synchronize() context if you use "
                    "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False
        return super().step(closure)

    def _local_step(self, closure: Any = None) -> Any:
        """The wrapped optimizer's step alone (no allreduce)."""
        return super().step(closure)



def DistributedOptimizer(optimizer: torch.optim.Optimizer,
                         named_parameters: Optional[Any] = None,
                         compression: Any = Compression.none,
                         backward_passes_per_step: int = 1,
                         op: int = Average,
                         gradient_predivide_factor: float = 1.0,
                         num_groups: int = 0,
                         groups: Optional[Any] = None,
                         sparse_as_dense: bool = False,
                         process_set: ProcessSet = global_process_set
                         ) -> torch.optim.Optimizer:
    """Wraps `optimizer` so that step() applies gradients averaged (or
    reduced by `op`) over every rank. With op=hvd.Adasum it is Horovod's
    delta optimizer instead (adasum_optimizer.py): each rank steps, and
    the steps combine by Adasum.

    Returns an optimizer of a class derived from `optimizer`'s, over the
    same parameter groups.
    """
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with "
                         "op != Average")
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be at least 1")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` "
                      "and will be removed", DeprecationWarning)
        if groups is None:
            groups = num_groups
    if op == Adasum and size() > 1:
        # Horovod's delta optimizer (adasum_optimizer.py); on one rank
        # Adasum is the identity and the plain optimizer does.
        named = named_parameter_list(
            named_parameters,
            [p for g in optimizer.param_groups for p in g["params"]])
        return adasum_optimizer(optimizer, named, compression,
                                backward_passes_per_step, process_set)
    base = optimizer.__class__
    cls = type(base.__name__, (_DistributedOptimizer, base), {})
    wrapped = cls.__new__(cls)
    base.__init__(wrapped, optimizer.param_groups)
    wrapped._setup(named_parameters, compression, backward_passes_per_step,
                   op, gradient_predivide_factor, groups, process_set,
                   sparse_as_dense)
    return wrapped
