"""op=hvd.Adasum: the pairwise formula on known vectors at 2, 3, 4 and 8
ranks (numpy computes the tree), fused and scaled forms, the delta
optimizer step by step, and training that learns."""

import sys

import numpy as np
import pytest
import torch

import horovod.torch as hvd

# Horovod's floor (sqrt(DBL_MIN)): a squared norm below it counts as zero.
NORM_FLOOR = sys.float_info.min ** 0.5


def pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """adasum(a, b) from its definition (Horovod's)."""
    dot, aa, bb = float(a @ b), float(a @ a), float(b @ b)
    ca = 1 - dot / (2 * aa) if aa >= NORM_FLOOR else 1.0
    cb = 1 - dot / (2 * bb) if bb >= NORM_FLOOR else 1.0
    return ca * a + cb * b


def tree(vectors: list) -> np.ndarray:
    """hvd's order: rank q + i folds into rank i (q the largest power of
    two not above the rank count), then pairs at distance 1, 2, 4, ..."""
    g = [np.asarray(v, dtype=np.float64) for v in vectors]
    p = len(g)
    q = 1
    while q * 2 <= p:
        q *= 2
    for i in range(p - q):
        g[i] = pair(g[i], g[q + i])
    d = 1
    while d < q:
        for i in range(0, q, 2 * d):
            g[i] = pair(g[i], g[i + d])
        d *= 2
    return g[0]


def vector(r: int, n: int = 11, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(100 * seed + r).standard_normal(n)


def test_the_formula_by_hand_at_two_ranks() -> None:
    # a = (1, 0), b = (1, 1): a.b = 1, |a|^2 = 1, |b|^2 = 2, so
    # 0.5 a + 0.75 b = (1.25, 0.75).
    np.testing.assert_allclose(pair(np.array([1.0, 0]), np.array([1.0, 1])),
                               [1.25, 0.75])
    if hvd.size() == 2:
        mine = torch.tensor([[1.0, 0.0], [1.0, 1.0]][hvd.rank()])
        out = hvd.allreduce(mine, op=hvd.Adasum, name="by_hand")
        np.testing.assert_allclose(out.numpy(), [1.25, 0.75], rtol=1e-6)


def test_orthogonal_gradients_add_equal_ones_stay() -> None:
    one_hot = torch.zeros(hvd.size(), dtype=torch.float64)
    one_hot[hvd.rank()] = 3.0
    out = hvd.allreduce(one_hot, op=hvd.Adasum, name="orthogonal")
    np.testing.assert_allclose(out.numpy(), np.full(hvd.size(), 3.0))
    same = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    out = hvd.allreduce(same, op=hvd.Adasum, name="same")
    np.testing.assert_allclose(out.numpy(), same.numpy())


@pytest.mark.parametrize("dtype,rtol", [(torch.float64, 1e-12),
                                        (torch.float32, 1e-5),
                                        (torch.float16, 2e-2)], ids=str)
def test_known_vectors_match_the_tree(dtype: torch.dtype, rtol: float) -> None:
    mine = torch.tensor(vector(hvd.rank())).to(dtype)
    out = hvd.allreduce(mine, op=hvd.Adasum, name=f"tree.{dtype}")
    assert out.dtype == dtype
    sent = [torch.tensor(vector(r)).to(dtype).double().numpy()
            for r in range(hvd.size())]
    np.testing.assert_allclose(out.double().numpy(), tree(sent), rtol=rtol,
                               atol=rtol)
    # Every rank holds the same bits.
    g = hvd.allgather(out.reshape(1, -1))
    assert bool((g == g[0]).all())


def test_grouped_tensors_combine_each_alone_with_scale_factors() -> None:
    mine = [torch.tensor(vector(hvd.rank(), n, seed)).float()
            for seed, n in enumerate([4, 1, 37])]
    outs = hvd.grouped_allreduce(mine, op=hvd.Adasum, name="grouped",
                                 prescale_factor=0.5, postscale_factor=4.0)
    for seed, (n, out) in enumerate(zip([4, 1, 37], outs)):
        want = 4.0 * tree([0.5 * vector(r, n, seed)
                           for r in range(hvd.size())])
        np.testing.assert_allclose(out.double().numpy(), want, rtol=1e-5,
                                   atol=1e-6)


def test_the_gradient_of_an_adasum_allreduce_is_adasum() -> None:
    x = torch.tensor(vector(hvd.rank(), 5), requires_grad=True)
    y = hvd.allreduce(x, op=hvd.Adasum, name="grad.fwd")
    w = torch.tensor(vector(hvd.rank(), 5, seed=9))
    (y * w).sum().backward()
    want = tree([vector(r, 5, seed=9) for r in range(hvd.size())])
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-10)


def test_reducescatter_refuses_adasum() -> None:
    with pytest.raises(RuntimeError, match="Adasum"):
        hvd.reducescatter(torch.ones(hvd.size(), 2), op=hvd.Adasum)


# ---------------------------------------------------------- delta optimizer


def make_model() -> torch.nn.Module:
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(),
                               torch.nn.Linear(6, 1))


def batch(rank: int, step: int):
    g = torch.Generator().manual_seed(977 * step + rank)
    x = torch.randn(8, 4, generator=g)
    return x, x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])


def local_delta(model: torch.nn.Module, rank: int, step: int,
                lr: float) -> list:
    """What one SGD step on `rank`'s batch changes, computed here."""
    m = make_model()
    m.load_state_dict(model.state_dict())
    x, y = batch(rank, step)
    torch.nn.functional.mse_loss(m(x), y).backward()
    return [(-lr * p.grad).double().numpy().reshape(-1)
            for p in m.parameters()]


def test_the_step_adds_the_adasum_of_every_ranks_delta() -> None:
    model = make_model()
    lr = 0.1
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=lr),
        named_parameters=model.named_parameters(), op=hvd.Adasum)
    for step in range(3):
        before = [p.detach().double().numpy().reshape(-1).copy()
                  for p in model.parameters()]
        deltas = [local_delta(model, r, step, lr) for r in range(hvd.size())]
        opt.zero_grad()
        x, y = batch(hvd.rank(), step)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        for i, p in enumerate(model.parameters()):
            want = before[i] + tree([d[i] for d in deltas])
            np.testing.assert_allclose(p.detach().double().numpy().reshape(-1),
                                       want, rtol=1e-5, atol=1e-6)
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        g = hvd.allgather(flat.reshape(1, -1))
        assert bool((g == g[0]).all())


def test_adasum_training_learns() -> None:
    model = make_model()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5),
        named_parameters=model.named_parameters(), op=hvd.Adasum,
        compression=hvd.Compression.fp16, backward_passes_per_step=2)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

    def loss_at(step: int) -> float:
        x, y = batch(hvd.rank() + 100, step)
        with torch.no_grad():
            return float(torch.nn.functional.mse_loss(model(x), y))
    first = loss_at(0)
    for step in range(60):
        opt.zero_grad()
        for half in range(2):
            x, y = batch(hvd.rank(), 2 * step + half)
            torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    last = loss_at(0)
    assert last < 0.2 * first, (first, last)


def test_adasum_optimizer_refuses_skip_synchronize() -> None:
    model = make_model()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Adasum)
    if hvd.size() > 1:
        with pytest.raises(AssertionError, match="Adasum"):
            with opt.skip_synchronize():
                pass
