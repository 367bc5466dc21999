"""Benchmark: one live Infinite Blackjack table round with many seats, through the ledger.

Every seat bets the main bet and ALL SIDE BETS, then decides each step by a simplified
basic strategy (every seat shares the cards, so every seat decides alike); the runner
(fake clock) deals, closes each step as soon as every seat has decided, plays the dealer
and settles in batches. Prints wall time per phase, seats per second, and the per-seat
cost ratio against the smallest size. SQLite always; PostgreSQL when reachable
(CROUPIER_TEST_POSTGRES_URL, default postgresql://postgres@127.0.0.1:5432/test, in a
throw-away schema). Setting up the players (account, deposit, buy-in) is not timed.

    python bench/bench_table.py [SEATS ...]     (default: 100 1000)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings
from ledger.tables import commands as tc
from ledger.tables.compose import Tables
from ledger.tables.replay import seat_of, shared_of
from ledger.tables.runner import TableRunner
from ledger.tables.seat import TableSeat, seat_id_for
from ledger.tables.table import rules_of
from ledger.tables.table_round import TableRound, table_round_id_for
from ledger.unit_of_work import UnitOfWork

PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
CONFIG = {
    "betting_ms": 10_000,
    "step_ms": 10_000,
    "insurance_ms": 5_000,
    "grace_ms": 0,
    "settle_batch": 250,
}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def choose(offered: list[str], total_hint: int, up: int) -> str:
    """Simplified basic strategy on the options offered (shared cards: one answer)."""
    if "split" in offered and total_hint in (16, 12):
        return "split"
    if "double" in offered and total_hint in (10, 11):
        return "double"
    if "hit" in offered and (total_hint <= 11 or (total_hint <= 16 and up >= 7)):
        return "hit"
    return "stand"


def one_round(app: Casino, clock: Clock, seats: int) -> dict[str, float]:
    app.command("table", tc.CreateTable("B1", "EUR", dict(CONFIG)))
    sessions = []
    for i in range(seats):
        p = f"p{i}"
        app.open_account(f"o{i}", p, "EUR")
        app.deposit(f"d{i}", p, 1_000_000)
        sessions.append(str(app.open_session(f"s{i}", p, 100_000)["session_id"]))
    runner = TableRunner(app, "B1", clock)
    runner.tick()
    times: dict[str, float] = {}
    t = time.perf_counter()
    for i, s in enumerate(sessions):
        app.command(f"b{i}", tc.PlaceBet(s, "B1", "main", 1_000))
        app.command(f"a{i}", tc.AllSideBets(s, "B1"))
    times["betting"] = time.perf_counter() - t
    clock.now += timedelta(seconds=10)
    t = time.perf_counter()
    runner.tick()
    times["deal"] = time.perf_counter() - t
    tables: Any = app.handlers[tc.PlaceBet]
    service: Tables = tables.__self__
    k = 0
    while True:
        rnd = app.find(TableRound, table_round_id_for("B1", 1))
        assert rnd is not None
        if rnd.phase not in ("step", "insurance"):
            break
        k = rnd.step
        t = time.perf_counter()
        for i, s in enumerate(sessions):
            offered = [o[0] for o in service.offered(UnitOfWork(app.find, {}), "B1", s)]
            if not offered:
                continue
            if rnd.phase == "insurance":
                app.command(f"i{i}", tc.TableDecide(s, "B1", 0, "no-insurance"))
                continue
            rec = app.find(TableSeat, seat_id_for(rnd.id, s))
            assert rec is not None
            seat = seat_of(rnd, rules_of(rnd.config), rec)
            hand = seat.hands[seat.active]
            up = shared_of(rnd, rules_of(rnd.config)).up_value
            app.command(f"k{k}-{i}", tc.TableDecide(s, "B1", k, choose(offered, hand.total, up)))
        decided = time.perf_counter() - t
        t = time.perf_counter()
        runner.tick(max_actions=1)
        closed = time.perf_counter() - t
        label = "insurance" if rnd.phase == "insurance" else f"step {k}"
        times[f"{label} decisions"] = decided
        times[f"{label} close"] = closed
    t = time.perf_counter()
    runner.tick()
    times["dealer + settlement"] = time.perf_counter() - t
    rnd = app.find(TableRound, table_round_id_for("B1", 1))
    assert rnd is not None and rnd.phase == "settled", rnd and rnd.phase
    return times


def run(kind: str, seats: int, make: Any) -> dict[str, float]:
    clock = Clock()
    app = make(clock)
    try:
        times = one_round(app, clock, seats)
    finally:
        app.close()
    total = sum(times.values())
    print(f"{kind} {seats} seats: total {total:.2f} s, {seats / total:,.0f} seats/s")
    for phase, secs in times.items():
        print(f"  {phase:28s} {secs:8.3f} s  ({secs / seats * 1e3:.3f} ms/seat)")
    return times


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [100, 1000]
    ring = Keyring.generate()
    stores: list[tuple[str, Any]] = []

    def sqlite(clock: Clock) -> Casino:
        d = tempfile.mkdtemp()
        return bootstrap(Settings(data_dir=Path(d)), ring, clock=clock, live_tables=True)

    stores.append(("sqlite", sqlite))
    try:
        import psycopg

        with psycopg.connect(PG, connect_timeout=3):
            pass

        def postgres(clock: Clock) -> Casino:
            schema = "bench_" + uuid.uuid4().hex[:10]
            with psycopg.connect(PG, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            return bootstrap(
                Settings(database_url=f"{PG}?schema={schema}"), ring, clock=clock, live_tables=True
            )

        stores.append(("postgres", postgres))
    except Exception as e:  # no server: SQLite only
        print(f"postgres: skipped ({e})")
    for kind, make in stores:
        per_seat = {}
        for n in sizes:
            times = run(kind, n, make)
            per_seat[n] = sum(times.values()) / n
        if len(sizes) > 1:
            lo, hi = min(sizes), max(sizes)
            print(
                f"{kind}: per-seat cost ratio {hi} vs {lo} seats ="
                f" {per_seat[hi] / per_seat[lo]:.2f}"
            )


if __name__ == "__main__":
    main()
