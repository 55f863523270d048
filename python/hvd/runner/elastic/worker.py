"""What a worker learns of the job's hosts (Horovod's
horovod.runner.elastic.worker): the kinds of change a host update is."""

import enum


class HostUpdateResult(enum.IntFlag):
    """A host update: hosts removed, added, or both (mixed)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added
