"""The append-only recorders pass the eventsourcing library's own recorder contracts.

``AppendOnlySQLiteRecorder`` and ``AppendOnlyPostgresRecorder`` add triggers to the
library's recorders; these are the library's contract test cases
(``eventsourcing.tests.persistence``) run against them, on SQLite and on PostgreSQL,
including the non-interleaving notification-id case the checkpoints rely on (one
transaction's events get consecutive notification ids, never interleaved with another's).

``AggregateRecorderTestCase`` does not apply: it is for recorders without notifications
(it expects no notification ids back, which an application recorder returns).

Left out of the application contract: ``test_performance`` and ``test_concurrent_throughput``
(they time, they do not check: speed is measured in bench/) and
``test_concurrent_no_conflicts`` (100,000 events from 10 threads: minutes on this shared
2-core machine; the non-interleaving case covers concurrent inserts).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from typing import Any

import psycopg
import pytest
from eventsourcing.postgres import PostgresDatastore
from eventsourcing.sqlite import SQLiteDatastore
from eventsourcing.tests.persistence import (
    ApplicationRecorderTestCase,
    NonInterleavingNotificationIDsBaseCase,
)

from ledger.store import AppendOnlyPostgresRecorder, AppendOnlySQLiteRecorder
from tests.conftest import PG_URL, require_postgres

NOT_CONTRACTS = {"test_performance": None, "test_concurrent_throughput": None}


class SQLiteRecorder:
    """A fresh SQLite file per test (a file, not :memory:, so threads share it)."""

    def setUp(self) -> None:  # unittest's name
        self.dir = tempfile.TemporaryDirectory()
        self.datastore = SQLiteDatastore(os.path.join(self.dir.name, "db.sqlite"), lock_timeout=30)

    def tearDown(self) -> None:
        self.datastore.close()
        self.dir.cleanup()

    def create_recorder(self) -> AppendOnlySQLiteRecorder:
        recorder = AppendOnlySQLiteRecorder(self.datastore)
        recorder.create_table()
        return recorder


class PostgresRecorder:
    """A throw-away schema per test on the test server."""

    def setUp(self) -> None:
        require_postgres()
        self.schema = "rc_" + uuid.uuid4().hex[:12]
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {self.schema}")
        self.datastore = PostgresDatastore(
            "test", "127.0.0.1", 5432, "postgres", "", schema=self.schema, pool_size=4
        )

    def tearDown(self) -> None:
        self.datastore.close()
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")

    def create_recorder(self) -> AppendOnlyPostgresRecorder:
        recorder = AppendOnlyPostgresRecorder(self.datastore, events_table_name="casino_events")
        recorder.create_table()
        return recorder


def _contract(base: type[Any], store: type[Any], name: str, **extra: Any) -> type[Any]:
    return type(name, (store, base), {**NOT_CONTRACTS, **extra})


TestSQLiteApplicationRecorder = _contract(
    ApplicationRecorderTestCase,
    SQLiteRecorder,
    "TestSQLiteApplicationRecorder",
    test_concurrent_no_conflicts=None,
)
TestSQLiteNonInterleavingNotificationIDs = _contract(
    NonInterleavingNotificationIDsBaseCase,
    SQLiteRecorder,
    "TestSQLiteNonInterleavingNotificationIDs",
)
TestPostgresApplicationRecorder = pytest.mark.postgres(
    _contract(
        ApplicationRecorderTestCase,
        PostgresRecorder,
        "TestPostgresApplicationRecorder",
        test_concurrent_no_conflicts=None,
    )
)
TestPostgresNonInterleavingNotificationIDs = pytest.mark.postgres(
    _contract(
        NonInterleavingNotificationIDsBaseCase,
        PostgresRecorder,
        "TestPostgresNonInterleavingNotificationIDs",
    )
)


@pytest.mark.postgres
def test_the_notifications_read_as_tuples_are_the_librarys() -> None:
    """``AppendOnlyPostgresRecorder.select_notifications`` reads rows as tuples where the
    library reads dicts: the same notifications for every shape of the query."""
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.postgres import PostgresApplicationRecorder

    case = PostgresRecorder()
    case.setUp()
    try:
        recorder = case.create_recorder()
        for n in range(12):
            recorder.insert_events(
                [
                    StoredEvent(uuid.uuid4(), 1, f"topic-{n % 3}", f"state {n}".encode()),
                    StoredEvent(uuid.uuid4(), 1, "topic-x", bytes([n, 0, 255])),
                ]
            )
        library = PostgresApplicationRecorder.select_notifications.__wrapped__
        shapes = [
            {"start": s, "limit": lim, "stop": stop, "topics": t, "inclusive_of_start": inc}
            for s in (None, 1, 5)
            for lim in (3, 100)
            for stop in (None, 9)
            for t in ((), ("topic-1",), ["topic-0", "topic-x"])
            for inc in (True, False)
        ]
        for shape in shapes:
            kwargs = dict(shape)
            start, limit = kwargs.pop("start"), kwargs.pop("limit")
            ours = recorder.select_notifications(start, limit, **kwargs)  # type: ignore[arg-type]
            theirs = library(recorder, start, limit, **kwargs)
            assert ours == theirs, shape
            assert all(type(n.state) is bytes for n in ours)
        assert len(recorder.select_notifications(None, 100)) == 24
    finally:
        case.tearDown()
