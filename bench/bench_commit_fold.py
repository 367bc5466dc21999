"""Benchmark: what the read side's fold at commit costs a command on PostgreSQL, as the
time spent in :meth:`ledger.readside.commits.CommitFold.inserted` (inside the events'
transaction: its reads, the fold, the views' write and, since the fold's statements are
all taken inside its savepoint, its round trips) and the wall time of a deposit.

One player deposits ``--n`` times in each of ``--rounds`` rounds, one command at a time,
on a fresh schema (dropped at the end). To set two trees side by side, run each with its
own ``PYTHONPATH``, alternating.

    python bench/bench_commit_fold.py [--n 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from ledger.bootstrap import bootstrap
from ledger.keys import Keyring
from ledger.readside import commits
from ledger.settings import Settings

PG_URL = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spent = [0.0, 0.0]
    real = commits.CommitFold.inserted

    def timed(self: Any, *a: Any, **k: Any) -> None:
        t = time.perf_counter()
        try:
            real(self, *a, **k)
        finally:
            spent[0] += time.perf_counter() - t
            spent[1] += 1

    commits.CommitFold.inserted = timed  # type: ignore[method-assign]
    schema = "bench_fold_" + uuid.uuid4().hex[:8]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        settings = Settings(
            data_dir=Path(tempfile.mkdtemp()), database_url=f"{PG_URL}?schema={schema}"
        )  # type: ignore[call-arg]
        app = bootstrap(settings, keyring=Keyring.generate())
        app.open_account("a-open", "a", "EUR")
        for i in range(50):
            app.deposit(f"warm-{i}", "a", 1)
        spent[:] = [0.0, 0.0]
        per = []
        for r in range(args.rounds):
            t = time.perf_counter()
            for i in range(args.n):
                app.deposit(f"d-{r}-{i}", "a", 1)
            per.append((time.perf_counter() - t) / args.n * 1000)
        fold = app.readside.commits
        assert fold is not None and fold.failures == 0
        print(
            "ms a deposit, each round:",
            " ".join(f"{x:.3f}" for x in per),
            f"(median {statistics.median(per):.3f});",
            f"us in the fold a commit: {spent[0] / spent[1] * 1e6:.0f}",
        )
        app.close()
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


if __name__ == "__main__":
    main()
