"""Helpers that start every rank from the same state: parameters,
optimizer state and arbitrary picklable objects."""

import io
import pickle
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import torch

from hvd.common.process_sets import ProcessSet, global_process_set
from hvd.torch.mpi_ops import (allgather, broadcast_, broadcast_async_, rank,
                               synchronize)


def _pairs(params: Any) -> List[Tuple[str, torch.Tensor]]:
    if isinstance(params, dict):
        return sorted(params.items())
    if isinstance(params, list):
        for p in params:
            if not (isinstance(p, tuple) and len(p) == 2):
                raise ValueError("invalid params of type: list of "
                                 f"{type(p).__name__} (give (name, tensor) "
                                 "pairs, e.g. model.named_parameters())")
        return list(params)
    if hasattr(params, "__iter__"):  # a generator of (name, tensor)
        return _pairs(list(params))
    raise ValueError(f"invalid params of type: {type(params).__name__}")


def broadcast_parameters(params: Any, root_rank: int,
                         process_set: ProcessSet = global_process_set) -> None:
    """Copies root_rank's parameters into every rank's, in place.

    ``params``: ``model.state_dict()``, ``model.named_parameters()`` or a
    list of (name, tensor) pairs.
    """
    handles = []
    for name, p in _pairs(params):
        if p is None:
            continue
        tensor = p.data if isinstance(p, torch.nn.Parameter) else p
        handles.append(broadcast_async_(tensor, root_rank,
                                        name="parameters." + name,
                                        process_set=process_set))
    for h in handles:
        synchronize(h)


def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> Any:
    """root_rank's `obj` (pickled) on every rank."""
    name = name or type(obj).__name__
    if rank() == root_rank:
        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        length = torch.tensor([len(payload)], dtype=torch.int64)
    else:
        payload = b""
        length = torch.zeros(1, dtype=torch.int64)
    broadcast_(length, root_rank, name=name + ".size",
               process_set=process_set)
    data = torch.zeros(int(length[0]), dtype=torch.uint8)
    if rank() == root_rank:
        data.copy_(torch.frombuffer(bytearray(payload), dtype=torch.uint8))
    broadcast_(data, root_rank, name=name + ".data", process_set=process_set)
    if rank() == root_rank:
        return obj
    return pickle.loads(data.numpy().tobytes())


def allgather_object(obj: Any, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> List[Any]:
    """Every rank's `obj` (pickled), in rank order."""
    name = name or type(obj).__name__
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    data = torch.frombuffer(bytearray(payload), dtype=torch.uint8)
    sizes = allgather(torch.tensor([len(payload)], dtype=torch.int64),
                      name=name + ".sizes", process_set=process_set)
    gathered = allgather(data, name=name + ".data", process_set=process_set)
    out, at = [], 0
    for n in sizes.tolist():
        out.append(pickle.loads(gathered[at:at + n].numpy().tobytes()))
        at += n
    return out


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer,
                              root_rank: int,
                              process_set: ProcessSet = global_process_set
                              ) -> None:
    """Copies root_rank's optimizer state (hyper-parameters and per-parameter
    buffers) into every rank's optimizer.

    An optimizer that has not stepped yet has no buffers; it takes one step
    with zero gradients to create them, and its parameters are put back as
    they were.
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if not optimizer.state:
        saved = [(p, p.data.clone(), p.grad) for p in params]
        for p in params:
            if p.requires_grad:
                p.grad = torch.zeros_like(p.data)
        # Not the distributed step: nothing to reduce.
        step = getattr(optimizer, "_local_step", optimizer.step)
        step()
        for p, data, grad in saved:
            p.data.copy_(data)
            p.grad = grad
    # Scalars (hyper-parameters, step counts) travel pickled; tensors in
    # place, each under a name every rank derives alike.
    scalars: Dict[str, Any] = {"groups": [], "state": {}}
    for group in optimizer.param_groups:
        scalars["groups"].append(
            {k: v for k, v in group.items() if k != "params"})
    tensors = []
    for i, p in enumerate(params):
        for key, value in sorted(optimizer.state.get(p, {}).items()):
            if torch.is_tensor(value):
                tensors.append((f"optimizer.state.{i}.{key}", value))
            else:
                scalars["state"][(i, key)] = value
    scalars = broadcast_object(scalars, root_rank,
                               name="optimizer.scalars",
                               process_set=process_set)
    for group, options in zip(optimizer.param_groups, scalars["groups"]):
        group.update(options)
    for (i, key), value in scalars["state"].items():
        optimizer.state[params[i]][key] = value
    handles = [broadcast_async_(t, root_rank, name=name,
                                process_set=process_set)
               for name, t in tensors]
    for h in handles:
        synchronize(h)
