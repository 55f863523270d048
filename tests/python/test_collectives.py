"""allgather, broadcast, alltoall and reducescatter against numpy, with
uneven sizes per rank, their async and grouped forms, and gradients."""

import numpy as np
import pytest
import torch

import horovod.torch as hvd

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]


def rows_of(r: int) -> int:
    return r + 1  # uneven: rank r has r + 1 rows


def block(r: int, rows: int, cols: int = 3) -> np.ndarray:
    return (np.arange(rows * cols).reshape(rows, cols) % 7 + 10 * r)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allgather_uneven_first_dimensions(dtype: torch.dtype) -> None:
    r, n = hvd.rank(), hvd.size()
    t = torch.tensor(block(r, rows_of(r))).to(dtype)
    out = hvd.allgather(t, name=f"gather.{dtype}")
    want = np.concatenate([block(q, rows_of(q)) for q in range(n)])
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.double().numpy(), want)
    # The output is writable and owned by torch.
    out.add_(1)


def test_allgather_async_grouped_and_empty() -> None:
    r, n = hvd.rank(), hvd.size()
    h = hvd.allgather_async(torch.full((2, 2), float(r)))
    out = hvd.synchronize(h)
    assert out.shape == (2 * n, 2)
    outs = hvd.grouped_allgather([torch.full((1,), r), torch.full((r,), r)])
    np.testing.assert_array_equal(outs[0].numpy(), np.arange(n))
    np.testing.assert_array_equal(
        outs[1].numpy(), np.concatenate([np.full(q, q) for q in range(n)]))
    # Rank 0 contributes no rows; the others do.
    t = torch.ones(r, 4)
    assert hvd.allgather(t).shape == (sum(range(n)), 4)
    nothing = hvd.allgather(torch.zeros(0, 2), name="nothing")
    assert nothing.shape == (0, 2)


def _weights(q: int, rows: int) -> np.ndarray:
    """What rank q weighs the gathered rows by: a different number per row
    and per rank, so a wrong slice or a sum for an average shows."""
    return (q + 1) * np.arange(1, rows * 2 + 1, dtype=np.float64).reshape(
        rows, 2)


def test_allgather_gradient_is_this_ranks_rows_of_the_average() -> None:
    r, n = hvd.rank(), hvd.size()
    x = torch.ones(rows_of(r), 2, dtype=torch.float64, requires_grad=True)
    y = hvd.allgather(x, name="gather.grad")
    total = sum(rows_of(q) for q in range(n))
    (y * torch.from_numpy(_weights(r, total))).sum().backward()
    # Horovod's gradient: the ranks' gradients averaged, this rank's rows.
    mean = np.mean([_weights(q, total) for q in range(n)], axis=0)
    begin = sum(rows_of(q) for q in range(r))
    np.testing.assert_allclose(x.grad.numpy(),
                               mean[begin:begin + rows_of(r)])


def test_grouped_allgather_carries_each_gradient() -> None:
    r, n = hvd.rank(), hvd.size()
    xs = [torch.ones(rows_of(r), 2, dtype=torch.float64, requires_grad=True)
          for _ in range(2)]
    ys = hvd.grouped_allgather(xs, name="ggather.grad")
    assert all(y.grad_fn is not None for y in ys)
    total = sum(rows_of(q) for q in range(n))
    for k, y in enumerate(ys):
        (y * torch.from_numpy(_weights(r + k, total))).sum().backward()
    begin = sum(rows_of(q) for q in range(r))
    for k, x in enumerate(xs):
        mean = np.mean([_weights(q + k, total) for q in range(n)], axis=0)
        np.testing.assert_allclose(x.grad.numpy(),
                                   mean[begin:begin + rows_of(r)])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_broadcast_from_every_root(dtype: torch.dtype) -> None:
    r, n = hvd.rank(), hvd.size()
    for root in range(n):
        t = torch.tensor(block(r, 2)).to(dtype)
        out = hvd.broadcast(t, root, name=f"bcast.{dtype}.{root}")
        np.testing.assert_array_equal(out.double().numpy(), block(root, 2))
        np.testing.assert_array_equal(t.double().numpy(), block(r, 2))
        hvd.broadcast_(t, root)
        np.testing.assert_array_equal(t.double().numpy(), block(root, 2))


