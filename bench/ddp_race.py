#!/usr/bin/env python3
"""One contender of bench/run_ddp.sh: the same model, data and optimizer
trained with hvd's DistributedOptimizer (--mode hvd) or with torch's
DistributedDataParallel over its gloo backend (--mode ddp), one process per
rank under horovodrun (which gives DDP its rank and size too). Rank 0
prints ``RESULT <mode> <images/s of the whole job>``."""

import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    """The Keras MNIST CNN of the bundled examples."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        x = torch.flatten(F.max_pool2d(x, 2), 1)
        return self.fc2(F.relu(self.fc1(x)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["hvd", "ddp"], required=True)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--port", type=int, default=29517)
    args = p.parse_args()
    rank = int(os.environ["HOROVOD_RANK"])
    size = int(os.environ["HOROVOD_SIZE"])
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // size))
    torch.manual_seed(1)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if args.mode == "hvd":
        import horovod.torch as hvd
        hvd.init()
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        opt = hvd.DistributedOptimizer(
            opt, named_parameters=model.named_parameters())
        train = model
    else:
        import torch.distributed as dist
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
            world_size=size)
        train = nn.parallel.DistributedDataParallel(model)
    gen = torch.Generator().manual_seed(rank)
    data = torch.randn(args.batch_size, 1, 28, 28, generator=gen)
    target = torch.randint(0, 10, (args.batch_size,), generator=gen)

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(train(data), target).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - start
    if rank == 0:
        rate = args.batch_size * size * args.steps / seconds
        print(f"RESULT {args.mode} {rate:.1f}", flush=True)
    if args.mode == "ddp":
        import torch.distributed as dist
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
