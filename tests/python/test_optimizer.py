"""DistributedOptimizer and SyncBatchNorm: averaged gradients, every rank
ending with bit-identical weights, and the options Horovod has."""

import warnings

import numpy as np
import pytest
import torch

import horovod.torch as hvd


def make_model() -> torch.nn.Module:
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 2))


def batch(rank: int, step: int):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(5, 6, generator=g), torch.randn(5, 2, generator=g)


def weights(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def identical_everywhere(t: torch.Tensor) -> bool:
    g = hvd.allgather(t.reshape(1, -1))
    return bool((g == g[0]).all())


def local_average_gradients(step: int, model: torch.nn.Module):
    """The gradients every rank's batch gives, averaged here (numpy)."""
    grads = []
    for q in range(hvd.size()):
        m = make_model()
        m.load_state_dict(model.state_dict())
        x, y = batch(q, step)
        torch.nn.functional.mse_loss(m(x), y).backward()
        grads.append([p.grad.double().numpy() for p in m.parameters()])
    return [np.mean([g[i] for g in grads], axis=0)
            for i in range(len(grads[0]))]


def test_gradients_are_the_average_and_weights_stay_identical() -> None:
    model = make_model()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.05),
        named_parameters=model.named_parameters())
    for step in range(5):
        want = local_average_gradients(step, model)
        opt.zero_grad()
        x, y = batch(hvd.rank(), step)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.synchronize()
        for p, g in zip(model.parameters(), want):
            np.testing.assert_allclose(p.grad.double().numpy(), g,
                                       rtol=1e-5, atol=1e-6)
        with opt.skip_synchronize():
            opt.step()
    assert identical_everywhere(weights(model))


def test_a_training_run_leaves_bit_identical_weights() -> None:
    model = make_model()
    opt = hvd.DistributedOptimizer(
        torch.optim.Adam(model.parameters(), lr=0.01),
        named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for step in range(20):
        opt.zero_grad()
        x, y = batch(hvd.rank(), step)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    assert identical_everywhere(weights(model))
    assert isinstance(opt, torch.optim.Adam)


def test_backward_passes_per_step_accumulates_locally() -> None:
    model = make_model()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.05),
        named_parameters=model.named_parameters(),
        backward_passes_per_step=2)
    opt.zero_grad()
    for half in range(2):
        x, y = batch(hvd.rank(), half)
        torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    assert identical_everywhere(weights(model))
    # A third pass before step() is one too many.
    opt.zero_grad()
    with pytest.raises(AssertionError, match="backward_passes_per_step"):
        for half in range(3):
            x, y = batch(hvd.rank(), half)
            torch.nn.functional.mse_loss(model(x), y).backward()
    opt.synchronize()


@pytest.mark.parametrize("kwargs", [
    {"op": hvd.Sum},
    {"gradient_predivide_factor": 2.0},
    {"compression": hvd.Compression.fp16},
    {"groups": 2},
    {"groups": "lists"},
], ids=["sum", "predivide", "fp16", "groups-int", "groups-lists"])
def test_options(kwargs) -> None:
    model = make_model()
    params = list(model.parameters())
    if kwargs.get("groups") == "lists":
        kwargs = {"groups": [params[:2], params[2:]]}
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.05),
        named_parameters=model.named_parameters(), **kwargs)
    want = local_average_gradients(0, model)
    if kwargs.get("op") == hvd.Sum:
        want = [g * hvd.size() for g in want]
    tol = 2e-3 if "compression" in kwargs else 1e-5
    opt.zero_grad()
    x, y = batch(hvd.rank(), 0)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.synchronize()
    for p, g in zip(model.parameters(), want):
        np.testing.assert_allclose(p.grad.double().numpy(), g, rtol=tol,
                                   atol=tol)
    with opt.skip_synchronize():
        opt.step()
    assert identical_everywhere(weights(model))


def test_unused_parameters_are_still_reduced() -> None:
    model = make_model()
    extra = torch.nn.Linear(2, 2)
    params = list(model.named_parameters()) + [
        ("extra." + k, v) for k, v in extra.named_parameters()]
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD([p for _, p in params], lr=0.1),
        named_parameters=params)
    opt.zero_grad()
    x, y = batch(hvd.rank(), 0)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()  # `extra` never ran: its gradient is reduced as zeros
    assert identical_everywhere(weights(model))


def test_errors_and_warnings() -> None:
    model = make_model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="predivide"):
        hvd.DistributedOptimizer(sgd, op=hvd.Adasum,
                                 gradient_predivide_factor=2.0)
    with pytest.raises(ValueError, match="predivide"):
        hvd.DistributedOptimizer(sgd, op=hvd.Sum,
                                 gradient_predivide_factor=2.0)
    named = list(model.named_parameters())
    with pytest.raises(ValueError, match="unique"):
        hvd.DistributedOptimizer(sgd, named_parameters=[named[0], named[0]]
                                 + named[1:])
    with pytest.raises(ValueError, match="not named"):
        hvd.DistributedOptimizer(sgd, named_parameters=named[1:])
    opt = hvd.DistributedOptimizer(sgd, named_parameters=named)
    x, y = batch(hvd.rank(), 0)
    torch.nn.functional.mse_loss(model(x), y).backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        opt.zero_grad()
    opt.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.step()  # synchronize() again without skip_synchronize()
    assert any("skip_synchronize" in str(w.message) for w in caught)
    opt.zero_grad()