def test_broadcast_async_and_gradient() -> None:
    r, n = hvd.rank(), hvd.size()
    t = torch.full((3,), float(r))
    h = hvd.broadcast_async_(t, n - 1)
    assert hvd.synchronize(h) is t
    assert t.tolist() == [float(n - 1)] * 3
    x = torch.full((2,), float(r), requires_grad=True)
    # Rank q's gradient is q + 1: the root gets their average, the others
    # zero (Horovod's gradient of a broadcast).
    (hvd.broadcast(x, 0, name="bcast.grad") * (r + 1)).sum().backward()
    want = (n + 1) / 2 if r == 0 else 0.0
    assert x.grad.tolist() == [want, want]


def test_broadcast_with_a_bad_root_fails() -> None:
    with pytest.raises((ValueError, hvd.HorovodInternalError)):
        hvd.broadcast(torch.ones(2), hvd.size() + 5, name="bad.root")


def test_alltoall_with_uneven_splits() -> None:
    r, n = hvd.rank(), hvd.size()
    # Rank r sends (r + d) % 2 + 1 rows of value 100 r + d to rank d.
    splits = [(r + d) % 2 + 1 for d in range(n)]
    rows = np.concatenate([np.full((s, 2), 100 * r + d)
                           for d, s in enumerate(splits)])
    out, received = hvd.alltoall(torch.tensor(rows, dtype=torch.int32),
                                 splits=splits, name="a2a")
    want_splits = [(q + r) % 2 + 1 for q in range(n)]
    assert received.dtype == torch.int32
    assert received.tolist() == want_splits
    want = np.concatenate([np.full((s, 2), 100 * q + r)
                           for q, s in enumerate(want_splits)])
    np.testing.assert_array_equal(out.numpy(), want)
    # Splits as a tensor work too: 32-bit integers, as Horovod demands.
    out2, _ = hvd.alltoall(torch.tensor(rows, dtype=torch.int32),
                           splits=torch.tensor(splits, dtype=torch.int32))
    np.testing.assert_array_equal(out2.numpy(), want)
    for wrong in (torch.int64, torch.float32):
        with pytest.raises(ValueError, match="torch.int32"):
            hvd.alltoall(torch.tensor(rows, dtype=torch.int32),
                         splits=torch.tensor(splits, dtype=wrong))


def test_alltoall_without_splits_divides_evenly() -> None:
    r, n = hvd.rank(), hvd.size()
    t = torch.arange(2 * n, dtype=torch.float32) + 100 * r
    out = hvd.alltoall(t)
    assert isinstance(out, torch.Tensor)
    want = np.concatenate([np.arange(2 * r, 2 * r + 2) + 100 * q
                           for q in range(n)])
    np.testing.assert_array_equal(out.numpy(), want)
    with pytest.raises(ValueError, match="divisible"):
        hvd.alltoall(torch.ones(2 * n + 1))
    with pytest.raises(ValueError):
        hvd.alltoall(torch.ones(3), splits=[5] * n)  # do not add up
    h = hvd.alltoall_async(t)
    got, splits = hvd.synchronize(h)
    np.testing.assert_array_equal(got.numpy(), want)
    assert splits.tolist() == [2] * n


