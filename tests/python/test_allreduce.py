"""allreduce and grouped_allreduce: every dtype and op against numpy,
scale factors, in-place and async forms, compression, gradients, errors."""

import numpy as np
import pytest
import torch

import horovod.torch as hvd

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]


def rank_data(dtype: torch.dtype, r: int, shape=(3, 5)) -> torch.Tensor:
    """Small values every dtype holds exactly, different on each rank."""
    n = int(np.prod(shape))
    values = (np.arange(n) % 4 + r + 1).reshape(shape)
    return torch.tensor(values).to(dtype)


def expected(dtype: torch.dtype, op: int, shape=(3, 5)) -> np.ndarray:
    stack = np.stack([rank_data(torch.float64, r, shape).numpy()
                      for r in range(hvd.size())])
    if op == hvd.Sum:
        return stack.sum(0)
    if op == hvd.Average:
        avg = stack.sum(0) / hvd.size()
        return avg if dtype.is_floating_point else np.trunc(avg)
    if op == hvd.Min:
        return stack.min(0)
    if op == hvd.Max:
        return stack.max(0)
    return stack.prod(0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", [hvd.Average, hvd.Sum, hvd.Min, hvd.Max,
                                hvd.Product],
                         ids=["avg", "sum", "min", "max", "prod"])
def test_every_dtype_and_op(dtype: torch.dtype, op: int) -> None:
    t = rank_data(dtype, hvd.rank())
    before = t.clone()
    out = hvd.allreduce(t, op=op, name=f"ops.{dtype}.{op}")
    assert out.dtype == dtype and out.shape == t.shape
    assert torch.equal(t, before)  # the input is not modified
    np.testing.assert_allclose(out.double().numpy(), expected(dtype, op))


def test_default_op_is_average_and_average_flag_still_works() -> None:
    t = rank_data(torch.float32, hvd.rank())
    np.testing.assert_allclose(hvd.allreduce(t).numpy(),
                               expected(torch.float32, hvd.Average))
    with pytest.warns(DeprecationWarning):
        summed = hvd.allreduce(t, average=False)
    np.testing.assert_allclose(summed.numpy(),
                               expected(torch.float32, hvd.Sum))


def test_scale_factors() -> None:
    t = rank_data(torch.float64, hvd.rank())
    out = hvd.allreduce(t, op=hvd.Sum, prescale_factor=0.5,
                        postscale_factor=3.0)
    np.testing.assert_allclose(out.numpy(),
                               expected(torch.float64, hvd.Sum) * 1.5)
    out = hvd.allreduce(t, op=hvd.Average, prescale_factor=2.0)
    np.testing.assert_allclose(out.numpy(),
                               expected(torch.float64, hvd.Average) * 2)


def test_in_place_forms_and_async_handles() -> None:
    t = rank_data(torch.float32, hvd.rank())
    same = hvd.allreduce_(t, op=hvd.Sum)
    assert same is t
    np.testing.assert_allclose(t.numpy(), expected(torch.float32, hvd.Sum))
    tensors = [rank_data(torch.float32, hvd.rank()) for _ in range(6)]
    handles = [hvd.allreduce_async_(x, name=f"async.{i}", op=hvd.Max)
               for i, x in enumerate(tensors)]
    outs = [hvd.synchronize(h) for h in handles]
    for x, o in zip(tensors, outs):
        assert o is x
        np.testing.assert_allclose(x.numpy(), expected(torch.float32, hvd.Max))
    h = hvd.allreduce_async(rank_data(torch.float32, hvd.rank()))
    while not hvd.poll(h):
        pass
    np.testing.assert_allclose(hvd.synchronize(h).numpy(),
                               expected(torch.float32, hvd.Average))
    assert hvd.synchronize(h) is None  # no longer pending
    with pytest.raises(ValueError):
        hvd.poll(h)


def test_strided_tensors() -> None:
    base = rank_data(torch.float32, hvd.rank(), (5, 3))
    t = base.t()  # not contiguous
    out = hvd.allreduce(t, op=hvd.Sum)
    np.testing.assert_allclose(out.numpy(),
                               expected(torch.float32, hvd.Sum, (5, 3)).T)
    hvd.allreduce_(t, op=hvd.Sum)
    np.testing.assert_allclose(base.numpy(),
                               expected(torch.float32, hvd.Sum, (5, 3)))


def test_scalars_and_empty_tensors() -> None:
    s = torch.tensor(float(hvd.rank() + 1))
    assert hvd.allreduce(s, op=hvd.Sum).item() == sum(
        range(1, hvd.size() + 1))
    e = torch.zeros(0, 4)
    assert hvd.allreduce(e).shape == (0, 4)


def test_grouped_allreduce_mixed_dtypes() -> None:
    ts = [rank_data(torch.float32, hvd.rank()),
          rank_data(torch.float64, hvd.rank(), (7,)),
          rank_data(torch.int32, hvd.rank(), (2, 2)),
          rank_data(torch.float32, hvd.rank(), (4,))]
    outs = hvd.grouped_allreduce(ts, op=hvd.Sum, name="mixed")
    for t, o in zip(ts, outs):
        assert o.dtype == t.dtype
        np.testing.assert_allclose(o.double().numpy(),
                                   expected(t.dtype, hvd.Sum, tuple(t.shape)))
    outs = hvd.grouped_allreduce_(ts, op=hvd.Average, prescale_factor=2.0)
    for t, o in zip(ts, outs):
        assert o is t
    h = hvd.grouped_allreduce_async([rank_data(torch.float32, hvd.rank())])
    (o,) = hvd.synchronize(h)
    np.testing.assert_allclose(o.numpy(), expected(torch.float32, hvd.Average))


