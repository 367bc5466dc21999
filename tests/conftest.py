"""Shared fixtures: one store-level suite runs on SQLite and on PostgreSQL.

PostgreSQL tests need a server (``CROUPIER_TEST_POSTGRES_URL``, default
``postgresql://postgres@127.0.0.1:5432/test``). Without one they skip with a clear
message, unless ``CROUPIER_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) turns that into a
failure: in CI the PostgreSQL tests must run.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.keys import Keyring
from ledger.settings import Settings

# The per-session command rate (10 a second by default) would bite tests that play fast
# over HTTP on a slow shared machine: lifted for the test run (servers started by
# tests.integration.test_http_serve.launch get it too), never in the default. The tests
# of the limit itself set their own rate.
TEST_LIMITS = {"CROUPIER_SESSION_COMMANDS_PER_SECOND": "10000"}
for _name, _value in TEST_LIMITS.items():
    os.environ.setdefault(_name, _value)

PG_URL = os.environ.get("CROUPIER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _postgres_available() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_URL, connect_timeout=3):
            return None
    except Exception as e:  # any failure to connect means "no server here"
        return f"PostgreSQL not reachable at {PG_URL}: {e}"


_PG_PROBLEM: str | None = None
_PG_CHECKED = False


def require_postgres() -> None:
    global _PG_PROBLEM, _PG_CHECKED
    if not _PG_CHECKED:
        _PG_PROBLEM, _PG_CHECKED = _postgres_available(), True
    if _PG_PROBLEM:
        if os.environ.get("CROUPIER_REQUIRE_POSTGRES") == "1":
            pytest.fail(_PG_PROBLEM + " (CROUPIER_REQUIRE_POSTGRES=1)")
        pytest.skip(_PG_PROBLEM + "; set CROUPIER_TEST_POSTGRES_URL to run these tests")


class Store:
    """One test store: where it lives and how to open the application on it."""

    def __init__(self, kind: str, data_dir: Path, keyring: Keyring, database_url: str | None):
        self.kind = kind
        self.data_dir = data_dir
        self.keyring = keyring
        self.database_url = database_url
        self.schema = None if database_url is None else database_url.rsplit("schema=", 1)[1]
        self.apps: list[Casino] = []

    def settings(self, **overrides: object) -> Settings:
        values: dict[str, object] = {"data_dir": self.data_dir, "database_url": self.database_url}
        values.update(overrides)
        return Settings(**values)  # type: ignore[arg-type]

    def open(self, **overrides: object) -> Casino:
        app = bootstrap(self.settings(**overrides), keyring=self.keyring)
        self.apps.append(app)
        return app

    @property
    def db(self) -> str:
        """The ``--db`` argument of ``audit-cli`` for this store."""
        if self.database_url is None:
            return str(self.data_dir / "casino.sqlite")
        return self.database_url

    def connect(self):  # type: ignore[no-untyped-def]
        """A raw DB-API connection (autocommit) for tampering with rows directly."""
        if self.database_url is None:
            import sqlite3

            return sqlite3.connect(self.data_dir / "casino.sqlite", isolation_level=None)
        import psycopg

        return psycopg.connect(PG_URL, autocommit=True)

    @property
    def table(self) -> str:
        return "stored_events" if self.database_url is None else f"{self.schema}.casino_events"

    def close(self) -> None:
        for app in self.apps:
            app.close()


def _make_store(kind: str, tmp_path: Path) -> Iterator[Store]:
    keyring = Keyring.generate()
    if kind == "sqlite":
        store = Store(kind, tmp_path, keyring, None)
        yield store
        store.close()
        return
    require_postgres()
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    store = Store(kind, tmp_path, keyring, f"{PG_URL}?schema={schema}")
    try:
        yield store
    finally:
        store.close()
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    yield from _make_store(request.param, tmp_path)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    yield from _make_store("sqlite", tmp_path)


@pytest.fixture
def app(store: Store) -> Casino:
    return store.open()


OpenApp = Callable[..., Casino]
Seeded = Callable[..., Casino]


@pytest.fixture
def seeded(store: Store) -> Seeded:
    """``seeded(seed, ...)``: a Casino on the store whose next rounds use these seeds."""
    from tests.helpers import ChosenSeeds

    def open_with(*seeds: bytes) -> Casino:
        app = bootstrap(store.settings(), keyring=store.keyring, seed_source=ChosenSeeds(*seeds))
        store.apps.append(app)
        return app

    return open_with


WithCards = Callable[..., Casino]


@pytest.fixture
def with_cards(store: Store) -> WithCards:
    """``with_cards({"red-dog/deck": "7h 7d 7s"}, ...)``: a Casino on the store whose next rounds
    are dealt these cards by the real engines (a card source; see :mod:`games.deal`)."""
    from tests.helpers import ChosenDeals

    def open_with(*deals: dict[str, str]) -> Casino:
        app = bootstrap(store.settings(), keyring=store.keyring, cards=ChosenDeals(*deals))
        store.apps.append(app)
        return app

    return open_with


@pytest.fixture(name="open_session")
def open_session_fixture() -> Callable[..., str]:
    """``open_session(app, player="ann", buy_in=20_000, deposit=1_000_000)``: a funded
    game session (account, deposit, buy-in), the same for every game's tests."""
    from tests.helpers import open_session

    return open_session


THREAD_GRACE_SECONDS = 20.0
"""How long a module's threads get to end after it (a loaded machine stops them late)."""
LOOP_WORKERS = ("AnyIO worker thread", "asyncio_")
"""Worker threads of an event loop: they end with their loop (whose own thread is checked)."""
_SEEN_AFTER: dict[threading.Thread, str] = {}
"""Each thread, and the test after which it was first seen running (for the message)."""


@pytest.fixture(autouse=True)
def _note_threads(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    for thread in threading.enumerate():
        _SEEN_AFTER.setdefault(thread, request.node.nodeid)


@pytest.fixture(scope="module", autouse=True)
def no_thread_outlives_its_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every thread a test module started (its tests and fixtures, module-scoped ones
    included: a server started lazily by a module's first request is the module's) has
    ended once the module's fixtures are torn down: waited for up to
    :data:`THREAD_GRACE_SECONDS`, then the module errors naming each thread and the test
    after which it was first seen. A thread left running leaks into every later module
    (``tests/integration/test_table_crashes.py`` refuses to fork from a process running
    one: a forked child would inherit a lock held by it)."""
    before = set(threading.enumerate())
    yield
    started = [
        t for t in threading.enumerate() if t not in before and not t.name.startswith(LOOP_WORKERS)
    ]
    end = time.monotonic() + THREAD_GRACE_SECONDS
    for thread in started:
        thread.join(max(0.0, end - time.monotonic()))
    alive = [
        f"{t.name} (first seen after {_SEEN_AFTER.get(t, 'the set-up')})"
        for t in started
        if t.is_alive()
    ]
    if alive:
        pytest.fail(f"{request.node.nodeid} left threads running: {alive}")
