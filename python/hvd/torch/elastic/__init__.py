"""horovod.torch.elastic: run, TorchState, ElasticSampler on hvd."""

from hvd.common.elastic import ObjectState, State, run_fn
from hvd.torch.elastic.sampler import ElasticSampler
from hvd.torch.elastic.state import (ModelStateHandler, OptimizerStateHandler,
                                     SamplerStateHandler, StateHandler,
                                     TorchState, get_handler_registry,
                                     set_handler_registry)
from hvd.torch.mpi_ops import init, shutdown


def _reset() -> None:
    shutdown()
    init()


def run(func):  # type: ignore[no-untyped-def]
    """Decorator for ``train(state, ...)``: resets and calls it again after
    a failed collective or a host change, from the last commit."""
    return run_fn(func, _reset)


__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler",
           "StateHandler", "ModelStateHandler", "OptimizerStateHandler",
           "SamplerStateHandler", "get_handler_registry",
           "set_handler_registry"]