def test_alltoall_gradient_goes_back_where_it_came_from() -> None:
    r, n = hvd.rank(), hvd.size()
    x = torch.ones(n, 2, requires_grad=True)
    out, _ = hvd.alltoall(x, splits=[1] * n, name="a2a.grad")
    (out * (r + 1)).sum().backward()
    # Row d went to rank d, which weighs it by d + 1.
    want = np.repeat(np.arange(1, n + 1)[:, None], 2, axis=1)
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average, hvd.Min, hvd.Max])
def test_reducescatter_uneven_rows(op: int) -> None:
    r, n = hvd.rank(), hvd.size()
    rows = 2 * n + 1  # the first rows % n ranks get one more
    t = torch.tensor(block(r, rows), dtype=torch.float64)
    out = hvd.reducescatter(t, op=op, name=f"rs.{op}")
    stack = np.stack([block(q, rows) for q in range(n)]).astype(np.float64)
    full = {hvd.Sum: stack.sum(0), hvd.Average: stack.mean(0),
            hvd.Min: stack.min(0), hvd.Max: stack.max(0)}[op]
    counts = [rows // n + (q < rows % n) for q in range(n)]
    begin = sum(counts[:r])
    np.testing.assert_allclose(out.numpy(), full[begin:begin + counts[r]])


def test_reducescatter_scale_factors_grouped_and_gradient() -> None:
    r, n = hvd.rank(), hvd.size()
    t = torch.ones(n, 2)
    out = hvd.reducescatter(t, op=hvd.Sum, prescale_factor=2.0,
                            postscale_factor=0.5)
    np.testing.assert_allclose(out.numpy(), np.full((1, 2), n))
    outs = hvd.grouped_reducescatter([torch.ones(n, 1), torch.ones(2 * n)],
                                     op=hvd.Sum)
    assert outs[0].shape == (1, 1) and outs[1].shape == (2,)
    assert outs[1].tolist() == [float(n)] * 2
    # Row q of x lands on rank q, weighed by q + 1. Horovod's gradient:
    # every rank's gathered back, times the size for Sum, 1 for Average.
    rows = np.repeat(np.arange(1, n + 1)[:, None], 2, axis=1)
    for op, factor in ((hvd.Sum, n), (hvd.Average, 1)):
        x = torch.ones(n, 2, dtype=torch.float64, requires_grad=True)
        y = hvd.reducescatter(x, op=op, name=f"rs.grad.{op}")
        (y * (r + 1)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), rows * factor)
    xs = [torch.ones(n, 2, dtype=torch.float64, requires_grad=True)
          for _ in range(2)]
    ys = hvd.grouped_reducescatter(xs, op=hvd.Sum, name="grs.grad")
    assert all(y.grad_fn is not None for y in ys)
    sum(((y * (r + 1)).sum() for y in ys)).backward()
    for x in xs:
        np.testing.assert_allclose(x.grad.numpy(), rows * n)


def test_reducescatter_refuses_a_scalar_and_adasum_as_horovod() -> None:
    with pytest.raises(RuntimeError):
        hvd.reducescatter(torch.tensor(1.0), op=hvd.Sum)
    with pytest.raises(RuntimeError, match="Adasum"):
        hvd.reducescatter(torch.ones(hvd.size(), 2), op=hvd.Adasum)


def test_collectives_mixed_with_others_in_flight() -> None:
    r, n = hvd.rank(), hvd.size()
    handles = [hvd.allreduce_async(torch.ones(4), name="mix.ar", op=hvd.Sum),
               hvd.allgather_async(torch.ones(1), name="mix.ag"),
               hvd.broadcast_async(torch.full((2,), float(r)), 0,
                                   name="mix.bc"),
               hvd.reducescatter_async(torch.ones(n), name="mix.rs",
                                       op=hvd.Sum)]
    ar, ag, bc, rs = [hvd.synchronize(h) for h in reversed(handles)][::-1]
    assert ar.tolist() == [float(n)] * 4
    assert ag.shape == (n,)
    assert bc.tolist() == [0.0, 0.0]
    assert rs.tolist() == [float(n)]


def test_a_name_stays_taken_until_its_handle_is_synchronized() -> None:
    t = torch.ones(2, 3)
    first = hvd.allgather_async(t, name="taken")
    # Submitted after "taken" on every rank, so done after it: "taken" has
    # completed in the engine, but its handle is not synchronized.
    hvd.allreduce(torch.ones(1), name="taken.after")
    for _ in range(3):
        with pytest.raises(ValueError, match="already in flight"):
            hvd.allgather_async(t, name="taken")
    assert hvd.synchronize(first).shape == (2 * hvd.size(), 3)
    again = hvd.allgather_async(t, name="taken")
    assert hvd.synchronize(again).shape == (2 * hvd.size(), 3)
