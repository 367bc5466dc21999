"""Benchmark: one live Infinite Blackjack table round with many seats, through the ledger.

Every seat bets the main bet and ALL SIDE BETS, then decides each window by basic
strategy (multi-deck, dealer stands on soft 17) on the options its seat is offered. The
players are ``--clients`` threads calling ``Casino.command`` at once, as players arriving
over HTTP would: the group commit (:mod:`ledger.group_commit`) puts the commands waiting
together into one transaction. The runner (fake clock) deals, closes each window as soon
as every seat has decided, plays the dealer and settles ``settle_batch`` seats per
transaction. Every size deals the same cards (a fixed shoe seed), so the sizes compare.

Prints the wall time of each phase (betting, deal, each window's decisions and its close,
dealer, settlement), seats per second, and the per-seat cost of each size against the
smallest size of the same run (the goal: at most 1.2 from 100 to 10,000 seats). Setting up
the players (account, deposit, buy-in) is not timed. PostgreSQL at
CROUPIER_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test), in a
throw-away schema dropped after the run.

    python bench/bench_table.py [--backend sqlite|postgres|both] [--clients N]
        [--cache-mb MB] [SEATS ...]   (default: both, 100 1000 10000 seats, 64 clients)
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from games.blackjack import options
from games.blackjack.hand import hard_value, total_of
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, TableSeat, seat_id_for, table_round_id_for
from ledger.tables.config import rules_of
from ledger.tables.context import RoundStates, seat_of
from ledger.tables.runner import TableRunner

PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
TABLE = "B1"
CONFIG = {
    "betting_ms": 10_000,
    "step_ms": 10_000,
    "insurance_ms": 5_000,
    "grace_ms": 0,
    "settle_batch": 250,
}
SHOE_SEED = bytes(range(32))


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


# -- basic strategy (8 decks, S17, double any two, double after split) ---------------------


def basic_strategy(cards: list[int], soft: bool, total: int, up: int, offered: set[str]) -> str:
    """The textbook chart on the options offered (``up``: 2..10, 11 for the ace)."""
    if "insure" in offered or "no-insurance" in offered:
        return "no-insurance"  # basic strategy never takes insurance
    pair = len(cards) == 2 and cards[0] == cards[1]
    if pair and "split" in offered:
        v = 11 if cards[0] == 1 else cards[0]
        if v in (11, 8) or (v == 9 and up not in (7, 10, 11)) or (v in (2, 3, 7) and up <= 7):
            return "split"
        if (v == 6 and up <= 6) or (v == 4 and up in (5, 6)):
            return "split"
    can_double = "double" in offered
    if soft:
        if can_double and (
            (total in (13, 14) and up in (5, 6))
            or (total in (15, 16) and up in (4, 5, 6))
            or (total in (17, 18) and 3 <= up <= 6)
        ):
            return "double"
        if total <= 17 or (total == 18 and up >= 9):
            return "hit" if "hit" in offered else "stand"
        return "stand"
    if can_double and (total == 11 or (total == 10 and up <= 9) or (total == 9 and 3 <= up <= 6)):
        return "double"
    if total <= 11:
        return "hit" if "hit" in offered else "stand"
    hit = (up <= 3 or up >= 7) if total == 12 else (total <= 16 and up >= 7)
    return "hit" if hit and "hit" in offered else "stand"


def choice(rnd: TableRound, record: TableSeat, states: RoundStates) -> str | None:
    """What a player at this seat decides now (None: nothing to decide). The client reads
    what any player's screen shows: the shared cards and its own hand."""
    shared = states.shared
    seat = seat_of(rnd, states.rules, record, states=states)
    offered = {o.kind.value for o in options(shared, seat)}
    if not offered:
        return None
    hand = seat.hands[seat.active if seat.active < len(seat.hands) else 0]
    total, soft = total_of(hand.cards)
    up = shared.up_value
    return basic_strategy([hard_value(c) for c in hand.cards], soft, total, up, offered)


# -- the players: threads through Casino.command -------------------------------------------


def in_parallel(clients: int, items: Sequence[Any], work: Callable[[int, Any], None]) -> None:
    """``work(i, item)`` for every item, from ``clients`` threads (item i to thread i % n)."""
    errors: list[BaseException] = []

    def client(k: int) -> None:
        try:
            for i in range(k, len(items), clients):
                work(i, items[i])
        except BaseException as e:  # reported after the join
            errors.append(e)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def players(app: Casino, seats: int, clients: int) -> list[str]:
    sessions = [""] * seats

    def one(i: int, _: object) -> None:
        p = f"p{i}"
        app.open_account(f"o{i}", p, "EUR")
        app.deposit(f"d{i}", p, 1_000_000)
        sessions[i] = str(app.open_session(f"s{i}", p, 100_000).session_id)

    in_parallel(clients, range(seats), one)
    return sessions


def current(app: Casino) -> TableRound:
    rnd = app.find(TableRound, table_round_id_for(TABLE, 1))
    assert rnd is not None
    return rnd


