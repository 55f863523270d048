"""A sampler that remembers how much of an epoch the job has processed, so
that after a reset the rest of the epoch is split among the new ranks."""

import math
import random
from typing import Any, Dict, Iterator, List

import torch.utils.data

from hvd.torch.mpi_ops import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Like DistributedSampler, re-partitioning what is left of the epoch
    whenever the job's size changes (``reset()``). Its state is Horovod's
    (``epoch``, ``processed_num``: samples the whole job has processed this
    epoch), so checkpoints move between the two: record each batch with
    ``record_batch``; the state travels in TorchState."""

    def __init__(self, dataset: Any, shuffle: bool = True,
                 seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.indices: List[int] = []
        self.reset()

    def set_epoch(self, epoch: int) -> None:
        """A new epoch: nothing processed yet."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """One batch of every rank processed: the job's count grows by
        batch_size for each rank."""
        self.processed_num += batch_size * self.num_replicas

    def get_indices(self, batch_idx: int, batch_size: int) -> List[int]:
        """This rank's samples of batch `batch_idx` of its iteration."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self) -> Dict[str, Any]:
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.epoch = state["epoch"]
        self.processed_num = state["processed_num"]
        self.reset()

    def reset(self) -> None:
        """Splits what is left of the epoch among the current ranks: the
        epoch's order (shuffled alike on every rank) past processed_num."""
        self.num_replicas = size()
        self.rank = rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = order[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) /
                                         self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        order = list(self.remaining_indices)
        # Pad to a multiple of the ranks (every rank takes as many).
        if order:
            while len(order) < self.total_size:
                order += order[:self.total_size - len(order)]
        self.indices = order[self.rank:self.total_size:self.num_replicas]
        return iter(self.indices)

    def __len__(self) -> int:
        return self.num_samples
