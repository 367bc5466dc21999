"""The sealer's fence: one sealer at a time per log, however many processes serve it.

Two sealers can never both store checkpoint number N (its aggregate id is derived from N,
so the second insert is a version conflict and that sealer catches up from the stored
chain): the chain cannot fork. The fence makes sealing single-owner as well, so that
several ``croupier serve`` workers on one PostgreSQL database do not all compute the same
tree head every second and throw all but one away: a seal runs while its process holds a
PostgreSQL transaction-level advisory lock named after the log's table. The timer and the
every-N-commands seal only *try* the lock (another process sealing now covers the same
rows); an explicit seal (``croupier seal``, the last checkpoint on close) waits for it.
The lock lives only as long as the sealing transaction: a worker that dies releases it
with its connection. Nothing is written to take it.

On SQLite the server is one process (``croupier serve --workers`` refuses more), so the
fence is only the in-process lock the sealer already takes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from eventsourcing.postgres import PostgresApplicationRecorder

WAIT_SECONDS = 30  # an explicit seal waits this long for another process's seal at most


class Fence(Protocol):
    def hold(self, *, wait: bool) -> Any:
        """A context manager yielding True while this process may seal, False if another
        process holds the fence and ``wait`` is False."""


def lock_name(schema: str, table: str) -> str:
    """The advisory lock's name (hashed to its 64-bit key by PostgreSQL's
    ``hashtextextended``), one per event table."""
    return f"croupier-sealer:{schema}.{table}"


class NoFence:
    @contextmanager
    def hold(self, *, wait: bool) -> Iterator[bool]:
        yield True


class AdvisoryFence:
    """A PostgreSQL transaction-level advisory lock on a connection of the store's pool."""

    def __init__(self, recorder: PostgresApplicationRecorder) -> None:
        self.datastore = recorder.datastore
        self.name = lock_name(recorder.datastore.schema, recorder.events_table_name)

    @contextmanager
    def hold(self, *, wait: bool) -> Iterator[bool]:
        with self.datastore.transaction(commit=False) as cur:
            if wait:
                cur.execute(f"SET LOCAL lock_timeout = '{WAIT_SECONDS}s'")
                cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self.name,))
                yield True
                return
            cur.execute(
                "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0)) AS held", (self.name,)
            )
            row = cur.fetchone()
            yield bool(row and row["held"])


def fence_for(recorder: object) -> Fence:
    if isinstance(recorder, PostgresApplicationRecorder):
        return AdvisoryFence(recorder)
    return NoFence()
