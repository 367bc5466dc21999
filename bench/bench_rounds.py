"""Benchmark: complete Jacks or Better 4-line rounds per second through the ledger.

Each round is deal (5 coins x 4 lines), draw with the recommended holds, and collect if a
win is pending: two or three signed commands, each one transaction. Runs on SQLite and,
when reachable, on PostgreSQL (CROUPIER_TEST_POSTGRES_URL, default
postgresql://postgres@127.0.0.1:5432/test, in a throw-away schema).

    python bench/bench_rounds.py [ROUNDS]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings

try:  # the composition root (since issue 12)
    from ledger.bootstrap import bootstrap
except ImportError:  # the code before issue 12, benchmarked for comparison
    bootstrap = None


def open_casino(settings: Settings, ring: Keyring) -> Casino:
    return Casino(settings, ring) if bootstrap is None else bootstrap(settings, ring)


PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def play(app: Casino, rounds: int) -> float:
    app.open_account("acc", "bench", "EUR")
    app.deposit("dep", "bench", 10**12)
    sid = app.open_session("ses", "bench", 10**11).session_id
    start = time.perf_counter()
    for i in range(rounds):
        r = app.vp_deal(f"d{i}", sid, "jb-4line", 100, 5, 4)
        r = app.vp_act(f"h{i}", sid, ["draw", r.view["recommended"]])
        if r.status == "open":
            app.vp_act(f"c{i}", sid, ["collect"])
    return rounds / (time.perf_counter() - start)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    ring = Keyring.generate()
    with tempfile.TemporaryDirectory() as d:
        app = open_casino(Settings(data_dir=Path(d)), ring)
        try:
            print(f"sqlite: {play(app, rounds):,.0f} complete 4-line rounds/s ({rounds} rounds)")
        finally:
            app.close()
    try:
        import psycopg

        schema = "bench_" + uuid.uuid4().hex[:8]
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
    except Exception as e:
        print(f"postgres: skipped ({e})")
        return
    try:
        with tempfile.TemporaryDirectory() as d:
            app = open_casino(
                Settings(data_dir=Path(d), database_url=f"{PG}?schema={schema}"), ring
            )
            try:
                print(
                    f"postgres: {play(app, rounds):,.0f} complete 4-line rounds/s ({rounds} rounds)"
                )
            finally:
                app.close()
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main()
