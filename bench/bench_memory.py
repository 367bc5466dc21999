"""Benchmark: resident memory stays flat over a long run (the caches' memory budget).

Plays Jacks or Better 4-line rounds (deal, draw the recommended holds, collect a pending
win) round-robin over ``SESSIONS`` sessions, so every round leaves a new aggregate for the
caches, and prints the process's RSS and the caches' sizes after N and after 5N rounds.
With the budget respected the two RSS figures agree within a few per cent once the caches
are full (choose N so they fill: the aggregate cache holds
``Settings.aggregate_cache_entries`` aggregates).

    python bench/bench_memory.py [N] [BUDGET_MB] [sqlite|postgres]   # default 2500 16 sqlite
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings

PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
SESSIONS = 500


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def play(app: Casino, sids: list[str], start: int, stop: int) -> None:
    for k in range(start, stop):
        sid = sids[k % len(sids)]
        r = app.vp_deal(f"d{k}", sid, "jb-4line", 100, 5, 4)
        r = app.vp_act(f"h{k}", sid, ["draw", r.view["recommended"]])
        if r.status == "open":
            app.vp_act(f"c{k}", sid, ["collect"])


def report(app: Casino, rounds: int, took: float) -> None:
    gc.collect()
    print(
        f"after {rounds:>6,} rounds: RSS {rss_mib():7.1f} MiB; cached aggregates "
        f"{len(app.repository.cache.cache):,}, event hashes {len(app.mapper._known):,}; "  # type: ignore[union-attr, attr-defined]
        f"{rounds / took:,.0f} rounds/s"
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2500
    budget = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    kind = sys.argv[3] if len(sys.argv) > 3 else "sqlite"
    with tempfile.TemporaryDirectory() as d:
        url = None
        if kind == "postgres":
            import psycopg

            schema = "bench_" + uuid.uuid4().hex[:8]
            with psycopg.connect(PG, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            url = f"{PG}?schema={schema}"
        settings = Settings(data_dir=Path(d), database_url=url, cache_budget_mb=budget)
        print(
            f"{kind}, budget {budget} MiB: up to {settings.aggregate_cache_entries:,} "
            f"aggregates and {settings.hash_cache_entries:,} event hashes; load "
            f"{os.getloadavg()[0]:.1f}"
        )
        app = bootstrap(settings, Keyring.generate())
        try:
            sids = []
            for i in range(SESSIONS):
                app.open_account(f"a{i}", f"p{i}", "EUR")
                app.deposit(f"f{i}", f"p{i}", 10**12)
                sids.append(str(app.open_session(f"s{i}", f"p{i}", 10**11).session_id))
            start = time.perf_counter()
            play(app, sids, 0, n)
            report(app, n, time.perf_counter() - start)
            play(app, sids, n, 5 * n)
            report(app, 5 * n, time.perf_counter() - start)
        finally:
            app.close()
            if url is not None:
                import psycopg

                with psycopg.connect(PG, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA {url.rsplit('=', 1)[1]} CASCADE")


if __name__ == "__main__":
    main()
