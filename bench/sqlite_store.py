#!/usr/bin/python3
"""SQLite as the daemon's store, measured: what issue 36 weighed against
the write-ahead journal (rendezvous/store/disk_journal.h).

Each of N records (a join's size: a job id, a kind, a 40-byte value) is
written in a transaction of its own, as the daemon must write a change
before it answers the call, with Debian's SQLite (Python's sqlite3 module)
in WAL mode:
  normal   synchronous=NORMAL: safe from a killed process, as the journal
           is (the journal fdatasyncs once a second)
  full     synchronous=FULL: an fsync per transaction
The journal's own cost is what run_rendezvous_scale.sh shows between its
memory and disk stores (the same joins, with and without the journal).

  bench/sqlite_store.py [N]
Lines: BENCH rendezvous.sqlite.<mode>.records.N <seconds> s
"""
import os
import sqlite3
import sys
import tempfile
import time


def run(path: str, mode: str, n: int) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={mode.upper()}")
    db.execute("CREATE TABLE records (job TEXT, kind INTEGER, value BLOB)")
    value = b"x" * 40
    start = time.perf_counter()
    for i in range(n):
        db.execute("BEGIN")
        db.execute("INSERT INTO records VALUES (?, ?, ?)",
                   ("0123456789abcdef", i % 6, value))
        db.execute("COMMIT")
    took = time.perf_counter() - start
    db.close()
    return took


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    with tempfile.TemporaryDirectory() as d:
        for mode in ("normal", "full"):
            took = run(os.path.join(d, mode + ".db"), mode, n)
            print(f"BENCH rendezvous.sqlite.{mode}.records.{n} {took:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
