"""horovod.run: Horovod's Python launcher API, called from one process; it
starts its own jobs through horovodrun."""

import pytest

import horovod


def _ranks_and_sum(offset: int, scale: int = 1) -> tuple:
    import horovod.torch as hvd
    import torch
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum)
    return hvd.rank(), hvd.size(), offset + scale * int(total.item())


def test_returns_every_ranks_value_in_rank_order() -> None:
    got = horovod.run(_ranks_and_sum, args=(100,), kwargs={"scale": 2},
                      np=3)
    assert got == [(r, 3, 100 + 2 * 3) for r in range(3)]


def test_lambdas_travel_and_the_runner_module_is_the_same() -> None:
    from horovod.runner import run
    assert run is horovod.runner.run
    assert run(lambda x: x * 2, args=(21,), np=2) == [42, 42]


def _fails_on_rank_one() -> int:
    import os
    rank = int(os.environ["HOROVOD_RANK"])
    if rank == 1:
        raise KeyError(f"nothing for rank {rank}")
    return rank


def test_a_ranks_exception_comes_back_with_its_traceback() -> None:
    with pytest.raises(KeyError, match="nothing for rank 1") as caught:
        horovod.run(_fails_on_rank_one, np=2)
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "raised on rank 1" in notes
    assert "_fails_on_rank_one" in notes  # the rank's own traceback


def test_bad_arguments_are_horovodruns_error() -> None:
    with pytest.raises(RuntimeError, match="horovodrun exited with status 2"):
        horovod.run(lambda: 1, np=2, hosts="localhost:1")
