"""Process sets: registered at init or dynamically, collectives among their
members only (checked against numpy), and the errors Horovod gives."""

import numpy as np
import pytest
import torch

import horovod.torch as hvd


@pytest.fixture
def even_odd():
    """The job re-joined with two static sets: even and odd ranks."""
    hvd.shutdown()
    n = hvd_size_env()
    even = hvd.ProcessSet(range(0, n, 2))
    odd = hvd.ProcessSet(range(1, n, 2))
    hvd.init(process_sets=[even, odd])
    yield even, odd
    hvd.shutdown()
    hvd.init()


def hvd_size_env() -> int:
    import os
    return int(os.environ["HOROVOD_SIZE"])


def mine(even, odd):
    return even if hvd.rank() % 2 == 0 else odd


def test_static_sets_know_their_members(even_odd) -> None:
    even, odd = even_odd
    r, n = hvd.rank(), hvd.size()
    assert even.process_set_id == 1 and odd.process_set_id == 2
    ps = mine(even, odd)
    other = odd if ps is even else even
    assert ps.included() and not other.included()
    assert ps.size() == len(ps.ranks)
    assert ps.rank() == ps.ranks.index(r)
    assert other.rank() == -1
    assert hvd.global_process_set.size() == n
    assert hvd.global_process_set.rank() == r


def test_collectives_within_a_set(even_odd) -> None:
    even, odd = even_odd
    r = hvd.rank()
    ps = mine(even, odd)
    members = ps.ranks
    t = torch.full((3,), float(r + 1))
    out = hvd.allreduce(t, op=hvd.Sum, process_set=ps)
    np.testing.assert_allclose(out.numpy(), [sum(q + 1 for q in members)] * 3)
    avg = hvd.allreduce(t, process_set=ps)
    np.testing.assert_allclose(avg.numpy(),
                               [np.mean([q + 1 for q in members])] * 3)
    gathered = hvd.allgather(torch.full((r + 1, 2), r), process_set=ps)
    want = np.concatenate([np.full((q + 1, 2), q) for q in members])
    np.testing.assert_array_equal(gathered.numpy(), want)
    # The root is a rank of the job.
    root = members[-1]
    b = hvd.broadcast(torch.full((2,), float(r)), root, process_set=ps)
    assert b.tolist() == [float(root)] * 2
    k = len(members)
    out, received = hvd.alltoall(torch.arange(k, dtype=torch.float32) + 10 * r,
                                 splits=[1] * k, process_set=ps)
    me = ps.rank()
    np.testing.assert_array_equal(out.numpy(),
                                  [10 * q + me for q in members])
    assert received.tolist() == [1] * k
    rs = hvd.reducescatter(torch.ones(k, 2), op=hvd.Sum, process_set=ps)
    np.testing.assert_array_equal(rs.numpy(), np.full((1, 2), k))
    outs = hvd.grouped_allreduce([torch.ones(2), torch.ones(3)], op=hvd.Sum,
                                 process_set=ps)
    assert [o.tolist() for o in outs] == [[float(k)] * 2, [float(k)] * 3]
    hvd.barrier(process_set=ps)
    # The job's own collectives still work beside the sets'.
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()


def test_non_members_are_refused_at_once(even_odd) -> None:
    even, odd = even_odd
    other = odd if mine(even, odd) is even else even
    if not other.ranks:
        pytest.skip("one rank: no other set has members")
    with pytest.raises(ValueError, match="not in process set"):
        hvd.allreduce(torch.ones(2), process_set=other)
    with pytest.raises(ValueError):
        hvd.broadcast(torch.ones(2), other.ranks[0], process_set=other)
    ps = mine(even, odd)
    with pytest.raises(ValueError, match="not in process set"):
        # A root outside the set.
        hvd.broadcast(torch.ones(2), other.ranks[0], process_set=ps)


def test_sets_are_fixed_unless_dynamic(even_odd) -> None:
    with pytest.raises(ValueError, match="HOROVOD_DYNAMIC_PROCESS_SETS"):
        hvd.add_process_set([0])
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(1), process_set=hvd.ProcessSet([0]))


def test_dynamic_sets_added_used_and_removed() -> None:
    hvd.shutdown()
    hvd.init(process_sets="dynamic")
    try:
        r, n = hvd.rank(), hvd.size()
        first = hvd.add_process_set([0, n - 1])
        assert first.process_set_id == 1
        head = hvd.add_process_set(hvd.ProcessSet(list(range(n - 1))))
        assert head.process_set_id == 2
        with pytest.raises(ValueError, match="exists"):
            hvd.add_process_set([n - 1, 0])
        with pytest.raises(ValueError, match="not in the job"):
            hvd.add_process_set([0, n + 3])
        with pytest.raises(ValueError, match="twice"):
            hvd.add_process_set([0, 0])
        # As Horovod: the global set is never removed, and lists every rank.
        assert not hvd.remove_process_set(hvd.global_process_set)
        assert hvd.global_process_set.ranks == list(range(n))
        for ps in (first, head):
            if ps.included():
                got = hvd.allreduce(torch.tensor([float(r)]), op=hvd.Sum,
                                    process_set=ps, name="dyn")
                assert got.item() == sum(ps.ranks)
        assert hvd.remove_process_set(first)
        assert first.process_set_id is None
        assert not hvd.remove_process_set(first)  # no more registered
        assert not hvd.remove_process_set(hvd.ProcessSet([0]))  # never
        with pytest.raises(ValueError, match="not registered"):
            hvd.allreduce(torch.ones(1), process_set=first)
        again = hvd.add_process_set([0, n - 1])
        assert again.process_set_id == 3  # ids are not reused
        if again.included():
            assert hvd.allreduce(torch.ones(1), op=hvd.Sum,
                                 process_set=again).item() == 2
        hvd.remove_process_set(again)
        hvd.remove_process_set(head)
    finally:
        hvd.shutdown()
        hvd.init()


def test_distributed_optimizer_within_a_set(even_odd) -> None:
    even, odd = even_odd
    ps = mine(even, odd)
    torch.manual_seed(5)
    model = torch.nn.Linear(3, 1)
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        named_parameters=model.named_parameters(), process_set=ps)
    hvd.broadcast_parameters(model.state_dict(), root_rank=ps.ranks[0],
                             process_set=ps)
    for step in range(3):
        opt.zero_grad()
        x = torch.full((4, 3), float(hvd.rank() + step))
        model(x).sum().backward()
        opt.step()
    w = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    g = hvd.allgather(w.unsqueeze(0), process_set=ps, name="weights")
    assert bool((g == g[0]).all())
