"""TorchState: a model, an optimizer, samplers and plain values that survive
a reset. Each value of a type in the handler registry (Horovod's:
get_handler_registry / set_handler_registry) is kept by its StateHandler;
the rest are plain attributes (ObjectState)."""

import copy
from typing import Any, Dict, List, Optional, Tuple, Type

import torch

from hvd.common.elastic import ObjectState
from hvd.torch.elastic.sampler import ElasticSampler
from hvd.torch.functions import (broadcast_object, broadcast_optimizer_state,
                                 broadcast_parameters)
from hvd.torch.mpi_ops import rank


class StateHandler:
    """Keeps one value of a TorchState: save() at commit, restore() after a
    failure, sync() from rank 0 after every (re)start."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def save(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError

    def set_value(self, value: Any) -> None:
        """A new value assigned to the state's attribute; saved at once."""
        self.value = value
        self.save()


class _StateDictHandler(StateHandler):
    """A value with state_dict/load_state_dict: saved as a deep copy of its
    state dict, restored by loading that copy."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.save()

    def save(self) -> None:
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(self._saved)


class ModelStateHandler(_StateDictHandler):
    def sync(self) -> None:
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(_StateDictHandler):
    def sync(self) -> None:
        broadcast_optimizer_state(self.value, root_rank=0)


class SamplerStateHandler(_StateDictHandler):
    def sync(self) -> None:
        # Every rank counts the samples of the whole job: rank 0's count
        # (and epoch) is everyone's.
        self.value.load_state_dict(broadcast_object(
            self.value.state_dict(), root_rank=0, name="elastic.sampler"))


_handler_registry: List[Tuple[Type[Any], Type[StateHandler]]] = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (ElasticSampler, SamplerStateHandler),
]


def get_handler_registry() -> List[Tuple[Type[Any], Type[StateHandler]]]:
    """(type, StateHandler class) pairs, the first match deciding."""
    return _handler_registry


def set_handler_registry(
        registry: List[Tuple[Type[Any], Type[StateHandler]]]) -> None:
    global _handler_registry
    _handler_registry = registry


def _handler_for(value: Any) -> Optional[StateHandler]:
    for kind, handler in _handler_registry:
        if isinstance(value, kind):
            return handler(value)
    return None


class TorchState(ObjectState):
    """``TorchState(model=..., optimizer=..., epoch=0, batch=0, ...)``:
    commit() saves every value (state dicts aside, for the registered
    types), restore() puts them back, sync() brings rank 0's to every
    rank. Assigning a registered value (``state.model = other``) replaces
    what its handler keeps."""

    def __init__(self, model: Optional[torch.nn.Module] = None,
                 optimizer: Optional[torch.optim.Optimizer] = None,
                 **kwargs: Any) -> None:
        kwargs.update(model=model, optimizer=optimizer)
        handlers: Dict[str, StateHandler] = {}
        plain: Dict[str, Any] = {}
        for name, value in kwargs.items():
            handler = _handler_for(value)
            if handler is not None:
                handlers[name] = handler
            elif value is not None or name not in ("model", "optimizer"):
                plain[name] = value
        self._handlers = handlers
        for name, handler in handlers.items():
            setattr(self, name, handler.value)
        if model is None:
            self.model = None
        if optimizer is None:
            self.optimizer = None
        super().__init__(bcast_object=broadcast_object, get_rank=rank,
                         **plain)

    def __setattr__(self, name: str, value: Any) -> None:
        handlers = self.__dict__.get("_handlers", {})
        if name in handlers and name in self.__dict__:
            handlers[name].set_value(value)
        super().__setattr__(name, value)

    def save(self) -> None:
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self) -> None:
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self) -> None:
        for _, handler in sorted(self._handlers.items()):
            handler.sync()
        super().sync()
        self.save()

    def reset(self) -> None:
        for handler in self._handlers.values():
            if isinstance(handler.value, ElasticSampler):
                handler.value.reset()
