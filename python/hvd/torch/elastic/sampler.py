"""A sampler that remembers which samples an epoch has processed, so that
after a reset the rest of the epoch is split among the new ranks."""

import math
import random
from typing import Any, Dict, Iterator, List, Set

import torch.utils.data

from hvd.torch.mpi_ops import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Like DistributedSampler, re-partitioning the epoch's unprocessed
    samples whenever the job's size changes (``reset()``). Record what was
    processed with ``record_batch`` (or ``record_indices``); the state
    (``state_dict``) travels in TorchState."""

    def __init__(self, dataset: Any, shuffle: bool = True,
                 seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices: Set[int] = set()
        self.indices: List[int] = []
        self.reset()

    def set_epoch(self, epoch: int) -> None:
        """A new epoch: nothing processed yet."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """Marks batch `batch_idx` of this rank's iteration as processed."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices: Any) -> None:
        self.processed_indices.update(int(i) for i in indices)

    def get_indices(self, batch_idx: int, batch_size: int) -> List[int]:
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self) -> Dict[str, Any]:
        return {"epoch": self.epoch,
                "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.epoch = state["epoch"]
        self.processed_indices = set(state["processed_indices"])
        self.reset()

    def reset(self) -> None:
        """Splits the epoch's unprocessed samples among the current ranks."""
        self.num_replicas = size()
        self.rank = rank()
        self.remaining_indices = [i for i in range(len(self.dataset))
                                  if i not in self.processed_indices]
        self.num_samples = int(math.ceil(len(self.remaining_indices) /
                                         self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        order = list(self.remaining_indices)
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        # Pad to a multiple of the ranks (every rank takes as many).
        if order:
            while len(order) < self.total_size:
                order += order[:self.total_size - len(order)]
        self.indices = order[self.rank:self.total_size:self.num_replicas]
        return iter(self.indices)

    def __len__(self) -> int:
        return self.num_samples
