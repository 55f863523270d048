"""Starting every rank from one state: parameters, optimizer state,
objects; join and barrier."""

import numpy as np
import pytest
import torch

import horovod.torch as hvd


def model_for(rank: int) -> torch.nn.Module:
    torch.manual_seed(1234 + rank)  # different weights on every rank
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
                               torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 1))


def gathered_equal(t: torch.Tensor) -> bool:
    g = hvd.allgather(t.detach().reshape(1, -1).double())
    return bool((g == g[0]).all())


@pytest.mark.parametrize("form", ["state_dict", "named_parameters", "list"])
def test_broadcast_parameters(form: str) -> None:
    root = hvd.size() - 1
    model = model_for(hvd.rank())
    want = {k: v.clone() for k, v in model_for(root).state_dict().items()}
    if form == "state_dict":
        hvd.broadcast_parameters(model.state_dict(), root_rank=root)
        checked = model.state_dict().keys()
    elif form == "named_parameters":
        hvd.broadcast_parameters(model.named_parameters(), root_rank=root)
        checked = [k for k, _ in model.named_parameters()]
    else:
        hvd.broadcast_parameters(list(model.named_parameters()),
                                 root_rank=root)
        checked = [k for k, _ in model.named_parameters()]
    state = model.state_dict()
    for k in checked:
        assert torch.equal(state[k], want[k]), k


def test_broadcast_parameters_refuses_other_types() -> None:
    with pytest.raises(ValueError, match="invalid params"):
        hvd.broadcast_parameters(42, root_rank=0)


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: torch.optim.Adam(ps, lr=0.01),
    lambda ps: torch.optim.Adadelta(ps, lr=1.0),
], ids=["sgd", "adam", "adadelta"])
def test_broadcast_optimizer_state(make) -> None:
    r = hvd.rank()
    model = model_for(0)
    opt = make(model.parameters())
    # Rank-dependent state: some steps on rank-dependent data, and a
    # rank-dependent learning rate.
    for group in opt.param_groups:
        group["lr"] = group["lr"] * (r + 1)
    for _ in range(r + 1):
        opt.zero_grad()
        model(torch.randn(5, 4) * (r + 1)).sum().backward()
        opt.step()
    before = [p.detach().clone() for p in model.parameters()]
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    # Parameters are untouched; every state tensor and option is rank 0's.
    for p, b in zip(model.parameters(), before):
        assert torch.equal(p.detach(), b)
    for group in opt.param_groups:
        lrs = hvd.allgather_object(group["lr"])
        assert lrs == [lrs[0]] * hvd.size()
    for p in model.parameters():
        for key, value in sorted(opt.state[p].items()):
            if torch.is_tensor(value):
                assert gathered_equal(value), key
            else:
                got = hvd.allgather_object(value)
                assert got == [got[0]] * hvd.size(), key


def test_broadcast_optimizer_state_of_a_fresh_optimizer() -> None:
    model = model_for(hvd.rank())
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (hvd.rank() + 1))
    before = [p.detach().clone() for p in model.parameters()]
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for p, b in zip(model.parameters(), before):
        assert torch.equal(p.detach(), b)  # the initial step was undone
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)
    assert all(len(opt.state[p]) > 0 for p in model.parameters())


def test_a_fresh_optimizers_trainable_parameters_keep_zero_gradients() -> None:
    """As in Horovod: the state-making step leaves each trainable
    parameter's zero gradient in place, ready to broadcast; a frozen
    parameter keeps None."""
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    trained = torch.nn.Parameter(torch.full((4,), float(hvd.rank())))
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD([frozen, trained], lr=0.001, weight_decay=1e-6,
                        momentum=0.9, nesterov=True),
        named_parameters=[("frozen", frozen), ("trained", trained)])
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert frozen.grad is None
    assert torch.equal(trained.grad, torch.zeros(4))
    assert torch.equal(hvd.broadcast(trained.grad, root_rank=0),
                       torch.zeros(4))


def test_broadcast_object_and_allgather_object() -> None:
    r, n = hvd.rank(), hvd.size()
    obj = {"rank": r, "data": list(range(r * 3)), "text": "é" * r}
    got = hvd.broadcast_object(obj, root_rank=n - 1)
    assert got == {"rank": n - 1, "data": list(range((n - 1) * 3)),
                   "text": "é" * (n - 1)}
    assert hvd.broadcast_object(None, root_rank=0) is None
    every = hvd.allgather_object(obj)
    assert [o["rank"] for o in every] == list(range(n))
    assert every[r] == obj
    assert hvd.allgather_object(b"", name="empty") == [b""] * n


def test_barrier() -> None:
    for _ in range(5):
        hvd.barrier()


def test_broadcast_parameters_of_bare_tensors() -> None:
    r = hvd.rank()
    tensors = [torch.full((2,), float(r)), torch.full((3, 1), float(r) * 2)]
    hvd.broadcast_parameters(tensors, root_rank=0)
    assert tensors[0].tolist() == [0.0, 0.0]
    assert tensors[1].flatten().tolist() == [0.0] * 3
    with pytest.raises(ValueError, match="invalid params"):
        hvd.broadcast_parameters([1, 2], root_rank=0)


def test_objects_travel_with_cloudpickle() -> None:
    pytest.importorskip("cloudpickle")
    offset = 40 + hvd.rank()
    # A lambda with a closure: pickle refuses it, cloudpickle carries it.
    add = hvd.broadcast_object(lambda x: x + offset, root_rank=0)
    assert add(2) == 42
    got = hvd.allgather_object(lambda: hvd.rank() * 10)
    assert [f() for f in got] == [hvd.rank() * 10] * hvd.size()


def test_optimizer_state_made_where_a_parameter_had_no_gradient() -> None:
    torch.manual_seed(7)
    used, unused = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    params = list(used.parameters()) + list(unused.parameters()) + [frozen]
    opt = torch.optim.Adam(params, lr=0.1)
    if hvd.rank() == 0:
        # The root stepped with both layers; the others only with one, so
        # `unused` has no buffers there.
        (used(torch.ones(1, 3)).sum() + unused(torch.ones(1, 3)).sum()
         ).backward()
    else:
        used(torch.ones(1, 3)).sum().backward()
    opt.step()
    hvd.broadcast_optimizer_state(opt, 0)
    for p in params:
        for key, value in sorted(opt.state.get(p, {}).items()):
            if torch.is_tensor(value):
                assert gathered_equal(value), key
    assert len(opt.state.get(unused.weight, {})) > 0
