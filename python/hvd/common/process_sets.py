"""Process sets: collectives among a subset of the job's ranks.

A set is registered on every rank of the job, members or not, in the same
order: at ``init(process_sets=[...])``, or later with ``add_process_set``
when dynamic sets are on (``HOROVOD_DYNAMIC_PROCESS_SETS=1`` or
``init(process_sets="dynamic")``). Each set negotiates and moves data among
its members only.
"""

from typing import Any, Dict, List, Optional, Sequence, Union

from hvd import _core


class ProcessSet:
    """A set of ranks of the job (None: every rank, the global set)."""

    def __init__(self, ranks: Optional[Sequence[int]] = None) -> None:
        if ranks is not None and not isinstance(ranks, (list, tuple, range)):
            raise ValueError(
                "ProcessSet takes a list of ranks (hvd starts no MPI, so an "
                "MPI communicator cannot define one)")
        self.ranks: Optional[List[int]] = (
            sorted(int(r) for r in ranks) if ranks is not None else None)
        self.process_set_id: Optional[int] = None

    def size(self) -> Optional[int]:
        """The number of ranks in the set (None before it is registered)."""
        if self.process_set_id is None:
            return None
        return _core.process_set_size(self.process_set_id)

    def rank(self) -> Optional[int]:
        """This process's rank within the set: -1 when it is not a member,
        None before the set is registered."""
        if self.process_set_id is None:
            return None
        return _core.process_set_rank(self.process_set_id)

    def included(self) -> Optional[bool]:
        """Whether this process is a member (None before registration)."""
        if self.process_set_id is None:
            return None
        return _core.process_set_rank(self.process_set_id) >= 0

    def __repr__(self) -> str:
        ranks = "all" if self.ranks is None else self.ranks
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={ranks})"


global_process_set = ProcessSet()
_registered: Dict[int, ProcessSet] = {}
# What frameworks keep per set (counters of unnamed operations), cleared at
# shutdown: the next init() numbers its sets from 1 again.
_on_shutdown: List[Any] = []


def _as_set(process_set: Union[ProcessSet, Sequence[int]]) -> ProcessSet:
    if isinstance(process_set, ProcessSet):
        return process_set
    return ProcessSet(process_set)


def _check_init_argument(process_sets: Any) -> None:
    if process_sets is None or process_sets == "dynamic":
        return
    if isinstance(process_sets, str) or not hasattr(process_sets, "__iter__"):
        raise ValueError("init(process_sets=...) takes a list of ProcessSet "
                         "objects, or 'dynamic'")


def _init_arguments(process_sets: Any) -> tuple:
    """What the extension's init takes: the sets' rank lists, and whether
    sets may change later."""
    if process_sets == "dynamic":
        return [], True
    sets = [_as_set(p) for p in (process_sets or [])]
    return [ps.ranks for ps in sets
            if ps.ranks is not None and ps is not global_process_set], False


def _after_init(process_sets: Any) -> None:
    global_process_set.process_set_id = 0
    # As Horovod's: the global set lists every rank once the job is joined.
    global_process_set.ranks = list(range(_core.size()))
    if process_sets is None or process_sets == "dynamic":
        return
    ids = _core.process_set_ids()[1:]
    sets = [p for p in process_sets
            if isinstance(p, ProcessSet) and p.ranks is not None and
            p is not global_process_set]
    for ps, set_id in zip(sets, ids):
        ps.process_set_id = set_id
        _registered[set_id] = ps


def _before_shutdown() -> None:
    for reset in _on_shutdown:
        reset()
    for ps in _registered.values():
        ps.process_set_id = None
    _registered.clear()


def _set_id(process_set: ProcessSet) -> int:
    """The id of a registered set, for the extension."""
    if process_set is global_process_set:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise ValueError("process_set must be a ProcessSet (e.g. "
                         "hvd.global_process_set or one add_process_set "
                         "returned)")
    if process_set.process_set_id is None:
        raise ValueError(f"{process_set!r} is not registered: pass it to "
                         "hvd.init(process_sets=...) or hvd.add_process_set()")
    return process_set.process_set_id


def add_process_set(process_set: Union[ProcessSet, Sequence[int]]
                    ) -> ProcessSet:
    """Registers a set on every rank (all must call it, in the same order)
    and returns it. Needs dynamic process sets."""
    ps = _as_set(process_set)
    if ps is global_process_set or ps.ranks is None:
        raise ValueError("the global process set is always there")
    if ps.process_set_id is not None:
        raise ValueError(f"{ps!r} is registered already")
    ps.process_set_id = _core.add_process_set(ps.ranks)
    _registered[ps.process_set_id] = ps
    return ps


def remove_process_set(process_set: ProcessSet) -> bool:
    """Unregisters a set on every rank (all must call it, with nothing of
    the set in flight). True once removed; False, as in Horovod, for the
    global set and for a set that is not registered (never, or no more)."""
    set_id = getattr(process_set, "process_set_id", None)
    if process_set is global_process_set or set_id is None or set_id == 0:
        return False
    _registered.pop(set_id, None)
    process_set.process_set_id = None
    if set_id not in _core.process_set_ids():
        return False
    _core.remove_process_set(set_id)
    return True
