#!/usr/bin/env python3
"""Distributed MNIST training with horovod.torch, as Horovod's examples do it.

    horovodrun -np 2 python3 examples/pytorch/pytorch_mnist.py

The model is the Keras MNIST CNN that train_mnist trains (two 3x3
convolutions, max pooling, dropout, two dense layers). Each rank trains on
its own shard of the bundled digits (IDX files read here: no download),
with Adadelta at a learning rate scaled by the number of ranks and warmed
up to it over the first epochs; metrics are averaged over ranks, and rank 0
writes a checkpoint every epoch (and resumes from the newest one).
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data.distributed

import horovod.torch as hvd
from mnist_idx import BUNDLED, read_idx

# PyTorch's MNIST recipe: the training set's pixel mean and deviation.
MEAN, STD = 0.1307, 0.3081


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="PyTorch MNIST on hvd")
    p.add_argument("--batch-size", type=int, default=128,
                   help="input batch size per rank for training")
    p.add_argument("--test-batch-size", type=int, default=1000,
                   help="input batch size per rank for testing")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--lr", type=float, default=1.0,
                   help="Adadelta learning rate for one rank (scaled by size)")
    p.add_argument("--warmup-epochs", type=float, default=5,
                   help="epochs to warm the learning rate up to lr * size")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--log-interval", type=int, default=10,
                   help="batches between progress lines (rank 0)")
    p.add_argument("--data-dir", default=BUNDLED,
                   help="folder of the four MNIST IDX files (.gz or not)")
    p.add_argument("--checkpoint-dir", default=".",
                   help="where rank 0 writes checkpoint-<epoch>.pt")
    p.add_argument("--no-checkpoint", action="store_true",
                   help="write no checkpoints and resume from none")
    p.add_argument("--fp16-allreduce", action="store_true",
                   help="send gradients as float16")
    p.add_argument("--use-adasum", action="store_true",
                   help="combine the ranks' steps by Adasum (the learning "
                        "rate is then not scaled by size)")
    p.add_argument("--gradient-predivide-factor", type=float, default=1.0)
    p.add_argument("--no-cuda", action="store_true")
    p.add_argument("--train-limit", type=int, default=0,
                   help="use only the first N training images (0: all)")
    p.add_argument("--test-limit", type=int, default=0)
    p.add_argument("--steps", type=int, default=0,
                   help="benchmark: stop after N training batches and print "
                        "this rank's images/s")
    return p.parse_args()


def load(data_dir: str, split: str,
         limit: int) -> torch.utils.data.TensorDataset:
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte"))
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    x = (x - MEAN) / STD
    return torch.utils.data.TensorDataset(x, torch.from_numpy(
        labels.astype(np.int64)))


class Net(nn.Module):
    """Keras' MNIST CNN."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.drop1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(64 * 12 * 12, 128)
        self.drop2 = nn.Dropout(0.5)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(self.drop1(x), 1)
        x = self.drop2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def metric_average(value: float, name: str) -> float:
    """The mean of `value` over ranks."""
    return hvd.allreduce(torch.tensor(value), name=name).item()


def ranks_agree(model: nn.Module) -> bool:
    """Whether every rank holds rank 0's weights, bit for bit."""
    flat = torch.cat([p.detach().reshape(-1).cpu()
                      for p in model.parameters()])
    gathered = hvd.allgather(flat.unsqueeze(0), name="final_weights")
    return bool((gathered == gathered[0]).all())


def warmup_lr(args: argparse.Namespace, epoch: int, batch: int,
              batches: int) -> float:
    """From lr up to lr * scaler over the warm-up epochs, then lr *
    scaler."""
    scaler = lr_scaler(args)
    e = epoch + batch / max(batches, 1)
    if e >= args.warmup_epochs:
        return args.lr * scaler
    return args.lr * (e * (scaler - 1) / args.warmup_epochs + 1)


def lr_scaler(args: argparse.Namespace) -> int:
    """Averaged gradients take lr * size; Adasum adapts its own scale."""
    return 1 if args.use_adasum else hvd.size()


def newest_checkpoint(folder: str, epochs: int) -> int:
    for epoch in range(epochs, 0, -1):
        if os.path.exists(os.path.join(folder, f"checkpoint-{epoch}.pt")):
            return epoch
    return 0


