"""Horovod's collectives on torch tensors, over libhvd.

Tensors reach libhvd as views of torch's memory: an in-place operation
works in the tensor itself, an out-of-place one in a fresh output tensor,
and the outputs libhvd sizes itself (allgather, alltoall, reducescatter)
are handed over without a copy (``torch.frombuffer`` on libhvd's bytes).

Every operation returns a handle (an int) for ``poll`` and ``synchronize``,
as Horovod's do. Names: ``<op>.<name>``, or ``<op>.noname.<n>`` when none
is given, n counting the process set's unnamed operations, so unnamed
operations must be called in the same order on every member.

The operations live by family (_allreduce, _gather, _reducescatter, with
what they share in _common); this module is their public face, as
Horovod's ``horovod.torch.mpi_ops``.
"""

from hvd.common.basics import (ccl_built, cross_rank, cross_size, cuda_built,
                               ddl_built, gloo_built, gloo_enabled, init,
                               is_homogeneous, is_initialized, local_rank,
                               local_size, mpi_built, mpi_enabled,
                               mpi_threads_supported, nccl_built, rank,
                               rocm_built, shutdown, size, start_timeline,
                               stop_timeline)
from hvd.common.exceptions import HorovodInternalError
from hvd.common.process_sets import (ProcessSet, add_process_set,
                                     global_process_set, remove_process_set)
# The autograd functions too, as Horovod's module has them.
from hvd.torch._allreduce import (HorovodAllreduce, HorovodGroupedAllreduce,
                                  allreduce, allreduce_, allreduce_async,
                                  allreduce_async_, empty_shared,
                                  grouped_allreduce, grouped_allreduce_,
                                  grouped_allreduce_async,
                                  grouped_allreduce_async_)
from hvd.torch._common import (Adasum, Average, Max, Min, Product, Sum,
                               barrier, join, poll, synchronize)
from hvd.torch._gather import (HorovodAllgather, HorovodAlltoall,
                               HorovodBroadcast, HorovodGroupedAllgather,
                               allgather, allgather_async, alltoall,
                               alltoall_async, broadcast, broadcast_,
                               broadcast_async, broadcast_async_,
                               grouped_allgather, grouped_allgather_async,
                               sparse_allreduce_async)
from hvd.torch._reducescatter import (HorovodGroupedReducescatter,
                                      HorovodReducescatter,
                                      grouped_reducescatter,
                                      grouped_reducescatter_async,
                                      reducescatter, reducescatter_async)
from hvd.torch.compression import Compression

__all__ = [
    "Average", "Sum", "Adasum", "Min", "Max", "Product",
    "HorovodInternalError", "ProcessSet", "global_process_set",
    "add_process_set", "remove_process_set",
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank",
    "local_size", "cross_rank", "cross_size", "is_homogeneous",
    "start_timeline", "stop_timeline", "mpi_threads_supported",
    "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built", "nccl_built",
    "ddl_built", "ccl_built", "cuda_built", "rocm_built",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "allgather", "allgather_async",
    "grouped_allgather", "grouped_allgather_async", "broadcast",
    "broadcast_", "broadcast_async", "broadcast_async_", "alltoall",
    "alltoall_async", "reducescatter", "reducescatter_async",
    "grouped_reducescatter", "grouped_reducescatter_async", "poll",
    "sparse_allreduce_async",
    "synchronize", "join", "barrier", "Compression", "empty_shared",
]