class Phases:
    """Wall and CPU (this process: the server, the clients, the runner) time per phase."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        w, c = time.perf_counter(), time.process_time()
        yield
        self.wall[name] = time.perf_counter() - w
        self.cpu[name] = time.process_time() - c


def one_round(app: Casino, clock: Clock, seats: int, clients: int) -> Phases:
    app.command("table", tc.CreateTable(TABLE, "EUR", dict(CONFIG)))
    sessions = players(app, seats, clients)
    runner = TableRunner(app, TABLE, clock)
    runner.tick()
    phase = Phases()

    def bet(i: int, s: str) -> None:
        app.command(f"b{i}", tc.PlaceBet(s, TABLE, "main", 1_000))
        app.command(f"a{i}", tc.AllSideBets(s, TABLE))

    with phase("betting"):
        in_parallel(clients, sessions, bet)
    clock.now += timedelta(milliseconds=CONFIG["betting_ms"])
    with phase("deal"):
        runner.tick(max_actions=1)
    while (rnd := current(app)).phase in ("step", "insurance"):
        k = rnd.step if rnd.phase == "step" else 0
        label = "insurance" if k == 0 else f"step {k}"
        states = RoundStates(rnd, rules_of(rnd.config))  # what every screen shows

        def decide(
            i: int, s: str, rnd: TableRound = rnd, k: int = k, states: RoundStates = states
        ) -> None:
            record = app.find(TableSeat, seat_id_for(rnd.id, s))
            assert record is not None
            wanted = choice(rnd, record, states)
            if wanted is not None:
                app.command(f"k{k}-{i}", tc.TableDecide(s, TABLE, k, wanted))

        with phase(f"{label} decisions"):
            in_parallel(clients, sessions, decide)
        with phase(f"{label} close"):
            done = runner.tick(max_actions=1)  # every seat decided: the window closes early
        assert done, f"{label} did not close early"
    if current(app).phase == "dealer":
        with phase("dealer"):
            runner.tick(max_actions=1)
    with phase("settlement"):
        runner.tick()
    rnd = current(app)
    assert rnd.phase == "settled" and rnd.settled_seats == seats, (rnd.phase, rnd.settled_seats)
    return phase


# -- stores ------------------------------------------------------------------------------------


@contextmanager
def sqlite_app(ring: Keyring, clock: Clock, cache_mb: int) -> Iterator[Casino]:
    d = tempfile.mkdtemp(prefix="bench-table-")
    app = bootstrap(
        Settings(data_dir=Path(d), cache_budget_mb=cache_mb),
        ring,
        clock=clock,
        seed_source=lambda: SHOE_SEED,
    )
    try:
        yield app
    finally:
        app.close()
        shutil.rmtree(d, ignore_errors=True)


@contextmanager
def postgres_app(ring: Keyring, clock: Clock, cache_mb: int) -> Iterator[Casino]:
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:10]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    app = bootstrap(
        Settings(database_url=f"{PG}?schema={schema}", cache_budget_mb=cache_mb),
        ring,
        clock=clock,
        seed_source=lambda: SHOE_SEED,
    )
    try:
        yield app
    finally:
        app.close()
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def run(kind: str, seats: int, clients: int, cache_mb: int, ring: Keyring) -> float:
    """One round of ``seats`` seats; print its phases; return the per-seat cost in s."""
    clock = Clock()
    make = sqlite_app if kind == "sqlite" else postgres_app
    with make(ring, clock, cache_mb) as app:
        phase = one_round(app, clock, seats, clients)
        batches, commands = app.batches, app.batched_commands
    total, cpu = sum(phase.wall.values()), sum(phase.cpu.values())
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{kind} {seats} seats, {clients} clients: round {total:.2f} s,"
        f" {seats / total:,.0f} seats/s, cpu {cpu:.2f} s (load {load};"
        f" {commands} commands in {batches} transactions)"
    )
    print(f"  {'phase':22s} {'wall s':>8s} {'ms/seat':>8s} {'cpu s':>8s}")
    for name, secs in phase.wall.items():
        print(f"  {name:22s} {secs:8.3f} {secs / seats * 1e3:8.3f} {phase.cpu[name]:8.3f}")
    return total / seats


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seats", nargs="*", type=int, default=[100, 1_000, 10_000])
    ap.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    ap.add_argument("--clients", type=int, default=64, help="player threads (default 64)")
    ap.add_argument(
        "--cache-mb",
        type=int,
        default=512,
        help="Settings.cache_budget_mb (default 512: a 10,000-seat round's aggregates and"
        " event hashes stay in memory; the application's default 64 holds ~1,500 seats)",
    )
    args = ap.parse_args(argv)
    kinds = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    ring = Keyring.generate()
    for kind in kinds:
        per_seat = {n: run(kind, n, args.clients, args.cache_mb, ring) for n in args.seats}
        base = min(args.seats)
        for n in sorted(per_seat):
            if n != base:
                print(
                    f"{kind}: per-seat cost {n} vs {base} seats ="
                    f" {per_seat[n] / per_seat[base]:.2f}"
                )


if __name__ == "__main__":
    main()
