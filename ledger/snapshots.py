"""Signed snapshots of long-lived aggregates: taken every N events, verified on load.

The library's snapshotting (a snapshot store the repository reads before the events, a
``Snapshot`` event holding the aggregate's state) with two changes. Each snapshot is
sealed like an event (``ledger.envelope``: same envelope, key id and log id, its own
signing domain, ``prev_hash`` = the hash of the event it summarises), and a snapshot is
*never trusted*: on load it must be signed under this log's id by the key that signed the
event at its version, and that event must be the stored one; anything else (altered,
forged, swapped, replayed, orphaned, unreadable) is refused, logged, and the aggregate is
replayed from its events. ``audit-cli verify`` checks every snapshot's state against the
replay of its events.

Snapshots are taken from the aggregate being saved (its state includes its pending
events) when those events reach a multiple of ``Settings.snapshot_every``, at its new
version; the signed store seals them against the event hashes it has just computed and
inserts them in the events' transaction (``Casino.save``, ``SigningEventStore.put``), so a
snapshot exists exactly when the events it summarises do, at no extra COMMIT. A snapshot
that cannot be encoded is logged and skipped: it is a shortcut, never part of a command.
``SnapshotStore.put`` (the library's ``take_snapshot``) writes one in its own transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, DomainEventProtocol, Snapshot
from eventsourcing.persistence import (
    AggregateRecorder,
    EventStore,
    InfrastructureFactory,
    Mapper,
    Recording,
    StoredEvent,
)
from eventsourcing.postgres import PostgresDatastore
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteDatastore
from eventsourcing.utils import register_topic
from psycopg.sql import SQL, Identifier

from ledger import envelope
from ledger.errors import TamperDetected
from ledger.store import (
    SQLITE_SNAPSHOTS,
    BoundedPostgresRecorder,
    SigningEventStore,
    VerifyingMapper,
    canonical_sqlite_id,
    postgres_snapshots,
)

log = logging.getLogger("croupier.snapshots")
SNAPSHOT_TOPIC = "croupier/snapshot@1"
DEFAULT_EVERY = 100


class SignedSnapshot(Snapshot):
    """The library's snapshot under an explicit topic (stored topics never name modules)."""

    TOPIC = SNAPSHOT_TOPIC


register_topic(SNAPSHOT_TOPIC, SignedSnapshot)


class SnapshotRefused(Exception):
    """A stored snapshot that is not a valid summary of this log's events."""


