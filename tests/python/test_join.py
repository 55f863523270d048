"""join: ranks with less data than others.

A file of its own: after a join the ranks have made different numbers of
operations, so later unnamed ones would get different automatic names on
different ranks (as in Horovod); nothing runs after it here.
"""

import torch

import horovod.torch as hvd


def test_join_with_uneven_work() -> None:
    r, n = hvd.rank(), hvd.size()
    # Rank r has r + 1 batches; the others' allreduces go on with zeros in
    # place of the ranks that have joined.
    sums = []
    for step in range(r + 1):
        sums.append(hvd.allreduce(torch.ones(2), op=hvd.Sum,
                                  name=f"join.step.{step}").tolist())
    last = hvd.join()
    assert last == n - 1
    # Step s had every rank with more than s batches: n - s of them.
    assert sums == [[float(n - s)] * 2 for s in range(r + 1)]


def test_barrier_after_join() -> None:
    # Barriers are numbered among themselves, so they still match.
    hvd.barrier()
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum,
                         name="after.join").item() == hvd.size()
