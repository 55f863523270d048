"""What a worker learns of the job's hosts while it runs (Horovod's
horovod.runner.elastic.worker): the kinds of change a host update is, and
the manager that hands each update the launcher makes to the registered
states (``State.on_hosts_updated``), as it happens.

Horovod's driver sends updates to a service in each worker; hvd's
launcher sets them in the job's rendezvous and a thread of the manager
waits for each in turn (rendezvous/host_updates.h).
"""

import atexit
import enum
import os
import threading
from typing import Any, Optional, Set

from hvd import _core

# How long one wait lasts (also how long stopping the listener may take),
# and the pause while there is no job (during a reset).
_WAIT_MS = 500
_NO_JOB_PAUSE_S = 0.1


class HostUpdateResult(enum.IntFlag):
    """A host update: hosts removed, added, or both (mixed)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


class HostsUpdatedRequest:
    """One update: when the launcher made it (seconds since the epoch)
    and what it did."""

    def __init__(self, timestamp: float,
                 res: HostUpdateResult = HostUpdateResult.no_update) -> None:
        self.timestamp = timestamp
        self.res = res


class WorkerNotificationManager:
    """Calls ``on_hosts_updated(timestamp, result)`` on every registered
    listener for each host update the launcher makes after ``init()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: Set[Any] = set()
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()

    def init(self, rendezvous_addr: Optional[str] = None,
             rendezvous_port: Optional[int] = None, nic: Optional[str] = None,
             hostname: Optional[str] = None,
             local_rank: Optional[int] = None) -> None:
        """Starts listening, once per process (Horovod's arguments name
        its service's address; hvd's listener needs none of them)."""
        if os.environ.get("HOROVOD_ELASTIC") != "1":
            return  # only an elastic job's launcher makes updates
        with self._lock:
            if self._thread is not None:
                return
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._listen, name="hvd-host-updates", daemon=True)
            self._thread.start()
        atexit.register(self.stop)

    def stop(self) -> None:
        """Stops listening (at exit, before the interpreter goes)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join()

    def register_listener(self, listener: Any) -> None:
        with self._lock:
            self._listeners.add(listener)

    def remove_listener(self, listener: Any) -> None:
        with self._lock:
            self._listeners.discard(listener)

    def handle_hosts_updated(self, timestamp: float,
                             update_res: HostUpdateResult) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.on_hosts_updated(timestamp, update_res)

    def _listen(self) -> None:
        seen: Optional[int] = None
        while not self._stop.is_set():
            try:
                if seen is None:
                    # Updates made before listening began are not ours.
                    seen = _core.host_updates_announced()
                    continue
                got = _core.wait_host_update(seen + 1, _WAIT_MS)
            except (ValueError, RuntimeError):
                # No job during a reset, or the rendezvous is away; the
                # membership check at commit still sees any change.
                self._stop.wait(_NO_JOB_PAUSE_S)
                continue
            if got is not None:
                seen += 1
                timestamp, result = got
                self.handle_hosts_updated(timestamp,
                                          HostUpdateResult(result))
