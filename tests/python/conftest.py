"""Every test module runs on every rank of a horovodrun job, in the same
order; the job is joined once per process."""

import pytest

torch = pytest.importorskip("torch")
hvd = pytest.importorskip("horovod.torch")


@pytest.fixture(scope="session", autouse=True)
def joined() -> None:
    hvd.init()
    yield
    hvd.shutdown()
