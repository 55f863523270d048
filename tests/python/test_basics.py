"""Joining, leaving, and where this process stands."""

import json
import os
import tempfile

import pytest
import torch

import horovod.torch as hvd


def test_assignment_matches_the_launcher() -> None:
    assert hvd.is_initialized()
    assert hvd.size() == int(os.environ["HOROVOD_SIZE"])
    assert 0 <= hvd.rank() < hvd.size()
    assert hvd.local_size() == hvd.size()  # one host
    assert hvd.local_rank() == hvd.rank()
    assert hvd.cross_size() == 1 and hvd.cross_rank() == 0
    assert hvd.is_homogeneous()
    ranks = hvd.allgather_object(hvd.rank())
    assert ranks == list(range(hvd.size()))


def test_build_queries() -> None:
    assert hvd.gloo_built() and hvd.gloo_enabled()
    assert not hvd.mpi_built() and not hvd.mpi_enabled()
    # As Horovod answers where MPI is not enabled.
    with pytest.raises(ValueError, match="MPI is not enabled"):
        hvd.mpi_threads_supported()
    assert not hvd.ddl_built() and not hvd.ccl_built()
    assert not hvd.rocm_built()
    # The NCCL version as an int (0 without), so versions compare.
    nccl = hvd.nccl_built()
    assert type(nccl) is int
    assert nccl == 0 or nccl >= 2000
    assert hvd.cuda_built() == (nccl > 0)


def test_the_same_module_under_both_names() -> None:
    import hvd.torch as ours
    import horovod.torch.mpi_ops as theirs_ops
    import hvd.torch.mpi_ops as ours_ops
    from horovod.common.exceptions import HorovodInternalError
    assert ours is hvd
    assert theirs_ops is ours_ops
    assert HorovodInternalError is hvd.HorovodInternalError
    assert issubclass(HorovodInternalError, RuntimeError)


def test_init_is_idempotent_and_shutdown_then_init_joins_again() -> None:
    hvd.init()  # already initialised: nothing happens
    before = hvd.rank()
    for round_ in range(3):
        hvd.shutdown()
        assert not hvd.is_initialized()
        with pytest.raises(ValueError, match="not been initialized"):
            hvd.rank()
        with pytest.raises(ValueError):
            hvd.allreduce(torch.ones(1))
        hvd.init()
        assert hvd.rank() == before
        got = hvd.allreduce(torch.tensor([float(round_)]), op=hvd.Sum)
        assert got.item() == round_ * hvd.size()


def test_init_refuses_an_mpi_communicator() -> None:
    with pytest.raises(ValueError, match="comm"):
        hvd.init(comm=object())


def _rejoin(timeline: str) -> None:
    """Leaves and joins again with HOROVOD_TIMELINE as given ("": unset)."""
    hvd.shutdown()
    if timeline:
        os.environ["HOROVOD_TIMELINE"] = timeline
    else:
        os.environ.pop("HOROVOD_TIMELINE", None)
    hvd.init()


def test_start_timeline_needs_horovod_timeline_at_init() -> None:
    _rejoin("")
    with pytest.raises(ValueError, match="HOROVOD_TIMELINE=DYNAMIC"):
        hvd.start_timeline(os.path.join(tempfile.gettempdir(), "never.json"))


def test_timeline_started_and_stopped_at_run_time() -> None:
    _rejoin("DYNAMIC")
    path = os.path.join(tempfile.gettempdir(),
                        f"hvd-py-timeline-{os.getpid()}.json")
    # Every rank names its own file; rank 0 writes.
    hvd.start_timeline(path)
    with pytest.raises(ValueError):
        if hvd.rank() == 0:
            hvd.start_timeline(path + ".2")  # one is recording already
        else:
            raise ValueError("only rank 0 records")
    hvd.allreduce(torch.ones(4), name="timeline.tensor")
    hvd.stop_timeline()
    if hvd.rank() == 0:
        with open(path) as f:
            events = json.load(f)
        os.unlink(path)
        names = json.dumps(events)
        assert "allreduce.timeline.tensor" in names
    _rejoin("")