def main() -> int:
    args = parse_args()
    hvd.init()
    torch.manual_seed(args.seed)
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(hvd.local_rank())
        torch.cuda.manual_seed(args.seed)
        device = torch.device("cuda", hvd.local_rank())
    # One intra-op thread per rank: the ranks share the host's cores.
    # OMP_NUM_THREADS, where given, wins (as it does in torch itself).
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", 0)) or
                          max(1, (os.cpu_count() or 1) // hvd.local_size()))

    train_set = load(args.data_dir, "train", args.train_limit)
    test_set = load(args.data_dir, "test", args.test_limit)
    train_sampler = torch.utils.data.distributed.DistributedSampler(
        train_set, num_replicas=hvd.size(), rank=hvd.rank())
    train_loader = torch.utils.data.DataLoader(
        train_set, batch_size=args.batch_size, sampler=train_sampler)
    test_sampler = torch.utils.data.distributed.DistributedSampler(
        test_set, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=False)
    test_loader = torch.utils.data.DataLoader(
        test_set, batch_size=args.test_batch_size, sampler=test_sampler)

    model = Net().to(device)
    optimizer = torch.optim.Adadelta(model.parameters(),
                                     lr=args.lr * lr_scaler(args))

    # Resume from the newest checkpoint rank 0 has; every rank learns which.
    resume = 0
    if not args.no_checkpoint and hvd.rank() == 0:
        resume = newest_checkpoint(args.checkpoint_dir, args.epochs)
    resume = hvd.broadcast_object(resume, root_rank=0, name="resume_epoch")
    if resume and hvd.rank() == 0:
        state = torch.load(os.path.join(args.checkpoint_dir,
                                        f"checkpoint-{resume}.pt"))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        print(f"resumed from checkpoint-{resume}.pt", flush=True)

    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    compression = (hvd.Compression.fp16 if args.fp16_allreduce
                   else hvd.Compression.none)
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters(),
        compression=compression,
        op=hvd.Adasum if args.use_adasum else hvd.Average,
        gradient_predivide_factor=args.gradient_predivide_factor)

    steps = 0
    started = time.perf_counter()
    for epoch in range(resume, args.epochs):
        model.train()
        train_sampler.set_epoch(epoch)
        for batch, (data, target) in enumerate(train_loader):
            lr = warmup_lr(args, epoch, batch, len(train_loader))
            for group in optimizer.param_groups:
                group["lr"] = lr
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            steps += 1
            if args.steps and steps == 5:
                started = time.perf_counter()  # past the warm-up steps
            if args.steps and steps == args.steps + 5:
                seconds = time.perf_counter() - started
                print(f"RESULT images_per_s "
                      f"{args.steps * args.batch_size / seconds:.1f}",
                      flush=True)
                hvd.shutdown()
                return 0
            if batch % args.log_interval == 0 and hvd.rank() == 0:
                print(f"Train Epoch: {epoch + 1} "
                      f"[{batch * len(data)}/{len(train_sampler)}]\t"
                      f"Loss: {loss.item():.6f}\tlr: {lr:.4f}", flush=True)
        test_loss, correct, seen = 0.0, 0.0, 0
        model.eval()
        with torch.no_grad():
            for data, target in test_loader:
                data, target = data.to(device), target.to(device)
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction="sum").item()
                correct += (output.argmax(1) == target).sum().item()
                seen += len(target)
        test_loss = metric_average(test_loss / max(seen, 1), "avg_loss")
        accuracy = metric_average(correct / max(seen, 1), "avg_accuracy")
        if hvd.rank() == 0:
            print(f"Test set, epoch {epoch + 1}: Average loss: "
                  f"{test_loss:.4f}, Accuracy: {100 * accuracy:.2f}%",
                  flush=True)
            if not args.no_checkpoint:
                torch.save({"model": model.state_dict(),
                            "optimizer": optimizer.state_dict()},
                           os.path.join(args.checkpoint_dir,
                                        f"checkpoint-{epoch + 1}.pt"))
    if not ranks_agree(model):
        print("pytorch_mnist.py: the ranks' weights differ", file=sys.stderr)
        return 1
    if hvd.rank() == 0:
        print("weights identical on every rank", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
