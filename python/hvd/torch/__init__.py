"""Horovod's PyTorch API (``horovod.torch``) on libhvd."""

from hvd.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from hvd.torch.compression import Compression
from hvd.torch.functions import (allgather_object, broadcast_object,
                                 broadcast_optimizer_state,
                                 broadcast_parameters)
from hvd.torch.mpi_ops import *  # noqa: F401,F403 (the API, as Horovod's)
from hvd.torch.mpi_ops import __all__ as _ops_all
from hvd.torch.optimizer import DistributedOptimizer
from hvd.torch.sync_batch_norm import SyncBatchNorm
from hvd.torch import elastic  # noqa: E402 (hvd.elastic.run, TorchState...)

import os as _os

import torch as _torch

from hvd import _core as _hvd_core

# Frames of torch (autograd's backward, its hooks) are not the user's.
_hvd_core.add_library_dir(_os.path.dirname(_torch.__file__) + _os.sep)

__all__ = list(_ops_all) + [
    "HostsUpdatedInterrupt", "allgather_object", "broadcast_object",
    "broadcast_optimizer_state", "broadcast_parameters",
    "DistributedOptimizer", "SyncBatchNorm", "elastic",
]
