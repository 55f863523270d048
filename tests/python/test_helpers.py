"""The horovod.* helper modules that Horovod's own tests and users'
scripts import: horovod.runner.util.threads, horovod.common.util and
horovod.runner.common.util.env, with Horovod's behaviour."""

import os
import threading

import pytest

from horovod.common import util
from horovod.common.util import env
from horovod.runner.common.util.env import get_env_rank_and_size
from horovod.runner.util.threads import (execute_function_multithreaded,
                                         in_thread, on_event)


def test_in_thread_runs_the_target_and_silent_swallows_errors() -> None:
    got = []
    t = in_thread(got.append, args=(7,), name="adder")
    t.join()
    assert got == [7] and t.name == "adder" and t.daemon

    def boom() -> None:
        raise RuntimeError("lost")

    in_thread(boom, silent=True, daemon=False).join()  # no trace, no raise
    with pytest.raises(ValueError, match="tuple"):
        in_thread(got.append, args=[1])


def test_on_event_calls_once_the_event_is_set_and_never_after_stop() -> None:
    event, called = threading.Event(), threading.Event()
    t = on_event(event, called.set)
    assert not called.is_set()
    event.set()
    t.join()
    assert called.is_set()

    event2, stop, called2 = threading.Event(), threading.Event(), []
    t2 = on_event(event2, called2.append, args=(1,), stop=stop,
                  check_stop_interval_s=0.01, daemon=False)
    stop.set()
    t2.join()
    event2.set()
    assert called2 == []
    with pytest.raises(ValueError, match="stop event"):
        on_event(threading.Event(), print, daemon=False)
    with pytest.raises(ValueError, match="None"):
        on_event(None, print)


@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_execute_function_multithreaded_answers_by_index() -> None:
    args = [[i, i + 1] for i in range(20)]
    got = execute_function_multithreaded(lambda a, b: a * b, args,
                                         max_concurrent_executions=3)
    assert got == {i: i * (i + 1) for i in range(20)}
    assert args == [[i, i + 1] for i in range(20)]  # the caller's lists

    def fails(x: int) -> int:
        if x == 3:
            raise ValueError("three")
        return x

    with pytest.raises(RuntimeError, match="fails"):
        execute_function_multithreaded(fails, [[i] for i in range(5)])
    assert execute_function_multithreaded(
        fails, [[1]], block_until_all_done=False) is None


def test_env_sets_then_puts_back() -> None:
    os.environ["HVD_TEST_KEPT"] = "old"
    os.environ.pop("HVD_TEST_NEW", None)
    with env(HVD_TEST_KEPT="new", HVD_TEST_NEW="1", HVD_TEST_NONE=None):
        assert os.environ["HVD_TEST_KEPT"] == "new"
        assert os.environ["HVD_TEST_NEW"] == "1"
        assert "HVD_TEST_NONE" not in os.environ
    assert os.environ["HVD_TEST_KEPT"] == "old"
    assert "HVD_TEST_NEW" not in os.environ
    with pytest.raises(KeyError):
        with env(HVD_TEST_NEW="2"):
            raise KeyError("inside")
    assert "HVD_TEST_NEW" not in os.environ
    del os.environ["HVD_TEST_KEPT"]


def test_what_this_build_has() -> None:
    assert util.gloo_built() is True
    assert util.mpi_built() is False
    assert util.ddl_built() is False and util.ccl_built() is False
    assert isinstance(util.nccl_built(), int)
    assert util.extension_available("torch") is True
    assert util.extension_available("mxnet") is False
    assert util.gpu_available("mxnet") is False


def test_small_helpers() -> None:
    assert util.split_list(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert util.split_list([1], 3) == [[1], [], []]
    assert [n for n in range(10) if util.num_rank_is_power_2(n)] == [1, 2,
                                                                      4, 8]
    assert util.is_iterable([]) and not util.is_iterable(3)
    assert util.is_version_greater_equal_than("1.13.1", "1.13.0")
    assert not util.is_version_greater_equal_than("1.9.0", "1.13.0")
    with pytest.raises(ValueError, match="major.minor.patch"):
        util.is_version_greater_equal_than("1.0", "1.0")
    calls = []

    @util._cache
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    assert square(3) == square(3) == 9 and calls == [3]

    class Ops:
        Average, Sum, Adasum = "avg", "sum", "adasum"

    choose = util.get_average_backwards_compatibility_fun(Ops)
    assert choose(None, None) == "avg" and choose("adasum", None) == "adasum"
    with pytest.warns(DeprecationWarning):
        assert choose(None, False) == "sum"
    with pytest.raises(ValueError):
        choose("sum", True)
    assert util.get_extension_full_path("/a/b/__init__.py", "c", "mod") == \
        "/a/b/c/mod" + util.get_ext_suffix()
    with pytest.raises(ImportError, match="HVD_X"):
        util.check_extension("x", "HVD_X", "/nonexistent/__init__.py", "m")


@pytest.mark.parametrize("given, want", [
    ({}, (0, 1)),
    ({"HOROVOD_RANK": "2", "HOROVOD_SIZE": "4"}, (2, 4)),
    ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "3"}, (1, 3)),
    ({"PMI_RANK": "5", "PMI_SIZE": "6"}, (5, 6)),
    ({"HOROVOD_RANK": "0", "HOROVOD_SIZE": "2", "PMI_RANK": "5",
      "PMI_SIZE": "6"}, (0, 2)),
])
def test_get_env_rank_and_size(given: dict, want: tuple) -> None:
    names = ["HOROVOD_RANK", "HOROVOD_SIZE", "OMPI_COMM_WORLD_RANK",
             "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"]
    saved = {k: os.environ.pop(k) for k in names if k in os.environ}
    try:
        with env(**given):
            assert get_env_rank_and_size() == want
        with env(PMI_RANK="1"):
            with pytest.raises(RuntimeError, match="PMI_SIZE"):
                get_env_rank_and_size()
    finally:
        os.environ.update(saved)