def test_sync_batch_norm_matches_batch_norm_on_the_whole_batch() -> None:
    r, n = hvd.rank(), hvd.size()
    g = torch.Generator().manual_seed(3)
    full = torch.randn(4 * n, 3, 5, generator=g, dtype=torch.float64)
    weight_grad = torch.randn(4 * n, 3, 5, generator=g, dtype=torch.float64)
    mine = slice(4 * r, 4 * r + 4)

    sync = hvd.SyncBatchNorm(3).double()
    ref = torch.nn.BatchNorm1d(3).double()
    with torch.no_grad():
        sync.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
        ref.weight.copy_(sync.weight)
    x = full[mine].clone().requires_grad_()
    y = sync(x)
    (y * weight_grad[mine]).sum().backward()
    xr = full.clone().requires_grad_()
    yr = ref(xr)
    (yr * weight_grad).sum().backward()

    np.testing.assert_allclose(y.detach().numpy(), yr[mine].detach().numpy(),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(x.grad.numpy(), xr.grad[mine].numpy(),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sync.running_mean.numpy(),
                               ref.running_mean.numpy(), rtol=1e-9)
    np.testing.assert_allclose(sync.running_var.numpy(),
                               ref.running_var.numpy(), rtol=1e-9)
    # Weight and bias gradients: the local sums, which add up to the
    # reference's over ranks.
    wsum = hvd.allreduce(sync.weight.grad, op=hvd.Sum)
    np.testing.assert_allclose(wsum.numpy(), ref.weight.grad.numpy(),
                               rtol=1e-9)
    bsum = hvd.allreduce(sync.bias.grad, op=hvd.Sum)
    np.testing.assert_allclose(bsum.numpy(), ref.bias.grad.numpy(),
                               rtol=1e-9)
    sync.eval()
    np.testing.assert_allclose(sync(full[mine]).detach().numpy(),
                               ref.eval()(full[mine]).detach().numpy(),
                               rtol=1e-9)


def test_horovods_remaining_surface() -> None:
    model = torch.nn.Linear(3, 1)
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        named_parameters=model.named_parameters())
    assert set(opt._parameter_names.values()) == {"weight", "bias"}
    opt.set_backward_passes_per_step(2)
    for _ in range(2):  # two passes accumulate, then one allreduce
        model(torch.ones(1, 3)).sum().backward()
    opt.step()
    opt.zero_grad()
    # A pass in flight is dropped by load_state_dict: the next step starts
    # clean, and zero_grad is allowed again.
    model(torch.ones(1, 3)).sum().backward()
    opt.load_state_dict(opt.state_dict())
    opt.zero_grad()
    opt.set_backward_passes_per_step(1)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    with pytest.raises(ValueError):
        opt.set_backward_passes_per_step(0)


def test_hooks_only_on_the_sets_members() -> None:
    hvd.shutdown()
    hvd.init(process_sets="dynamic")
    try:
        ps = hvd.add_process_set([0])
        model = torch.nn.Linear(2, 1)
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1), process_set=ps)
        assert (len(opt._grad_accs) > 0) == (hvd.rank() == 0)
        hvd.remove_process_set(ps)
    finally:
        hvd.shutdown()
        hvd.init()


def _embedding_grads(sparse_as_dense: bool, make_opt) -> torch.Tensor:
    """Rank q looks up row q of a shared embedding; the reduced gradient
    (summed with rank q's row weighed q + 1, then averaged)."""
    torch.manual_seed(3)
    emb = torch.nn.Embedding(hvd.size() + 2, 3, sparse=True)
    hvd.broadcast_parameters(emb.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(make_opt(emb.parameters()),
                                   named_parameters=emb.named_parameters(),
                                   sparse_as_dense=sparse_as_dense)
    hvd.broadcast_optimizer_state(opt, 0, model=emb)
    r = hvd.rank()
    (emb(torch.tensor([r])) * (r + 1)).sum().backward()
    opt.synchronize()
    grad = emb.weight.grad
    # Dense only on the wire: the sum comes back as a sparse gradient.
    assert grad.is_sparse
    with opt.skip_synchronize():
        opt.step()
    assert gathered_weights_equal(emb.weight)
    return grad.to_dense() if grad.is_sparse else grad


def gathered_weights_equal(t: torch.Tensor) -> bool:
    g = hvd.allgather(t.detach().reshape(1, -1).double())
    return bool((g == g[0]).all())


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_sparse_gradients(sparse_as_dense: bool) -> None:
    n = hvd.size()
    grad = _embedding_grads(
        sparse_as_dense, lambda ps: torch.optim.SparseAdam(list(ps), lr=0.1))
    want = np.zeros((n + 2, 3))
    for q in range(n):
        want[q] = (q + 1) / n
    np.testing.assert_allclose(grad.numpy(), want, rtol=1e-6)


def test_sparse_allreduce_async_gathers_indices_and_values() -> None:
    n, r = hvd.size(), hvd.rank()
    t = torch.sparse_coo_tensor([[r, n]], [1.0, 2.0], (n + 1,))
    total = hvd.sparse_allreduce_async(t, name="sparse.sum", op=hvd.Sum)()
    want = [1.0] * n + [2.0 * n]
    assert total.to_dense().tolist() == want
