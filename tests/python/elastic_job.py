"""A worker of an elastic job in Horovod's style (hvd.elastic.run with a
TorchState), for the launcher's elastic tests: the same lines as
hvd_test_worker --elastic-job.

    elastic_job.py --steps N [--commit-every K] [--step-ms M] [--pid-dir D]
                   [--wait-hosts-at T]

Prints "START rank=R size=S step=T" at each (re)start, rank 0 prints
"STEP step=T size=S ms=W" per step, and every rank ends with "ELASTIC
rank=R size=S steps=RUN weight=T resets=N same=1|0" (same: every rank
holds the same weights).

--wait-hosts-at T: after step T rank 0 prints "WAITING", then waits (up
to 60 s) for a host update to reach its state between two commits, as
Horovod's own elastic test scripts wait on ``state._host_messages``, and
prints "NOTIFIED result=R"; the next commit then resets to the new hosts.
"""

import argparse
import os
import time

import torch

import horovod.torch as hvd


def wait_for_host_update(state: hvd.elastic.TorchState) -> None:
    """As Horovod's elastic test scripts: rank 0 waits between commits
    until the launcher's host update is in its state's queue."""
    print("WAITING", flush=True)
    deadline = time.time() + 60
    while state._host_messages.empty():
        if time.time() > deadline:
            raise TimeoutError("no host update reached the state")
        time.sleep(0.05)
    _, result = state._host_messages.queue[0]
    print("NOTIFIED result=%d" % int(result), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--commit-every", type=int, default=5)
    parser.add_argument("--step-ms", type=int, default=50)
    parser.add_argument("--pid-dir", default="")
    parser.add_argument("--wait-hosts-at", type=int, default=-1)
    args = parser.parse_args()

    hvd.init()
    if args.pid_dir:
        name = "%s-%s.pid" % (os.environ.get("HVD_HOST", ""),
                              os.environ.get("HVD_SLOT", "0"))
        with open(os.path.join(args.pid_dir, name), "w") as f:
            f.write("%d\n" % os.getpid())

    torch.manual_seed(1 + hvd.rank())  # rank 0's weights win at sync()
    model = torch.nn.Linear(16, 1)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
        named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, step=0,
                                   steps_run=0)
    resets = []
    state.register_reset_callbacks([lambda: resets.append(hvd.size())])

    @hvd.elastic.run
    def train(state: hvd.elastic.TorchState) -> None:
        print("START rank=%d size=%d step=%d" %
              (hvd.rank(), hvd.size(), state.step), flush=True)
        while state.step < args.steps:
            state.optimizer.zero_grad()
            x = torch.full((4, 16), 0.1 * (state.step % 7 + hvd.rank()))
            (state.model(x) - 1).pow(2).mean().backward()
            state.optimizer.step()
            state.step += 1
            state.steps_run += 1
            if hvd.rank() == 0:
                print("STEP step=%d size=%d ms=%d" %
                      (state.step, hvd.size(), int(time.time() * 1000)),
                      flush=True)
            time.sleep(args.step_ms / 1000.0)
            if state.step == args.wait_hosts_at and hvd.rank() == 0:
                wait_for_host_update(state)
            if state.step % args.commit_every == 0:
                state.commit()

    train(state)
    w = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    g = hvd.allgather(w.unsqueeze(0), name="elastic_job.weights")
    same = bool((g == g[0]).all())
    print("ELASTIC rank=%d size=%d steps=%d weight=%d resets=%d same=%d" %
          (hvd.rank(), hvd.size(), state.steps_run, state.step, len(resets),
           int(same)), flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
