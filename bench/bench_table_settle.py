"""Benchmark: a live table's runner at N seats: the deal, each window's close and the
settlement, timed from the dealer's last card to the round's close.

The players' side is not what this measures (``bench/bench_table.py`` and
``bench/bench_table_http.py`` do): the N players are seated in bulk, through the real
handlers (open account, deposit, buy-in, a main bet and ALL SIDE BETS) run in chunks of
one transaction each, untimed. Nobody decides: every window closes at its deadline with
seed 002's automatic actions (total <= 11 hit, else stand), so the runner's close of a
window applies one action per seat. Every size deals the same cards (a fixed shoe seed).

Timed, each with the wall time and the CPU of this process (the runner) and of the
PostgreSQL backends serving the bench's database (from /proc): the deal, each window's
close, the dealer, and the settlement (every batch and the round's close: ``settle_s``,
the goal is <= 5 s at 10,000 seats). One JSON line per run through ``bench/record.py``
(``bench/results/bench_table_settle.jsonl``).

``--busy`` runs a thread of pure Python beside the runner through the timed phases (the
server's event loop, busy with its sockets, as the runner meets it in ``croupier serve``)
and ``--switch-ms`` sets the interpreter's switch interval (:mod:`ledger.switch_policy`).

    python bench/bench_table_settle.py [--backend postgres|sqlite] [--runs 3]
        [--batch N] [--busy] [--switch-ms MS] [SEATS ...]
        (default: postgres, 1000 10000 seats, 1 run)
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import Run

from ledger import commands as c
from ledger import gc_policy
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.requests import body_digest, request_aggregate_id
from ledger.settings import Settings
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, table_round_id_for
from ledger.tables.runner import TableRunner
from ledger.unit_of_work import UnitOfWork

PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
TABLE = "S1"
SHOE_SEED = bytes(range(32))
CHUNK = 200
"""Players seated per setup transaction."""


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def postgres_cpu() -> dict[int, float]:
    """CPU seconds used so far by each PostgreSQL backend of the bench's database (by its
    process title, which names the database): other clients of the server not counted."""
    tick = os.sysconf("SC_CLK_TCK")
    database = PG.rsplit("/", 1)[-1].split("?")[0]
    out: dict[int, float] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                title = f.read().decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if not title.startswith("postgres: ") or f" {database} " not in title:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        out[int(pid)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU the backends used in between (a backend that ended meanwhile is not counted)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def in_bulk(app: Casino, cmds: Sequence[tuple[str, c.Command[Any]]]) -> list[Any]:
    """Run the commands through their real handlers, ``CHUNK`` per transaction (setup
    only: no request record is written)."""
    out: list[Any] = []
    for i in range(0, len(cmds), CHUNK):
        uow = UnitOfWork(app.find, {})
        for request_id, cmd in cmds[i : i + CHUNK]:
            rid = request_aggregate_id(cmd.scope, request_id)
            out.append(
                app.handle(
                    app.handlers[type(cmd)], uow, cmd, rid, body_digest(cmd.name, cmd.body())
                )
            )
        saved = [a for a in uow.touched() if getattr(a, "_pending_events", None)]
        app.save(*saved)
        if app.repository.cache is not None:
            for agg in saved:
                app.repository.cache.put(agg.id, agg)
    return out


def seat_players(app: Casino, seats: int) -> list[str]:
    in_bulk(app, [(f"o{i}", c.OpenAccount(f"p{i}", "EUR")) for i in range(seats)])
    in_bulk(app, [(f"d{i}", c.Deposit(f"p{i}", 1_000_000)) for i in range(seats)])
    opened = in_bulk(app, [(f"s{i}", c.OpenSession(f"p{i}", 100_000, None)) for i in range(seats)])
    sessions = [str(o.session_id) for o in opened]
    in_bulk(app, [(f"b{i}", tc.PlaceBet(s, TABLE, "main", 1_000)) for i, s in enumerate(sessions)])
    in_bulk(app, [(f"a{i}", tc.AllSideBets(s, TABLE)) for i, s in enumerate(sessions)])
    return sessions


class Collections:
    """The time the garbage collector takes (its callbacks), by generation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._seen)

    def _seen(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started

    def close(self) -> None:
        gc.callbacks.remove(self._seen)


@contextmanager
def spinning(on: bool) -> Iterator[None]:
    """A thread running pure Python while the block runs (nothing when ``on`` is false):
    the runner then takes the interpreter's lock back after each of its waits as it does
    in ``croupier serve`` while the event loop is busy with the sockets."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(200))

    thread = threading.Thread(target=spin, name="busy", daemon=True)
    if on:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        if on:
            thread.join()


class Phases:
    def __init__(self, busy: bool = False) -> None:
        self.figures: dict[str, float] = {}
        self.collections = Collections()
        self.busy = busy

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        w, cpu, pg = time.perf_counter(), time.process_time(), postgres_cpu()
        collecting = self.collections.seconds
        with spinning(self.busy):
            yield
        self.figures[f"{name}_s"] = round(time.perf_counter() - w, 4)
        self.figures[f"{name}_cpu_s"] = round(time.process_time() - cpu, 4)
        self.figures[f"{name}_pg_cpu_s"] = round(used(pg, postgres_cpu()), 4)
        self.figures[f"{name}_gc_s"] = round(self.collections.seconds - collecting, 4)


def settle(runner: TableRunner) -> list[str]:
    """The settlement (a function of its own: a profile selects its samples by name)."""
    return runner.tick()


def one_round(
    app: Casino, clock: Clock, seats: int, batch: int, busy: bool = False
) -> dict[str, float]:
    config = {"betting_ms": 10_000, "step_ms": 10_000, "insurance_ms": 5_000, "grace_ms": 0}
    if batch:
        config["settle_batch"] = batch
    app.command("table", tc.CreateTable(TABLE, "EUR", config))
    runner = TableRunner(app, TABLE, clock)
    runner.tick()
    seat_players(app, seats)
    phase = Phases(busy)

    def current() -> TableRound:
        rnd = app.find(TableRound, table_round_id_for(TABLE, 1))
        assert rnd is not None
        return rnd

    closes = 0
    clock.now += timedelta(seconds=10)
    with phase("deal"):
        runner.tick(max_actions=1)
    with phase("windows"):
        while current().phase in ("step", "insurance"):
            clock.now += timedelta(seconds=10)
            assert runner.tick(max_actions=1), "a window did not close at its deadline"
            closes += 1
    if current().phase == "dealer":
        with phase("dealer"):
            runner.tick(max_actions=1)
    with phase("settle"):
        settle(runner)
    phase.collections.close()
    rnd = current()
    assert rnd.phase == "settled" and rnd.settled_seats == seats, (rnd.phase, rnd.settled_seats)
    figures = dict(phase.figures)
    figures["windows_closed"] = closes
    figures["settle_ms_per_seat"] = round(figures["settle_s"] / seats * 1e3, 4)
    figures["settle_cpu_ms_per_seat"] = round(figures["settle_cpu_s"] / seats * 1e3, 4)
    figures["settle_pg_cpu_ms_per_seat"] = round(figures["settle_pg_cpu_s"] / seats * 1e3, 4)
    return figures


@contextmanager
def collector(serve: bool) -> Iterator[None]:
    """``croupier serve``'s collector (:mod:`ledger.gc_policy`) once the store is open, or
    the interpreter's; the interpreter's again after."""
    defaults = gc.get_threshold()
    if serve:
        gc_policy.tune()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*defaults)


@contextmanager
def store(kind: str, ring: Keyring, clock: Clock) -> Iterator[Casino]:
    settings: dict[str, Any] = {"cache_budget_mb": 512}
    if kind == "sqlite":
        d = tempfile.mkdtemp(prefix="bench-settle-")
        app = bootstrap(
            Settings(data_dir=Path(d), **settings), ring, clock=clock, seed_source=lambda: SHOE_SEED
        )
        try:
            yield app
        finally:
            app.close()
            shutil.rmtree(d, ignore_errors=True)
        return
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:10]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    app = bootstrap(
        Settings(database_url=f"{PG}?schema={schema}", **settings),
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


def main(argv: Sequence[str] | None = None, done: Callable[..., Any] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("seats", nargs="*", type=int, default=[1_000, 10_000])
    ap.add_argument("--backend", choices=("sqlite", "postgres"), default="postgres")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=0, help="settle_batch (default: the table's)")
    ap.add_argument("--label", default="", help="a name for these runs (e.g. before, after)")
    ap.add_argument(
        "--busy",
        action="store_true",
        help="a thread of pure Python running beside the runner through the timed phases"
        " (as the server's event loop is while it writes to 10,000 sockets)",
    )
    ap.add_argument(
        "--switch-ms",
        type=float,
        default=0.0,
        help="sys.setswitchinterval in ms (default: the interpreter's, 5 ms)",
    )
    ap.add_argument(
        "--gc",
        choices=("serve", "default"),
        default="serve",
        help="croupier serve's garbage collector (ledger.gc_policy) or the interpreter's",
    )
    args = ap.parse_args(argv)
    if args.switch_ms:
        sys.setswitchinterval(args.switch_ms / 1e3)
    ring = Keyring.generate()
    for seats in args.seats:
        settle_s: list[float] = []
        for k in range(args.runs):
            run = Run("bench_table_settle", f"{args.label} {args.backend} seats={seats}".strip())
            clock = Clock()
            with store(args.backend, ring, clock) as app, collector(args.gc == "serve"):
                figures = one_round(app, clock, seats, args.batch, args.busy)
            figures.update(
                seats=seats,
                backend=args.backend,
                run=k + 1,
                label=args.label,
                gc=args.gc,
                busy=args.busy,
                switch_ms=args.switch_ms or sys.getswitchinterval() * 1e3,
            )
            run.done(figures)
            settle_s.append(figures["settle_s"])
        if args.runs > 1:
            med = statistics.median(settle_s)
            print(
                f"{args.backend} {seats} seats: settlement median {med:.2f} s"
                f" (spread {min(settle_s):.2f}-{max(settle_s):.2f} s, {args.runs} runs)"
            )


if __name__ == "__main__":
    main()
