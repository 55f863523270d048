"""TorchState: a model, an optimizer, samplers and plain values that survive
a reset."""

import copy
from typing import Any, Dict, Optional

import torch

from hvd.common.elastic import ObjectState
from hvd.torch.elastic.sampler import ElasticSampler
from hvd.torch.functions import (allgather_object, broadcast_object,
                                 broadcast_optimizer_state,
                                 broadcast_parameters)
from hvd.torch.mpi_ops import rank


class TorchState(ObjectState):
    """``TorchState(model=..., optimizer=..., epoch=0, batch=0, ...)``:
    commit() copies the model's and optimizer's state dicts (and samplers'
    progress) aside, restore() puts them back, sync() broadcasts them from
    rank 0 (a sampler's processed samples are the union over ranks)."""

    def __init__(self, model: Optional[torch.nn.Module] = None,
                 optimizer: Optional[torch.optim.Optimizer] = None,
                 **kwargs: Any) -> None:
        self.model = model
        self.optimizer = optimizer
        self._samplers: Dict[str, ElasticSampler] = {
            k: v for k, v in kwargs.items() if isinstance(v, ElasticSampler)}
        for k in self._samplers:
            setattr(self, k, kwargs.pop(k))
        self._saved_model: Optional[Dict[str, Any]] = None
        self._saved_optimizer: Optional[Dict[str, Any]] = None
        self._saved_samplers: Dict[str, Dict[str, Any]] = {}
        super().__init__(bcast_object=broadcast_object, get_rank=rank,
                         **kwargs)
        self._save_torch()

    def _save_torch(self) -> None:
        if self.model is not None:
            self._saved_model = copy.deepcopy(self.model.state_dict())
        if self.optimizer is not None:
            self._saved_optimizer = copy.deepcopy(self.optimizer.state_dict())
        self._saved_samplers = {k: copy.deepcopy(s.state_dict())
                                for k, s in self._samplers.items()}

    def save(self) -> None:
        self._save_torch()
        super().save()

    def restore(self) -> None:
        if self.model is not None and self._saved_model is not None:
            self.model.load_state_dict(self._saved_model)
        if self.optimizer is not None and self._saved_optimizer is not None:
            self.optimizer.load_state_dict(self._saved_optimizer)
        for k, s in self._samplers.items():
            s.load_state_dict(self._saved_samplers[k])
        super().restore()

    def sync(self) -> None:
        if self.model is not None:
            broadcast_parameters(self.model.state_dict(), root_rank=0)
        if self.optimizer is not None:
            broadcast_optimizer_state(self.optimizer, root_rank=0)
        for k, s in sorted(self._samplers.items()):
            done = set()
            for part in allgather_object(s.state_dict()["processed_indices"],
                                         name=f"elastic.sampler.{k}"):
                done |= part
            epoch = broadcast_object(s.epoch, root_rank=0,
                                     name=f"elastic.sampler.{k}.epoch")
            s.load_state_dict({"epoch": epoch, "processed_indices": done})
        super().sync()
        self._save_torch()

    def reset(self) -> None:
        for s in self._samplers.values():
            s.reset()
