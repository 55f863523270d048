"""Process sets: collectives among a subset of the job's ranks.

Only the global set (every rank) exists so far; ``add_process_set`` and
``init(process_sets=...)`` with other sets say so with a ValueError.
"""

from typing import List, Optional, Sequence

from hvd import _core


class ProcessSet:
    """A set of ranks, named by the sorted list of them (None: every rank)."""

    def __init__(self, ranks: Optional[Sequence[int]] = None) -> None:
        self.ranks: Optional[List[int]] = (
            sorted(int(r) for r in ranks) if ranks is not None else None)
        self.process_set_id: Optional[int] = None

    def _global(self) -> bool:
        return self.process_set_id == 0

    def size(self) -> Optional[int]:
        if self.process_set_id is None:
            return None
        return _core.size() if self._global() else len(self.ranks or [])

    def rank(self) -> Optional[int]:
        if self.process_set_id is None:
            return None
        if self._global():
            return _core.rank()
        me = _core.rank()
        return self.ranks.index(me) if self.ranks and me in self.ranks else -1

    def included(self) -> Optional[bool]:
        if self.process_set_id is None:
            return None
        return self._global() or _core.rank() in (self.ranks or [])

    def __repr__(self) -> str:
        if self._global():
            return "ProcessSet(process_set_id=0, ranks=all)"
        return (f"ProcessSet(process_set_id={self.process_set_id}, "
                f"ranks={self.ranks})")


global_process_set = ProcessSet()
global_process_set.process_set_id = 0

_UNSUPPORTED = ("process sets other than the global one are not available "
                "in this hvd yet; leave process_set at its default")


def _check_init_argument(process_sets: Optional[Sequence[object]]) -> None:
    if process_sets is None or process_sets == "dynamic":
        return
    for ps in process_sets:
        if isinstance(ps, ProcessSet) and ps.ranks is None:
            continue
        raise ValueError(_UNSUPPORTED)


def _after_init(process_sets: Optional[Sequence[object]]) -> None:
    global_process_set.process_set_id = 0


def _before_shutdown() -> None:
    pass


def _check(process_set: ProcessSet) -> None:
    """Refuses a collective on a set other than the global one."""
    if process_set is not global_process_set and (
            not isinstance(process_set, ProcessSet)
            or process_set.process_set_id != 0):
        raise ValueError(_UNSUPPORTED)


def add_process_set(process_set: object) -> ProcessSet:
    raise ValueError(_UNSUPPORTED)


def remove_process_set(process_set: ProcessSet) -> bool:
    raise ValueError(_UNSUPPORTED)
