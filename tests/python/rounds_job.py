"""Rounds of init, one allreduce and shutdown, each a new generation of the
job (as hvd_hello --rounds does in C++), for the rendezvous tests that kill
the daemon under a Python job.

    rounds_job.py --rounds N [--late-rank R --late-ms M]

Every rank prints "rank R/S: round T sum=X" per round and exits 1 when a
sum is wrong.
"""

import argparse
import sys
import time

import torch

import horovod.torch as hvd


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--late-rank", type=int, default=-1)
    parser.add_argument("--late-ms", type=int, default=0)
    args = parser.parse_args()
    for round_no in range(1, args.rounds + 1):
        hvd.init()
        if hvd.rank() == args.late_rank:
            time.sleep(args.late_ms / 1000)
        got = hvd.allreduce(torch.tensor([float(hvd.rank() + round_no)]),
                            op=hvd.Sum, name=f"round.{round_no}").item()
        want = sum(r + round_no for r in range(hvd.size()))
        print(f"rank {hvd.rank()}/{hvd.size()}: round {round_no} sum={got:g}",
              flush=True)
        if got != want:
            print(f"round {round_no}: sum {got:g}, expected {want}",
                  file=sys.stderr)
            return 1
        hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
