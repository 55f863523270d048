#!/usr/bin/env python3
"""Elastic MNIST training with horovod.torch, in the shape of Horovod's
elastic examples: the training loop runs under hvd.elastic.run, its state
(model, optimizer, epoch, batch, the sampler's place) is a TorchState
committed every --batches-per-commit batches, and the ElasticSampler hands
each rank its share of what is left of the epoch whenever the job resizes.

    horovodrun -np 4 --min-np 2 --host-discovery-script ./hosts.sh \\
        python3 examples/pytorch/pytorch_mnist_elastic.py

When a host is lost, the other workers go back to the last commit and go
on; when one is added, its workers receive the state and the job goes on
with more ranks. The model and data are pytorch_mnist.py's.
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

import horovod.torch as hvd
from pytorch_mnist import BUNDLED, Net, load, metric_average, ranks_agree


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Elastic PyTorch MNIST on hvd")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=1.0,
                   help="Adadelta learning rate per rank")
    p.add_argument("--batches-per-commit", type=int, default=10)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data-dir", default=BUNDLED)
    p.add_argument("--train-limit", type=int, default=0)
    p.add_argument("--test-limit", type=int, default=0)
    p.add_argument("--log-interval", type=int, default=10)
    return p.parse_args()


def main() -> int:
    args = parse_args()
    hvd.init()
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // hvd.local_size()))
    train_set = load(args.data_dir, "train", args.train_limit)
    test_set = load(args.data_dir, "test", args.test_limit)
    sampler = hvd.elastic.ElasticSampler(train_set, shuffle=True,
                                         seed=args.seed)
    loader = torch.utils.data.DataLoader(train_set,
                                         batch_size=args.batch_size,
                                         sampler=sampler)
    model = Net()
    optimizer = hvd.DistributedOptimizer(
        torch.optim.Adadelta(model.parameters(), lr=args.lr * hvd.size()),
        named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer,
                                   sampler=sampler, epoch=0, batch=0)

    def on_reset() -> None:
        # The learning rate follows the number of ranks, as at the start.
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()
        if hvd.rank() == 0:
            print(f"reset: now {hvd.size()} ranks", flush=True)

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state: hvd.elastic.TorchState) -> None:
        for state.epoch in range(state.epoch, args.epochs):
            state.model.train()
            for idx, (data, target) in enumerate(loader):
                state.optimizer.zero_grad()
                loss = F.nll_loss(state.model(data), target)
                loss.backward()
                state.optimizer.step()
                state.batch = idx + 1
                # What this batch consumed, so a reset does not repeat it.
                state.sampler.record_batch(idx, args.batch_size)
                if state.batch % args.batches_per_commit == 0:
                    state.commit()
                if idx % args.log_interval == 0 and hvd.rank() == 0:
                    print(f"Train Epoch: {state.epoch + 1} batch {idx} "
                          f"of {len(loader)} on {hvd.size()} ranks\t"
                          f"Loss: {loss.item():.6f}", flush=True)
            evaluate(state.model, test_set, state.epoch)
            state.batch = 0
            state.sampler.set_epoch(state.epoch + 1)
            state.commit()

    def evaluate(model: torch.nn.Module, data: torch.utils.data.Dataset,
                 epoch: int) -> None:
        model.eval()
        part = torch.utils.data.distributed.DistributedSampler(
            data, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=False)
        correct, seen = 0.0, 0
        with torch.no_grad():
            for x, y in torch.utils.data.DataLoader(data, batch_size=1000,
                                                    sampler=part):
                correct += (model(x).argmax(1) == y).sum().item()
                seen += len(y)
        accuracy = metric_average(correct / max(seen, 1),
                                  f"accuracy.{epoch}")
        if hvd.rank() == 0:
            print(f"Test set, epoch {epoch + 1}: Accuracy: "
                  f"{100 * accuracy:.2f}%", flush=True)

    train(state)
    if not ranks_agree(model):
        print("pytorch_mnist_elastic.py: the ranks' weights differ",
              file=sys.stderr)
        return 1
    if hvd.rank() == 0:
        print("weights identical on every rank", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
