#!/usr/bin/env python3
"""ImageNet-style training with horovod.torch, with the flags and the
recipe of Horovod's ImageNet ResNet-50 example (Goyal et al.'s large-batch
schedule: the learning rate scaled by the ranks, warmed up over the first
epochs, divided by 10 at epochs 30, 60 and 80).

    horovodrun -np 2 python3 examples/pytorch/pytorch_imagenet_resnet50.py \\
        --train-dir ~/imagenet/train --val-dir ~/imagenet/validation

Any image folder tree serves (torchvision's ImageFolder layout); the
bundled digits become one with digits_to_image_folder.py, and --model
resnet18 --image-size 32 train on them in minutes on a CPU. hvd's
additions: --model, --image-size and --num-workers; the model has as
many classes as the training folder. Scalars go to TensorBoard under
--log-dir where torch's SummaryWriter imports, else to
LOG_DIR/scalars.csv.
"""

import argparse
import math
import os
import sys
from typing import Any

import torch
import torch.nn.functional as F
import torch.optim as optim
import torch.utils.data.distributed
from torchvision import datasets, models, transforms

import horovod.torch as hvd

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="PyTorch ImageNet example on hvd",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--train-dir",
                   default=os.path.expanduser("~/imagenet/train"),
                   help="path to training data")
    p.add_argument("--val-dir",
                   default=os.path.expanduser("~/imagenet/validation"),
                   help="path to validation data")
    p.add_argument("--log-dir", default="./logs",
                   help="tensorboard log directory")
    p.add_argument("--checkpoint-format",
                   default="./checkpoint-{epoch}.pth.tar",
                   help="checkpoint file format")
    p.add_argument("--fp16-allreduce", action="store_true", default=False,
                   help="use fp16 compression during allreduce")
    p.add_argument("--batches-per-allreduce", type=int, default=1,
                   help="number of batches processed locally before "
                        "executing allreduce across workers; it multiplies "
                        "total batch size.")
    p.add_argument("--use-adasum", action="store_true", default=False,
                   help="use adasum algorithm to do reduction")
    p.add_argument("--gradient-predivide-factor", type=float, default=1.0,
                   help="apply gradient predivide factor in optimizer")
    p.add_argument("--batch-size", type=int, default=32,
                   help="input batch size for training")
    p.add_argument("--val-batch-size", type=int, default=32,
                   help="input batch size for validation")
    p.add_argument("--epochs", type=int, default=90,
                   help="number of epochs to train")
    p.add_argument("--base-lr", type=float, default=0.0125,
                   help="learning rate for a single GPU")
    p.add_argument("--warmup-epochs", type=float, default=5,
                   help="number of warmup epochs")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    p.add_argument("--wd", type=float, default=0.00005, help="weight decay")
    p.add_argument("--no-cuda", action="store_true", default=False,
                   help="disables CUDA training")
    p.add_argument("--seed", type=int, default=42, help="random seed")
    p.add_argument("--model", default="resnet50",
                   help="a torchvision.models name")
    p.add_argument("--image-size", type=int, default=224,
                   help="the side of the crops the model sees")
    p.add_argument("--num-workers", type=int, default=4,
                   help="data loading processes per rank (with CUDA)")
    return p.parse_args()


