"""hvd.elastic in Python: run() resets after a peer fails (injected: one
rank leaves the job), TorchState restores the last commit and syncs from
rank 0, ElasticSampler splits what remains of an epoch."""

import pytest
import torch

import horovod.torch as hvd


def test_run_resets_to_the_last_commit_and_finishes() -> None:
    torch.manual_seed(1 + hvd.rank())  # different on every rank at first
    model = torch.nn.Linear(4, 1)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.05),
        named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, batch=0,
                                   steps_run=0)
    resets = []
    state.register_reset_callbacks([lambda: resets.append(hvd.size())])
    failed = []

    @hvd.elastic.run
    def train(state):
        while state.batch < 12:
            if state.batch == 7 and hvd.rank() == 1 and not failed:
                failed.append(True)
                hvd.shutdown()  # as a peer that died would
                raise hvd.HorovodInternalError("rank 1 left at batch 7")
            state.optimizer.zero_grad()
            x = torch.full((2, 4), float(state.batch + hvd.rank()))
            state.model(x).sum().backward()
            state.optimizer.step()
            state.batch += 1
            state.steps_run += 1
            if state.batch % 3 == 0:
                state.commit()
        return state.batch

    assert train(state) == 12
    assert resets == [hvd.size()]
    # Back to the commit of batch 6, then batches 6..11 again.
    assert state.steps_run == 12
    w = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    g = hvd.allgather(w.unsqueeze(0), name="elastic.weights")
    assert bool((g == g[0]).all())


def test_object_state_syncs_from_rank_zero_and_restores() -> None:
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank,
                                    epoch=hvd.rank(), names=["a"])
    state.sync()
    assert state.epoch == 0 and state.names == ["a"]
    state.epoch = 5
    state.names.append("b")
    state.commit()  # no host change in a fixed job: no interrupt
    state.epoch = 9
    state.restore()
    assert state.epoch == 5 and state.names == ["a", "b"]


def test_elastic_sampler_splits_what_remains() -> None:
    n = hvd.size()
    data = list(range(10 * n))
    sampler = hvd.elastic.ElasticSampler(data, shuffle=False)
    assert len(sampler) == 10
    mine = list(iter(sampler))
    assert mine == list(range(hvd.rank(), 10 * n, n))
    sampler.record_batch(0, 4)  # this rank's first 4
    state = hvd.elastic.TorchState(sampler=sampler)
    state.sync()  # the union of every rank's processed samples
    assert len(sampler.processed_indices) == 4 * n
    assert len(sampler) == 6
    rest = list(iter(sampler))
    assert not set(rest) & sampler.processed_indices
    everyone = hvd.allgather_object(rest)
    assert sorted(i for part in everyone for i in part) == sorted(
        set(data) - sampler.processed_indices)
    sampler.set_epoch(1)
    assert len(sampler) == 10 and not sampler.processed_indices
