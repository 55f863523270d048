#!/usr/bin/env python3
"""Training speed on synthetic data with horovod.torch, with the flags of
Horovod's synthetic benchmark (a torchvision model, random images, the
gradients averaged over ranks by DistributedOptimizer).

    horovodrun -np 2 python3 examples/pytorch/pytorch_synthetic_benchmark.py \\
        --model resnet18 --batch-size 8

Each iteration times --num-batches-per-iter steps; the figures are images
per second per rank (mean and 1.96 standard deviations over the
iterations) and in total. --image-size (hvd's; Horovod's is fixed at 224)
makes short runs on a CPU possible.
"""

import argparse
import timeit
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
import torch.optim as optim
import torch.utils.data.distributed
from torchvision import models

import horovod.torch as hvd


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="PyTorch synthetic benchmark on hvd",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--fp16-allreduce", action="store_true", default=False,
                   help="use fp16 compression during allreduce")
    p.add_argument("--model", type=str, default="resnet50",
                   help="model to benchmark (a torchvision.models name)")
    p.add_argument("--batch-size", type=int, default=32,
                   help="input batch size")
    p.add_argument("--num-warmup-batches", type=int, default=10,
                   help="number of warm-up batches that don't count")
    p.add_argument("--num-batches-per-iter", type=int, default=10,
                   help="number of batches per benchmark iteration")
    p.add_argument("--num-iters", type=int, default=10,
                   help="number of benchmark iterations")
    p.add_argument("--no-cuda", action="store_true", default=False,
                   help="disables CUDA training")
    p.add_argument("--use-adasum", action="store_true", default=False,
                   help="use adasum algorithm to do reduction")
    p.add_argument("--image-size", type=int, default=224,
                   help="height and width of the synthetic images")
    return p.parse_args()


def make_step(args: argparse.Namespace, model: torch.nn.Module,
              optimizer: optim.Optimizer) -> Callable[[], None]:
    """One training step on the same random batch every time."""
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    target = torch.randint(0, 1000, (args.batch_size,))
    if args.cuda:
        data, target = data.cuda(), target.cuda()

    def step() -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    return step


def main() -> None:
    args = parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    hvd.init()
    if args.cuda:
        torch.cuda.set_device(hvd.local_rank())
    model = getattr(models, args.model)()
    # Adasum sums where averaging would divide: the learning rate scales
    # only with the ranks of a host then (Horovod's rule).
    lr_scaler = hvd.size() if not args.use_adasum else 1
    if args.cuda:
        model.cuda()
        if args.use_adasum and hvd.nccl_built():
            lr_scaler = hvd.local_size()
    optimizer = optim.SGD(model.parameters(), lr=0.01 * lr_scaler)
    compression = (hvd.Compression.fp16 if args.fp16_allreduce
                   else hvd.Compression.none)
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters(),
        compression=compression,
        op=hvd.Adasum if args.use_adasum else hvd.Average)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    step = make_step(args, model, optimizer)
    device = "GPU" if args.cuda else "CPU"
    say = print if hvd.rank() == 0 else (lambda *a, **k: None)
    say(f"Model: {args.model}")
    say(f"Batch size: {args.batch_size}")
    say(f"Number of {device}s: {hvd.size()}")
    say("Running warmup...")
    timeit.timeit(step, number=args.num_warmup_batches)
    say("Running benchmark...")
    rates = []
    for i in range(args.num_iters):
        seconds = timeit.timeit(step, number=args.num_batches_per_iter)
        rate = args.batch_size * args.num_batches_per_iter / seconds
        say(f"Iter #{i}: {rate:.1f} img/sec per {device}")
        rates.append(rate)
    mean, conf = np.mean(rates), 1.96 * np.std(rates)
    say(f"Img/sec per {device}: {mean:.1f} +-{conf:.1f}")
    say(f"Total img/sec on {hvd.size()} {device}(s): "
        f"{hvd.size() * mean:.1f} +-{hvd.size() * conf:.1f}")


if __name__ == "__main__":
    main()
