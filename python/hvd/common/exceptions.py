"""Exceptions of Horovod's Python API."""

from hvd import _core


class HorovodInternalError(RuntimeError):
    """A collective failed: a peer died, timed out, or the ranks disagreed.

    The job cannot go on with this generation of workers; elastic training
    catches it, restores the last commit and re-initialises.
    """


class HostsUpdatedInterrupt(RuntimeError):
    """The job's hosts changed; raised at a commit in elastic training."""

    def __init__(self, skip_sync: bool = False) -> None:
        super().__init__()
        self.skip_sync = skip_sync


# Failed collectives raise this class from the extension itself.
_core.set_internal_error(HorovodInternalError)
