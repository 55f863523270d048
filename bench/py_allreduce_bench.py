#!/usr/bin/env python3
"""Allreduce through horovod.torch, timed as allreduce_bench times the C++
API: run under ``horovodrun -np N``; rank 0 prints
``RESULT py <bytes> <seconds per op>`` for each size (fp32, in place,
named, Sum), the median of 5 batches after 3 warm-up calls.

``--malloc``: the tensors view memory from malloc (through numpy), as the
C++ benchmark's std::vector does, instead of torch's allocator, whose large
blocks the kernel may back differently (transparent huge pages); the
difference is the memory's, not hvd's, and this isolates hvd's own cost.
"""

import sys
import time
from typing import Callable

import numpy as np
import torch

import horovod.torch as hvd

SIZES = [4, 64, 1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20,
         64 << 20]


def iterations(nbytes: int) -> int:
    return min(max((256 << 20) // max(nbytes, 1), 5), 2000)


def time_per_op(iters: int, op: Callable[[], None]) -> float:
    for _ in range(3):
        op()
    batch = max(2, iters // 5)
    per_op = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(batch):
            op()
        per_op.append((time.perf_counter() - start) / batch)
    return sorted(per_op)[2]


def main() -> int:
    hvd.init()
    args = sys.argv[1:]
    malloc = "--malloc" in args
    sizes = [int(a) for a in args if a != "--malloc"] or SIZES
    for nbytes in sizes:
        if malloc:
            t = torch.from_numpy(np.ones(nbytes // 4, dtype=np.float32))
        else:
            t = torch.ones(nbytes // 4, dtype=torch.float32)
        name = f"bench.{nbytes}"
        seconds = time_per_op(
            iterations(nbytes),
            lambda: hvd.allreduce_(t, name=name, op=hvd.Sum))
        if hvd.rank() == 0:
            who = "py_malloc" if malloc else "py"
            print(f"RESULT {who} {nbytes} {seconds:.9f}", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