class SnapshotStore(EventStore[UUID]):
    """Seals snapshots on ``put``; ``get`` returns only snapshots that verify."""

    mapper: VerifyingMapper

    def __init__(
        self, mapper: VerifyingMapper, recorder: AggregateRecorder, events: SigningEventStore
    ) -> None:
        super().__init__(mapper, recorder)
        self.events = events
        self.refused = 0  # snapshots refused on load since start (tests, /health later)

    def put(
        self, domain_events: Sequence[DomainEventProtocol[UUID]], **kwargs: Any
    ) -> list[Recording[UUID]]:
        log_id = self.mapper.log_id
        if log_id is None:
            raise TamperDetected("the log has no genesis event: refusing to write")
        key, kid = self.mapper.signer or (
            self.mapper.keyring.signing_key,
            self.mapper.keyring.signing_kid,
        )
        stored = []
        for snap in domain_events:
            plain = self.mapper.to_stored_event(_signed(snap))
            oid, version = plain.originator_id, plain.originator_version
            summarised = self.events._hash_at(oid, version)
            state = envelope.seal_snapshot(
                key, kid, oid, version, plain.topic, plain.state, summarised, log_id
            )
            stored.append(StoredEvent(oid, version, plain.topic, state))
        self.recorder.insert_events(stored, **kwargs)
        return []

    def get(
        self,
        originator_id: UUID,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Iterator[DomainEventProtocol[UUID]]:
        try:
            rows = self.recorder.select_events(
                originator_id, gt=gt, lte=lte, desc=desc, limit=limit
            )
        except Exception as e:  # an unreadable snapshot table costs a replay, nothing more
            log.error("snapshot of %s not read (replaying its events): %r", originator_id, e)
            return iter([])
        found = []
        for row in rows:
            try:
                found.append(self.open(row))
            except SnapshotRefused as e:
                self.refused += 1
                log.error(
                    "refused the snapshot of %s v%s (replaying its events): %s",
                    row.originator_id,
                    row.originator_version,
                    e,
                )
                return iter([])  # never an older one instead: the events are the truth
        return iter(found)

    def open(self, row: StoredEvent) -> SignedSnapshot:
        """The snapshot of ``row`` if it is a valid summary of the stored events, else
        :class:`SnapshotRefused` saying why."""
        oid, version = row.originator_id, row.originator_version
        try:
            env = envelope.decode(row.state)
        except envelope.EnvelopeError as e:
            raise SnapshotRefused(str(e)) from None
        log_id = self.mapper.log_id
        if env.format != 2 or log_id is None:
            raise SnapshotRefused("not a format 2 envelope of this log")
        events = self.events.recorder.select_events(oid, gt=version - 1, lte=version, limit=1)
        if not events or events[0].originator_version != version:
            raise SnapshotRefused(f"it summarises v{version}, which is not in the log")
        try:
            _, event_env, event_hash = self.mapper.open(events[0])
        except TamperDetected as e:
            raise SnapshotRefused(f"the event it summarises does not verify: {e}") from None
        if env.prev_hash != event_hash:
            raise SnapshotRefused(f"it does not summarise the stored event v{version}")
        if env.kid != event_env.kid:
            raise SnapshotRefused(
                f"signed by key {env.kid}, the event v{version} by {event_env.kid}"
            )
        public = self.mapper.trusted_keys.get(env.kid) if self.mapper.trusted_keys else None
        if public is None:
            raise SnapshotRefused(f"signed by key {env.kid!r}, which the log does not name")
        try:
            envelope.check_snapshot(public, oid, version, row.topic, env, log_id)
        except envelope.InvalidSignature:
            raise SnapshotRefused("its signature does not verify") from None
        except envelope.EnvelopeError as e:
            raise SnapshotRefused(str(e)) from None
        try:
            snap = Mapper.to_domain_event(
                self.mapper, StoredEvent(oid, version, row.topic, env.payload)
            )
        except Exception as e:  # signed but not decodable by this code: replay instead
            raise SnapshotRefused(f"cannot be decoded: {e!r}") from None
        if not isinstance(snap, SignedSnapshot):
            raise SnapshotRefused(f"topic {row.topic!r} is not a snapshot")
        return snap


def _signed(snap: DomainEventProtocol[UUID]) -> SignedSnapshot:
    """The library's ``take_snapshot`` makes a plain ``Snapshot``: store it under ours."""
    if isinstance(snap, SignedSnapshot):
        return snap
    if not isinstance(snap, Snapshot):
        raise TypeError(f"not a snapshot: {type(snap).__name__}")
    return SignedSnapshot(
        originator_id=snap.originator_id,
        originator_version=snap.originator_version,
        timestamp=snap.timestamp,
        topic=snap.topic,
        state=snap.state,
    )


class Snapshotter:
    """Chooses the snapshots due in a save: every aggregate of the registered types whose
    pending events reach a multiple of ``every``, at its new version (its state already
    includes them). The signed store seals them and writes them in the events'
    transaction, so a snapshot exists exactly when the events it summarises do."""

    def __init__(self, store: SnapshotStore, every: int, types: Sequence[type[Aggregate]]) -> None:
        if every < 1:
            raise ValueError("snapshots are taken every N >= 1 events")
        self.store = store
        self.every = every
        self.types = frozenset(types)
        self.taken = 0

    def due(self, objs: Sequence[Any]) -> list[StoredEvent]:
        """The plain (transcoded, not yet sealed) snapshots of ``objs`` due in this save."""
        due = []
        for agg in objs:
            if type(agg) not in self.types:
                continue
            pending = getattr(agg, "_pending_events", None)
            if not pending:
                continue
            first = pending[0].originator_version
            if (first - 1) // self.every >= agg.version // self.every:
                continue
            try:
                due.append(self.store.mapper.to_stored_event(SignedSnapshot.take(agg)))
            except Exception as e:  # a snapshot is only a shortcut: never fail the save
                log.warning("no snapshot of %s v%s: %r", agg.id, agg.version, e)
        return due


# -- the snapshot table: append-only like the event table --------------------------------


class AppendOnlySQLiteSnapshotRecorder(SQLiteAggregateRecorder):
    def __init__(self, datastore: SQLiteDatastore, events_table_name: str = SQLITE_SNAPSHOTS):
        super().__init__(datastore, events_table_name)

    def convert_originator_id(self, originator_id: str) -> UUID | str:
        return canonical_sqlite_id(originator_id)

    def construct_create_table_statements(self) -> list[str]:
        t = self.events_table_name
        return [
            *super().construct_create_table_statements(),
            f"CREATE TRIGGER IF NOT EXISTS {t}_no_update BEFORE UPDATE ON {t} "
            f"BEGIN SELECT RAISE(ABORT, 'croupier: snapshot rows are append-only'); END",
            f"CREATE TRIGGER IF NOT EXISTS {t}_no_delete BEFORE DELETE ON {t} "
            f"BEGIN SELECT RAISE(ABORT, 'croupier: snapshot rows are append-only'); END",
        ]


class AppendOnlyPostgresSnapshotRecorder(BoundedPostgresRecorder):
    """The event table's trigger function (made with it) guards this table too."""

    def __init__(self, datastore: PostgresDatastore, events_table_name: str) -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        schema, table = Identifier(datastore.schema), Identifier(self.events_table_name)
        fn = Identifier("croupier_append_only")
        for suffix, when in (("_append_only", "UPDATE OR DELETE"), ("_no_truncate", "TRUNCATE")):
            each = "ROW" if when != "TRUNCATE" else "STATEMENT"
            self.sql_create_statements.append(
                SQL(
                    "CREATE OR REPLACE TRIGGER {trg} BEFORE " + when + " ON {schema}.{table} "
                    "FOR EACH " + each + " EXECUTE FUNCTION {schema}.{fn}()"
                ).format(
                    trg=Identifier(self.events_table_name + suffix),
                    schema=schema,
                    table=table,
                    fn=fn,
                )
            )

    def create_table(self) -> None:
        with self.datastore.get_connection() as conn:  # as the event table: one at a time
            conn.execute(SQL("SELECT pg_advisory_lock(hashtext('croupier-create-schema'))"))
            try:
                super().create_table()
            finally:
                conn.execute(SQL("SELECT pg_advisory_unlock(hashtext('croupier-create-schema'))"))


def construct_store(
    factory: InfrastructureFactory[Any],
    mapper: VerifyingMapper,
    events: SigningEventStore,
    app_name: str,
) -> SnapshotStore | None:
    """The snapshot store on the application's datastore (its table made when allowed);
    None, with a warning, when the table is not there and may not be made (a schema made
    by an older ``croupier db init``): the events' transactions must never name it."""
    datastore = factory.datastore  # type: ignore[attr-defined]
    recorder: AggregateRecorder
    if isinstance(datastore, PostgresDatastore):
        table = postgres_snapshots(f"{app_name.lower()}_events")
        recorder = AppendOnlyPostgresSnapshotRecorder(datastore, table)
    else:
        recorder = AppendOnlySQLiteSnapshotRecorder(datastore)
    if getattr(factory, "env_create_table", lambda: True)():  # CROUPIER_CREATE_TABLES
        recorder.create_table()
    elif not _exists(datastore, recorder):
        log.warning("no snapshot table (run `croupier db init` again): snapshots are off")
        return None
    return SnapshotStore(mapper, recorder, events)


def _exists(datastore: Any, recorder: Any) -> bool:
    name = recorder.events_table_name
    with datastore.transaction(commit=False) as c:
        if isinstance(datastore, PostgresDatastore):
            c.execute(SQL("SELECT to_regclass(%s) AS t"), (f"{datastore.schema}.{name}",))
            row = c.fetchone()
            return bool(row and row["t"] is not None)
        c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return c.fetchone() is not None
