"""A training loop that makes one kind of trouble on one rank, for the
flight recorder's Python tests (test_trouble.py):

    trouble_train.py KIND RANK [STEPS [TAG]]

Each step "loads data" (10 ms), then allreduces "loss", "grad/fc1.weight"
and "grad/fc2.weight", each after 5 ms of "computing" it. At step 3 rank
RANK: skip (goes on without "grad/fc2.weight"), sleep (sleeps in its data
loading, until killed), deadlock (two threads take two locks in opposite
orders before "grad/fc2.weight"), shape ("grad/fc1.weight" of 1000 floats);
slow: from step 1 it computes each 3x as long. out-of-step: every rank
shuts down after step 1; rank 0 exits 0 and the others init() again (a
test suite whose ranks fell out of step), which must fail naming rank 0.
Every rank prints "DONE" at the end. TAG is ignored (the test finds the
workers by it). Lines the test looks for carry a "# site:" comment.
"""

import sys
import threading
import time

import torch

import hvd.torch as hvd


def load_batch(kind: str, here: bool) -> None:
    time.sleep(0.01)
    while kind == "sleep" and here:
        time.sleep(3600)  # site: asleep


def deadlock() -> None:
    first, second = threading.Lock(), threading.Lock()

    def other() -> None:
        with second:
            time.sleep(0.1)
            with first:
                pass
    with first:
        threading.Thread(target=other, daemon=True).start()
        time.sleep(0.05)
        second.acquire()  # site: deadlocked


def reduce(name: str, size: int, slow: bool) -> None:
    time.sleep(0.015 if slow else 0.005)
    hvd.allreduce(torch.ones(size), name=name)  # site: reduce


def train_step(kind: str, here: bool) -> None:
    slow = kind == "slow" and hvd.rank() == int(sys.argv[2])
    reduce("loss", 1, slow)
    reduce("grad/fc1.weight", 1000 if kind == "shape" and here else 1024,
           slow)
    if kind == "skip" and here:
        return
    if kind == "deadlock" and here:
        deadlock()
    reduce("grad/fc2.weight", 256, slow)


def hvd_rank_was_zero() -> bool:
    import os
    return os.environ.get("HOROVOD_RANK") == "0"


def main() -> None:
    kind, rank = sys.argv[1], int(sys.argv[2])
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    hvd.init()
    if kind == "out-of-step":
        train_step(kind, False)
        hvd.shutdown()
        if hvd_rank_was_zero():
            return
        hvd.init()  # waits for rank 0's next generation, which never comes
    for step in range(1, steps + 1):
        here = hvd.rank() == rank and step == 3
        load_batch(kind, here)
        train_step(kind, here)
    hvd.shutdown()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
