"""Benchmark: stake + credit_win pairs per second through Casino, signed vs unsigned.

Each pair is two idempotent commands (each one transaction: the session event plus the
request record). "Signed" is the production Casino: Ed25519-sealed events, signatures and
hash chains verified on read, a checkpoint every ``checkpoint_every`` commands. "Unsigned"
is the same Casino with the eventsourcing library's plain Mapper and EventStore and no
checkpoints, on its own fresh store, so the ratio is the cost of the signed log. The two
take turns every ``CHUNK`` pairs so that load changes on the machine hit both alike.

Runs on SQLite and, when reachable, on PostgreSQL (CROUPIER_TEST_POSTGRES_URL, default
postgresql://postgres@127.0.0.1:5432/test, in throw-away schemas).

    python bench/bench_ledger.py [PAIRS]     # default 2000 pairs per store
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import EventStore, Mapper

from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings

try:  # the composition root and the test-only money primitives (since issue 12)
    from ledger.bootstrap import bootstrap
    from tests.money import credit_win, stake
except ImportError:  # the code before issue 12, benchmarked for comparison
    bootstrap = None

    def stake(app: Any, *args: Any) -> Any:
        return app.stake(*args)

    def credit_win(app: Any, *args: Any) -> Any:
        return app.credit_win(*args)


def open_casino(cls: type[Casino], settings: Settings, ring: Keyring) -> Casino:
    if bootstrap is None:
        return cls(settings, ring)
    return bootstrap(settings, ring, application=cls)


PG = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
WARM_UP = 50
CHUNK = 100  # pairs per turn; the two variants take turns


class NoCheckpoints:
    """Stands in for the Sealer: checkpoints hash signed envelopes, which the baseline lacks."""

    def maybe_seal(self) -> None:
        return None

    def seal(self) -> None:
        return None

    def stop(self) -> None:
        return None


class UnsignedCasino(Casino):
    """The same commands on the library's plain mapper and event store: the baseline."""

    def __init__(self, settings: Settings, keyring: Keyring) -> None:
        super().__init__(settings, keyring)
        self.sealer = NoCheckpoints()  # type: ignore[assignment]  # baseline: no checkpoints

    def construct_mapper(self) -> Mapper[UUID]:  # type: ignore[override]  # plain, unsigned
        return Application.construct_mapper(self)

    def construct_event_store(self) -> EventStore[UUID]:  # type: ignore[override]  # plain
        return Application.construct_event_store(self)


class Table:
    """One funded session on one app; plays timed chunks of stake + credit_win pairs."""

    def __init__(self, app: Casino) -> None:
        self.app = app
        app.open_account("acc", "bench", "EUR")
        app.deposit("dep", "bench", 10**12)
        self.sid = app.open_session("ses", "bench", 10**11).session_id
        self.played = 0
        self.elapsed = 0.0
        self.play(WARM_UP)
        self.elapsed = 0.0

    def play(self, pairs: int) -> None:
        app, sid, first = self.app, self.sid, self.played
        start = time.perf_counter()
        for i in range(first, first + pairs):
            stake(app, f"s{i}", sid, f"round-{i}", 100)
            credit_win(app, f"w{i}", sid, f"round-{i}", 150)
        self.elapsed += time.perf_counter() - start
        self.played += pairs

    def rate(self) -> float:
        expected = 10**11 + self.played * 50
        assert self.app.session_balance(self.sid) == expected, "moved the wrong amounts"
        return (self.played - WARM_UP) / self.elapsed


@contextmanager
def sqlite_settings() -> Iterator[Settings]:
    with tempfile.TemporaryDirectory() as d:
        yield Settings(data_dir=Path(d))


@contextmanager
def postgres_settings() -> Iterator[Settings]:
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        with tempfile.TemporaryDirectory() as d:
            yield Settings(data_dir=Path(d), database_url=f"{PG}?schema={schema}")
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def report(name: str, make_settings: Callable[[], Any], ring: Keyring, pairs: int) -> None:
    """Signed and unsigned run side by side, alternating chunks, so load drift hits both."""
    with make_settings() as signed_settings, make_settings() as unsigned_settings:
        signed_app = open_casino(Casino, signed_settings, ring)
        unsigned_app = open_casino(UnsignedCasino, unsigned_settings, ring)
        try:
            signed, unsigned = Table(signed_app), Table(unsigned_app)
            done = 0
            while done < pairs:
                chunk = min(CHUNK, pairs - done)
                signed.play(chunk)
                unsigned.play(chunk)
                done += chunk
            s, u = signed.rate(), unsigned.rate()
        finally:
            signed_app.close()
            unsigned_app.close()
    print(
        f"{name} signed: {s:,.0f} pairs/s  unsigned: {u:,.0f} pairs/s  ratio: {s / u:.2f}",
        flush=True,
    )


def main() -> None:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    ring = Keyring.generate()
    print(
        f"{pairs} stake + credit_win pairs per store, after {WARM_UP} warm-up pairs, "
        f"signed and unsigned alternating every {CHUNK} pairs"
    )
    report("sqlite", sqlite_settings, ring, pairs)
    try:
        import psycopg

        with psycopg.connect(PG, connect_timeout=3):
            pass
    except Exception as e:
        print(f"postgres: skipped ({e})")
        return
    report("postgres", postgres_settings, ring, pairs)


if __name__ == "__main__":
    main()
