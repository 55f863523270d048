"""Elastic training, framework-neutral: states that commit, restore and
sync, and the loop that resets after a failure or a host change (as
Horovod's horovod.common.elastic)."""

import copy
import functools
import queue
import time
from typing import Any, Callable, Dict, List

from hvd import _core
from hvd.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from hvd.runner.elastic.worker import (HostUpdateResult,
                                       WorkerNotificationManager)

# The process's listener for the launcher's host updates; run() registers
# its state with it (as Horovod's horovod.common.elastic does).
notification_manager = WorkerNotificationManager()


class State:
    """What survives a reset: saved at commit(), restored after a failure,
    synced from rank 0 after every (re)start."""

    def __init__(self, bcast_object: Callable[..., Any],
                 get_rank: Callable[[], int]) -> None:
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks: List[Callable[[], None]] = []
        # Host updates (timestamp, HostUpdateResult) not yet acted on, and
        # the newest one acted on.
        self._host_messages: "queue.Queue[Any]" = queue.Queue()
        self._last_updated_timestamp = 0.0

    def register_reset_callbacks(self,
                                 callbacks: List[Callable[[], None]]) -> None:
        """Called after each reset, before sync (e.g. to rescale a learning
        rate to the new size)."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self) -> None:
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp: float,
                         update_res: HostUpdateResult) -> None:
        """Queues a host update for the next check (the notification
        manager calls it as the launcher makes each one)."""
        self._host_messages.put((timestamp, update_res))

    def commit(self) -> None:
        """Saves the state, then raises HostsUpdatedInterrupt if the job's
        hosts changed (every rank at the same commit)."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self) -> None:
        """Raises HostsUpdatedInterrupt when a host update newer than the
        last one acted on arrived (skip_sync when hosts were only removed:
        the survivors' state is already the same). Rank 0's view decides
        for every rank, so all of them raise at the same commit."""
        prev = last = self._last_updated_timestamp
        update = HostUpdateResult.no_update
        while not self._host_messages.empty():
            timestamp, result = self._host_messages.get()
            if timestamp > last:
                last = timestamp
                update |= result
        if last <= prev and self._rank() == 0 and _core.hosts_changed():
            # A new membership whose update was not (yet) heard: what
            # changed is not told, so the state is synced. (Asked only
            # then: it is a call to the rendezvous.)
            last = max(prev + 1e-6, time.time())
            update |= HostUpdateResult.mixed
        prev, self._last_updated_timestamp, update = self._bcast_object(
            (prev, last, int(update)), root_rank=0, name="elastic.hosts")
        if self._last_updated_timestamp > prev:
            raise HostsUpdatedInterrupt(update == HostUpdateResult.removed)

    def save(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        pass


class ObjectState(State):
    """A state of plain picklable attributes (``state.epoch``...)."""

    def __init__(self, bcast_object: Callable[..., Any],
                 get_rank: Callable[[], int], **kwargs: Any) -> None:
        self._saved_state: Dict[str, Any] = kwargs
        self._set_attrs()
        super().__init__(bcast_object, get_rank)

    def save(self) -> None:
        self._saved_state = {k: copy.deepcopy(getattr(self, k))
                             for k in self._saved_state}

    def restore(self) -> None:
        self._set_attrs()

    def sync(self) -> None:
        if self._saved_state:
            self._saved_state = self._bcast_object(
                self._saved_state, root_rank=0, name="elastic.object_state")
            self._set_attrs()

    def _set_attrs(self) -> None:
        for k, v in self._saved_state.items():
            setattr(self, k, copy.deepcopy(v))


def run_fn(func: Callable[..., Any],
           reset: Callable[[], None]) -> Callable[..., Any]:
    """Wraps a training function ``func(state, ...)``: it runs after the
    state is synced from rank 0; a HorovodInternalError (a peer is gone)
    restores the last commit, a HostsUpdatedInterrupt keeps the state as
    just committed; either way the job is joined again (``reset``) and the
    function called anew."""

    @functools.wraps(func)
    def wrapper(state: State, *args: Any, **kwargs: Any) -> Any:
        notification_manager.init()
        notification_manager.register_listener(state)
        skip_sync = False
        try:
            while True:
                try:
                    if not skip_sync:
                        state.sync()
                    return func(state, *args, **kwargs)
                except HorovodInternalError:
                    state.restore()
                    skip_sync = False
                except HostsUpdatedInterrupt as e:
                    skip_sync = e.skip_sync
                reset()
                state.on_reset()
        finally:
            notification_manager.remove_listener(state)

    return wrapper