def test_fp16_compression() -> None:
    t = rank_data(torch.float32, hvd.rank()) / 4
    out = hvd.allreduce(t, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(),
                               expected(torch.float32, hvd.Sum) / 4)
    c, ctx = hvd.Compression.fp16.compress(t)
    assert c.dtype == torch.float16
    assert hvd.Compression.fp16.decompress(c, ctx).dtype == torch.float32
    i = torch.ones(3, dtype=torch.int32)
    assert hvd.Compression.fp16.compress(i)[0].dtype == torch.int32


def test_gradients_flow_through_allreduce() -> None:
    x = rank_data(torch.float64, hvd.rank()).requires_grad_()
    y = hvd.allreduce(x, op=hvd.Sum, name="grad.sum")
    (y * (hvd.rank() + 1)).sum().backward()
    # d/dx_r of sum_q (q+1) * sum_r x_r = sum_q (q+1), the Sum of the
    # incoming gradients.
    want = sum(range(1, hvd.size() + 1))
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 5), want))
    xs = [torch.ones(2, requires_grad=True) for _ in range(2)]
    ys = hvd.grouped_allreduce(xs, op=hvd.Average)
    (ys[0].sum() + 2 * ys[1].sum()).backward()
    np.testing.assert_allclose(xs[0].grad.numpy(), [1, 1])
    np.testing.assert_allclose(xs[1].grad.numpy(), [2, 2])


def test_refused_arguments_raise_value_error_at_once() -> None:
    t = torch.ones(3)
    with pytest.raises(ValueError, match="Adasum takes float16"):
        hvd.allreduce(torch.ones(3, dtype=torch.int32), op=hvd.Adasum)
    with pytest.raises(ValueError, match="supersedes"):
        hvd.allreduce(t, op=hvd.Sum, average=True)
    with pytest.raises(ValueError, match="not supported"):
        hvd.allreduce(torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="not supported"):
        hvd.allreduce(torch.ones(3, dtype=torch.complex64))
    # The same name twice in flight on this rank: each rank's own name stays
    # pending until the barrier says every rank has checked, and only then
    # do the others submit it.
    mine = f"dup.{hvd.rank()}"
    h = hvd.allreduce_async_(torch.ones(2), name=mine)
    with pytest.raises(ValueError, match="dup"):
        hvd.allreduce_async_(torch.ones(2), name=mine)
    hvd.barrier()
    others = [hvd.allreduce_async_(torch.ones(2), name=f"dup.{q}")
              for q in range(hvd.size()) if q != hvd.rank()]
    for x in [h] + others:
        hvd.synchronize(x)


def test_ranks_that_disagree_get_horovod_internal_error() -> None:
    shape = (2 + hvd.rank(),)  # different on every rank
    with pytest.raises(hvd.HorovodInternalError, match="mismatch"):
        hvd.allreduce(torch.ones(shape), name="mismatched")
    dtype = torch.float32 if hvd.rank() == 0 else torch.float64
    with pytest.raises(hvd.HorovodInternalError):
        hvd.allreduce(torch.ones(2, dtype=dtype), name="mismatched.dtype")
    # The job goes on after such an error.
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()


@pytest.mark.parametrize("shape", [(7,), (300, 1001), (1 << 20,)],
                         ids=["small", "mid", "large"])
def test_tensors_in_shared_memory(shape: tuple) -> None:
    """hvd.empty_shared: zeroed, and an in-place allreduce of it gives what
    a plain tensor's does, the fused form included."""
    t = hvd.empty_shared(shape, dtype=torch.float32)
    assert t.shape == torch.Size(shape) and t.dtype == torch.float32
    assert int(t.count_nonzero()) == 0
    data = torch.arange(t.numel(), dtype=torch.float32).view(shape) % 7
    t.copy_(data + hvd.rank())
    plain = (data + hvd.rank()).clone()
    hvd.allreduce_(t, op=hvd.Sum, name=f"shared.{shape}")
    hvd.allreduce_(plain, op=hvd.Sum, name=f"plain.{shape}")
    assert torch.equal(t, plain)
    want = data * hvd.size() + sum(range(hvd.size()))
    assert torch.equal(t, want)
    # The tensor outlives its Python buffer object; the memory goes with
    # the last view.
    view = t[:1]
    del t
    hvd.barrier()
    assert float(view.flatten()[0]) == float(want.flatten()[0])


def test_empty_shared_shapes_and_dtypes() -> None:
    assert hvd.empty_shared(2, 3, dtype=torch.int64).shape == (2, 3)
    assert hvd.empty_shared(0).numel() == 0
    h = hvd.empty_shared([4], dtype=torch.float16)
    assert h.dtype == torch.float16 and h.shape == (4,)
