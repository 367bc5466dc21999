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