class Metric:
    """A running mean over batches of a value averaged over ranks."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.total = 0.0
        self.n = 0

    def update(self, value: torch.Tensor) -> None:
        self.total += hvd.allreduce(value.detach().cpu(),
                                    name=self.name).item()
        self.n += 1

    @property
    def avg(self) -> float:
        return self.total / max(self.n, 1)


class ScalarLog:
    """TensorBoard where torch's writer imports, else a CSV file."""

    def __init__(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        try:
            from torch.utils.tensorboard import SummaryWriter
            self.writer: Any = SummaryWriter(folder)
            self.csv = None
        except ImportError:
            self.writer = None
            self.csv = open(os.path.join(folder, "scalars.csv"), "a")

    def add_scalar(self, tag: str, value: float, epoch: int) -> None:
        if self.writer is not None:
            self.writer.add_scalar(tag, value, epoch)
        else:
            self.csv.write(f"{epoch},{tag},{value}\n")
            self.csv.flush()


def accuracy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return output.argmax(1).eq(target).float().mean()


class Trainer:
    """The example's state: data, model, optimizer, schedule, logs."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cuda = not args.no_cuda and torch.cuda.is_available()
        self.verbose = hvd.rank() == 0
        self.log = ScalarLog(args.log_dir) if self.verbose else None
        self._data()
        self._model()

    def _loader(self, folder: str, transform: Any, batch: int,
                shuffle: bool) -> Any:
        data = datasets.ImageFolder(folder, transform=transform)
        sampler = torch.utils.data.distributed.DistributedSampler(
            data, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=shuffle)
        kwargs: dict = {}
        if self.cuda and self.args.num_workers > 0:
            kwargs = {"num_workers": self.args.num_workers,
                      "pin_memory": True}
        loader = torch.utils.data.DataLoader(data, batch_size=batch,
                                             sampler=sampler, **kwargs)
        return data, sampler, loader

    def _data(self) -> None:
        a = self.args
        size = a.image_size
        self.train_set, self.train_sampler, self.train_loader = self._loader(
            a.train_dir, transforms.Compose([
                transforms.RandomResizedCrop(size),
                transforms.RandomHorizontalFlip(),
                transforms.ToTensor(),
                transforms.Normalize(MEAN, STD)]),
            a.batch_size * a.batches_per_allreduce, True)
        _, self.val_sampler, self.val_loader = self._loader(
            a.val_dir, transforms.Compose([
                transforms.Resize(size * 256 // 224),
                transforms.CenterCrop(size),
                transforms.ToTensor(),
                transforms.Normalize(MEAN, STD)]),
            a.val_batch_size, False)

    def lr_scaler(self) -> int:
        """Averaged gradients of a larger batch take a larger rate;
        Adasum adapts its own (on GPUs only within a host: Horovod's
        rule)."""
        a = self.args
        if not a.use_adasum:
            return a.batches_per_allreduce * hvd.size()
        return hvd.local_size() if self.cuda and hvd.nccl_built() else 1

    def _model(self) -> None:
        a = self.args
        self.model = getattr(models, a.model)(
            num_classes=len(self.train_set.classes))
        if self.cuda:
            self.model.cuda()
        optimizer = optim.SGD(self.model.parameters(),
                              lr=a.base_lr * self.lr_scaler(),
                              momentum=a.momentum, weight_decay=a.wd)
        self.resume = 0
        for epoch in range(a.epochs, 0, -1):
            if os.path.exists(a.checkpoint_format.format(epoch=epoch)):
                self.resume = epoch
                break
        # Rank 0's view of the checkpoints decides for every rank.
        self.resume = int(hvd.broadcast(torch.tensor(self.resume),
                                        root_rank=0,
                                        name="resume_from_epoch").item())
        if self.resume and hvd.rank() == 0:
            state = torch.load(a.checkpoint_format.format(epoch=self.resume))
            self.model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
        hvd.broadcast_parameters(self.model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        self.optimizer = hvd.DistributedOptimizer(
            optimizer, named_parameters=self.model.named_parameters(),
            compression=(hvd.Compression.fp16 if a.fp16_allreduce
                         else hvd.Compression.none),
            backward_passes_per_step=a.batches_per_allreduce,
            op=hvd.Adasum if a.use_adasum else hvd.Average,
            gradient_predivide_factor=a.gradient_predivide_factor)

    def adjust_learning_rate(self, epoch: int, batch: int) -> None:
        a = self.args
        if epoch < a.warmup_epochs:
            e = epoch + (batch + 1) / len(self.train_loader)
            scale = self.lr_scaler()
            adj = 1.0 / scale * (e * (scale - 1) / a.warmup_epochs + 1)
        else:
            adj = 1.0 if epoch < 30 else 1e-1 if epoch < 60 else (
                1e-2 if epoch < 80 else 1e-3)
        for group in self.optimizer.param_groups:
            group["lr"] = a.base_lr * self.lr_scaler() * adj

    def train(self, epoch: int) -> None:
        a = self.args
        self.model.train()
        self.train_sampler.set_epoch(epoch)
        loss_m, acc_m = Metric("train_loss"), Metric("train_accuracy")
        for batch, (data, target) in enumerate(self.train_loader):
            self.adjust_learning_rate(epoch, batch)
            if self.cuda:
                data, target = data.cuda(), target.cuda()
            self.optimizer.zero_grad()
            # The allreduce batch in pieces of --batch-size, each its own
            # backward pass (the optimizer reduces once they all ran).
            pieces = math.ceil(len(data) / a.batch_size)
            for i in range(0, len(data), a.batch_size):
                x, y = data[i:i + a.batch_size], target[i:i + a.batch_size]
                output = self.model(x)
                acc_m.update(accuracy(output, y))
                loss = F.cross_entropy(output, y)
                loss_m.update(loss)
                (loss / pieces).backward()
            self.optimizer.step()
        if self.verbose:
            print(f"Train Epoch #{epoch + 1}: loss {loss_m.avg:.4f}, "
                  f"accuracy {100 * acc_m.avg:.2f}%", flush=True)
            self.log.add_scalar("train/loss", loss_m.avg, epoch)
            self.log.add_scalar("train/accuracy", acc_m.avg, epoch)

    def validate(self, epoch: int) -> float:
        self.model.eval()
        loss_m, acc_m = Metric("val_loss"), Metric("val_accuracy")
        with torch.no_grad():
            for data, target in self.val_loader:
                if self.cuda:
                    data, target = data.cuda(), target.cuda()
                output = self.model(data)
                loss_m.update(F.cross_entropy(output, target))
                acc_m.update(accuracy(output, target))
        if self.verbose:
            print(f"Validate Epoch #{epoch + 1}: loss {loss_m.avg:.4f}, "
                  f"accuracy {100 * acc_m.avg:.2f}%", flush=True)
            self.log.add_scalar("val/loss", loss_m.avg, epoch)
            self.log.add_scalar("val/accuracy", acc_m.avg, epoch)
        return acc_m.avg

    def save_checkpoint(self, epoch: int) -> None:
        if hvd.rank() == 0:
            torch.save({"model": self.model.state_dict(),
                        "optimizer": self.optimizer.state_dict()},
                       self.args.checkpoint_format.format(epoch=epoch + 1))


def main() -> int:
    args = parse_args()
    hvd.init()
    torch.manual_seed(args.seed)
    if not args.no_cuda and torch.cuda.is_available():
        torch.cuda.set_device(hvd.local_rank())
        torch.cuda.manual_seed(args.seed)
    # The ranks of a host share its cores.
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // hvd.local_size()))
    trainer = Trainer(args)
    if trainer.resume and hvd.rank() == 0:
        print(f"resumed after epoch {trainer.resume}", flush=True)
    for epoch in range(trainer.resume, args.epochs):
        trainer.train(epoch)
        trainer.validate(epoch)
        trainer.save_checkpoint(epoch)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
