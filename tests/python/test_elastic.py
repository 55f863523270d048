"""hvd.elastic in Python: run() resets after a peer fails (injected: one
rank leaves the job), TorchState restores the last commit and syncs from
rank 0, ElasticSampler splits what remains of an epoch."""

import time

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
    sampler.record_batch(0, 4)  # every rank's first 4
    # Horovod's state: the samples the whole job has processed.
    assert sampler.state_dict() == {"epoch": 0, "processed_num": 4 * n}
    state = hvd.elastic.TorchState(sampler=sampler)
    state.sync()  # rank 0's count is everyone's
    assert len(sampler) == 6
    rest = list(iter(sampler))
    everyone = hvd.allgather_object(rest)
    assert sorted(i for part in everyone for i in part) == data[4 * n:]
    sampler.set_epoch(1)
    assert len(sampler) == 10 and sampler.processed_num == 0
    # A checkpoint of Horovod's sampler loads as it is.
    sampler.load_state_dict({"epoch": 3, "processed_num": n})
    assert sampler.epoch == 3 and len(sampler) == 9


class _Counter:
    def __init__(self) -> None:
        self.value = 0


class _CounterHandler(hvd.elastic.StateHandler):
    def __init__(self, counter: _Counter) -> None:
        super().__init__(counter)
        self.saved = counter.value

    def save(self) -> None:
        self.saved = self.value.value

    def restore(self) -> None:
        self.value.value = self.saved

    def sync(self) -> None:
        self.value.value = hvd.broadcast_object(self.value.value, 0,
                                                name="counter")


def test_state_handler_registry_keeps_other_types() -> None:
    registry = hvd.elastic.get_handler_registry()
    hvd.elastic.set_handler_registry(registry + [(_Counter, _CounterHandler)])
    try:
        counter = _Counter()
        counter.value = 10 + hvd.rank()
        state = hvd.elastic.TorchState(counter=counter, epoch=1)
        state.sync()
        assert counter.value == 10  # rank 0's
        counter.value = 99
        state.restore()  # back to the last commit (the sync)
        assert counter.value == 10
        counter.value = 20
        state.commit()
        counter.value = 30
        state.restore()
        assert counter.value == 20 and state.epoch == 1
    finally:
        hvd.elastic.set_handler_registry(registry)


def test_host_updates_interrupt_at_commit_and_removals_skip_sync() -> None:
    from horovod.runner.elastic.worker import HostUpdateResult
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, step=0)
    state.commit()  # nothing new
    for result, skip in ((HostUpdateResult.removed, True),
                         (HostUpdateResult.added, False)):
        stamp = time.time()
        # Only rank 0's messages count: the others' views may lag.
        if hvd.rank() == 0:
            state.on_hosts_updated(stamp, result)
        with pytest.raises(hvd.HostsUpdatedInterrupt) as caught:
            state.commit()
        assert caught.value.skip_sync is skip
        state.on_hosts_updated(stamp, result)  # the same update: no news
        state.commit()


def test_check_host_updates_merges_as_horovods() -> None:
    """Updates are taken in arrival order; one no newer than the newest
    taken so far is dropped, what it did included (Horovod's check)."""
    from horovod.runner.elastic.worker import HostUpdateResult
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, step=0)
    stamp = time.time() + 10
    if hvd.rank() == 0:
        state.on_hosts_updated(stamp + 2, HostUpdateResult.removed)
        state.on_hosts_updated(stamp + 1, HostUpdateResult.added)  # stale
    with pytest.raises(hvd.HostsUpdatedInterrupt) as caught:
        state.check_host_updates()
    assert caught.value.skip_sync is True  # removed alone


def test_the_notification_manager_calls_every_registered_state() -> None:
    from horovod.common.elastic import notification_manager
    from horovod.runner.elastic.worker import HostUpdateResult
    heard = []

    class Listener:
        def on_hosts_updated(self, timestamp: float,
                             result: HostUpdateResult) -> None:
            heard.append((timestamp, result))

    listener = Listener()
    notification_manager.register_listener(listener)
    notification_manager.handle_hosts_updated(5.0, HostUpdateResult.mixed)
    notification_manager.remove_listener(listener)
    notification_manager.handle_hosts_updated(6.0, HostUpdateResult.added)
    assert heard == [(5.0, HostUpdateResult.mixed)]
