"""The signed event store: ``put`` seals every event, reads verify signatures and chains.

Also the append-only recorders: triggers stop UPDATE, DELETE (and on PostgreSQL
TRUNCATE) of event rows, so even the application's own connection cannot rewrite the log.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property, lru_cache, wraps
from itertools import starmap
from typing import Any, Protocol, TypeVar
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import (
    AggregateRecorder,
    EventStore,
    InterfaceError,
    Mapper,
    Notification,
    OperationalError,
    Recording,
    StoredEvent,
)
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresDatastore,
)
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteDatastore,
)
from psycopg import InterfaceError as PgInterfaceError
from psycopg import OperationalError as PgOperationalError
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Composed, Identifier
from psycopg_pool import PoolTimeout, TooManyRequests

from ledger import envelope, sqlite_rows
from ledger.errors import TamperDetected
from ledger.keys import Keyring
from ledger.written import Written

_APPEND_ONLY = "croupier: event rows are append-only"
SQLITE_SNAPSHOTS = "stored_snapshots"
LOCK_FUNCTION = "croupier_lock_events"
_HEX = frozenset("0123456789abcdef")
NEWER_CHUNK = 400
"""(aggregate, version) pairs per query of ``any_newer``."""


RowKey = tuple[int | str, int]


def row_key(originator_id: UUID | str, version: int) -> RowKey:
    """A row's key in the cache of event hashes: a UUID by its integer. A tuple of an
    int and an int (or a str) is left alone by the garbage collector once it has seen
    it, where one holding a UUID object is scanned by every collection it lives through:
    the cache's 200,000 entries were most of what a Red Dog server's young collections
    found alive (docs/performance/request-path.md, "The collector's cycles")."""
    return (originator_id.int if isinstance(originator_id, UUID) else originator_id, version)


class VerifyingMapper(Mapper[UUID]):
    """Checks the Ed25519 envelope of each stored event before decoding its payload.

    It also keeps the one cache of event hashes: for recent rows it sealed or verified,
    (SHA-256 of the stored bytes, event hash) by (aggregate, version). A row whose bytes
    are identical to ones already checked carries a signature already known good, so it
    is not verified again (the repository reading back its own writes, the sealer hashing
    new events); any changed byte misses the cache and gets the full check. The hashes
    also link each new event to the one before it without reading it back.
    """

    keyring: Keyring
    CACHE_SIZE = 200_000
    log_id: bytes | None = None
    """The log id of the genesis (format 2 rows are signed under it); None before it."""
    trusted_keys: dict[str, Any] | None = None
    """The keys the log's key history names (None before the genesis is read)."""
    legacy_keys: dict[str, Any] | None = None
    """Keys of the format 1 prefix (before the genesis: the keyring's)."""
    signer: tuple[Any, str] | None = None
    """Overrides the keyring's current key (the rotation event is signed by the old key)."""
    refresh_trust: Any = None
    """Re-reads the key history when a row names a key it does not know yet."""

    @cached_property
    def _batches(self) -> envelope.VerifiedBatches:
        """Batch signatures (format 3) verified for one of their rows."""
        return envelope.VerifiedBatches()

    def _cache(self) -> tuple[OrderedDict[RowKey, tuple[bytes, bytes]], threading.Lock]:
        if not hasattr(self, "_known"):
            self._known: OrderedDict[RowKey, tuple[bytes, bytes]] = OrderedDict()
            self._known_lock = threading.Lock()
        return self._known, self._known_lock

    def remember(
        self, originator_id: UUID | str, version: int, state: bytes, event_hash: bytes
    ) -> None:
        entry = (hashlib.sha256(state).digest(), event_hash)
        self._keep([(row_key(originator_id, version), entry)])

    def remember_all(self, rows: Sequence[StoredEvent], hashes: Sequence[bytes]) -> None:
        """:meth:`remember` for a save's rows, under the lock once (their digests taken
        before it), not once a row."""
        sha256 = hashlib.sha256
        self._keep(
            [
                (row_key(s.originator_id, s.originator_version), (sha256(s.state).digest(), h))
                for s, h in zip(rows, hashes, strict=True)
            ]
        )

    def _keep(self, entries: list[tuple[RowKey, tuple[bytes, bytes]]]) -> None:
        """Each (row's key, (its state's digest, its event hash)), the oldest dropped past
        :attr:`CACHE_SIZE`."""
        known, lock = self._cache()
        with lock:
            known.update(entries)
            for _ in range(len(known) - self.CACHE_SIZE):
                known.popitem(last=False)

    def known_hash(self, originator_id: UUID | str, version: int) -> bytes | None:
        known, lock = self._cache()
        with lock:
            entry = known.get(row_key(originator_id, version))
        return None if entry is None else entry[1]

    def open(self, stored: StoredEvent) -> tuple[StoredEvent, envelope.Envelope, bytes]:
        """Return the unsealed stored event, its envelope and its event hash."""
        try:
            env = envelope.decode(stored.state)
        except envelope.EnvelopeError as e:
            raise TamperDetected(f"{_where(stored)}: {e}") from e
        plain = StoredEvent(
            stored.originator_id, stored.originator_version, stored.topic, env.payload
        )
        known, lock = self._cache()
        with lock:
            entry = known.get(row_key(stored.originator_id, stored.originator_version))
        if entry is not None and entry[0] == hashlib.sha256(stored.state).digest():
            return plain, env, entry[1]
        pub = self._key(env)
        if pub is None and env.format >= 2 and self.refresh_trust is not None:
            self.refresh_trust()  # another process may have rotated the key
            pub = self._key(env)
        where = _where(stored)  # only on the full check: a cached row needs no name
        if pub is None:
            raise TamperDetected(f"{where}: signed with unknown key {env.kid!r}")
        try:
            h = envelope.check(
                pub,
                stored.originator_id,
                stored.originator_version,
                stored.topic,
                env,
                self.log_id,
                self._batches,
            )
        except envelope.InvalidSignature:
            raise TamperDetected(f"{where}: signature does not verify") from None
        except envelope.EnvelopeError as e:
            raise TamperDetected(f"{where}: {e}") from None
        self.remember(stored.originator_id, stored.originator_version, stored.state, h)
        return plain, env, h

    def _key(self, env: envelope.Envelope) -> Any:
        if env.format == 1:
            keys = self.keyring.public_keys if self.legacy_keys is None else self.legacy_keys
            return keys.get(env.kid)
        if self.trusted_keys is None or self.log_id is None:
            return None
        return self.trusted_keys.get(env.kid)

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEventProtocol[UUID]:
        plain, _, _ = self.open(stored_event)
        return super().to_domain_event(plain)


class SigningEventStore(EventStore[UUID]):
    """Seals events on ``put``; ``get`` verifies every signature and the hash chain."""

    mapper: VerifyingMapper
    sign_each_event = False
    """Seal every event format 2 (a signature each), as servers before format 3 did."""
    batch_leaves = 256
    """The most events one signature covers: a row's path is at most log2 of it hashes
    (8 here: 265 bytes a row), a signature (28 us here) is shared by up to 256 events
    and a verification (92 us) by up to 256 rows. A save of more events is signed in
    runs of this many. Each signature hands the GIL away (``cryptography`` signs without
    it), and getting it back costs up to the switch interval (5 ms) while the event loop
    runs: 16 a run made a 10,000-seat settlement's 1,900 signatures its largest wait
    (docs/performance/request-path.md, "The GIL's hand-offs")."""

    def __init__(self, mapper: VerifyingMapper, recorder: AggregateRecorder) -> None:
        super().__init__(mapper, recorder)
        self.written: Written | None = None
        """Set by the sealer: every committed row's id and event hash, noted for the
        next checkpoint (:mod:`ledger.written`)."""

    def _hash_at(self, originator_id: UUID | str, version: int) -> bytes:
        """The event hash of one version: cached by version (the repository's cached copy
        of an aggregate lags its own saves, so reads ask for the hash one version back),
        else read and verified."""
        if version == 0:
            return envelope.GENESIS
        known = self.mapper.known_hash(originator_id, version)
        if known is not None:
            return known
        rows = list(
            self.recorder.select_events(originator_id, gt=version - 1, lte=version, limit=1)
        )
        if not rows or rows[0].originator_version != version:
            raise TamperDetected(f"event {originator_id} v{version} is missing")
        return self.mapper.open(rows[0])[2]

    def _summarised(
        self, batch: dict[UUID | str, tuple[int, bytes]], oid: UUID | str, version: int
    ) -> bytes:
        sealed = batch.get(oid)
        if sealed is not None and sealed[0] == version:
            return sealed[1]
        return self._hash_at(oid, version)

    def _seal(
        self,
        domain_events: Sequence[DomainEventProtocol[UUID]],
        key: Any,
        kid: str,
        log_id: bytes,
    ) -> tuple[list[StoredEvent], list[bytes], dict[UUID | str, tuple[int, bytes]]]:
        """The stored rows of a save, their event hashes and each aggregate's newest
        (version, event hash) in it. Format 3 (one signature over the Merkle root of each
        run of :attr:`batch_leaves` events, :func:`ledger.envelope.seal_batch`), but for
        the key history's rows, which stay format 2 (each signed alone: ``ledger.trust``),
        and for every row when :attr:`sign_each_event` is set."""
        plains = [self.mapper.to_stored_event(event) for event in domain_events]
        hashes: list[bytes] = []
        batch: dict[UUID | str, tuple[int, bytes]] = {}
        unsealed: list[envelope.Unsealed] = []
        alone: dict[int, bytes] = {}
        for i, plain in enumerate(plains):
            oid, version = plain.originator_id, plain.originator_version
            prior = batch.get(oid)
            if prior is not None and prior[0] == version - 1:
                prev = prior[1]
            else:
                prev = self._hash_at(oid, version - 1)
            if self.sign_each_event or plain.topic in envelope.TRUST_TOPICS:
                alone[i], h = envelope.seal(
                    key, kid, oid, version, plain.topic, plain.state, prev, log_id
                )
            else:
                topic, payload = plain.topic, plain.state
                h = envelope.event_hash_v3(oid, version, topic, payload, prev, kid, log_id)
                unsealed.append(envelope.Unsealed(oid, version, topic, payload, prev))
            batch[oid] = (version, h)
            hashes.append(h)
        chained = [h for i, h in enumerate(hashes) if i not in alone]
        per = self.batch_leaves
        sealed = iter(
            [
                row
                for at in range(0, len(unsealed), per)
                for row in envelope.seal_batch(
                    key, kid, unsealed[at : at + per], log_id, chained[at : at + per]
                )
            ]
        )
        stored = [
            StoredEvent(
                p.originator_id,
                p.originator_version,
                p.topic,
                alone[i] if i in alone else next(sealed)[0],
            )
            for i, p in enumerate(plains)
        ]
        return stored, hashes, batch

    def put(
        self, domain_events: Sequence[DomainEventProtocol[UUID]], **kwargs: Any
    ) -> list[Recording[UUID]]:
        """Seal and insert the events; ``snapshots=`` (plain stored snapshots of
        aggregates in this save) are sealed and inserted in the same transaction."""
        key, kid = self.mapper.signer or (
            self.mapper.keyring.signing_key,
            self.mapper.keyring.signing_kid,
        )
        log_id = self.mapper.log_id
        if log_id is None:
            raise TamperDetected("the log has no genesis event: refusing to write")
        snapshots: Sequence[StoredEvent] = kwargs.pop("snapshots", None) or ()
        stored, hashes, batch = self._seal(domain_events, key, kid, log_id)
        if snapshots:
            # Snapshots (``ledger.snapshots``) of aggregates in this save, sealed against
            # the event hash they summarise and written in the events' transaction.
            kwargs["snapshots"] = [
                StoredEvent(
                    snap.originator_id,
                    snap.originator_version,
                    snap.topic,
                    envelope.seal_snapshot(
                        key,
                        kid,
                        snap.originator_id,
                        snap.originator_version,
                        snap.topic,
                        snap.state,
                        self._summarised(batch, snap.originator_id, snap.originator_version),
                        log_id,
                    ),
                )
                for snap in snapshots
            ]
        if getattr(self.recorder, "observer", None) is not None:
            kwargs["events"] = domain_events  # the read side folds them as they are
        ids = self.recorder.insert_events(stored, **kwargs)
        self.mapper.remember_all(stored, hashes)
        if ids and self.written is not None:  # committed: the sealer need not read them
            self.written.add(ids, hashes, kid, [s_ev.topic for s_ev in stored])
        recordings: list[Recording[UUID]] = []
        if ids:
            for d, s, n in zip(domain_events, stored, ids, strict=True):
                recordings.append(
                    Recording(
                        d, Notification(s.originator_id, s.originator_version, s.topic, s.state, n)
                    )
                )
        return recordings

    def get(
        self,
        originator_id: UUID,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Iterator[DomainEventProtocol[UUID]]:
        rows = list(
            self.recorder.select_events(originator_id, gt=gt, lte=lte, desc=desc, limit=limit)
        )
        if desc:
            rows.reverse()
        events = self._verified(originator_id, gt, rows, check_first=not desc)
        if desc:
            events.reverse()
        return iter(events)

    def newer(self, versions: Sequence[tuple[UUID, int]]) -> dict[UUID, list[Any]]:
        """The events after each aggregate's given version, verified as :meth:`get`
        verifies them (signatures, the hash chain from that version, no version missing),
        for many aggregates in a few queries (the recorder's ``select_newer``); an
        aggregate with nothing newer is left out."""
        by_id: dict[UUID, list[StoredEvent]] = {}
        for row in self.recorder.select_newer(versions):  # type: ignore[attr-defined]
            by_id.setdefault(UUID(str(row.originator_id)), []).append(row)
        after = dict(versions)
        return {
            oid: self._verified(oid, after[oid], rows, check_first=True)
            for oid, rows in by_id.items()
            if oid in after
        }

    def _verified(
        self, originator_id: UUID, gt: int | None, rows: list[StoredEvent], check_first: bool
    ) -> list[Any]:
        """``rows`` (one aggregate's, in version order, after ``gt``) as domain events,
        each signature and hash link checked."""
        events: list[Any] = []
        if rows:
            first = rows[0].originator_version
            if check_first and first != (gt or 0) + 1:
                raise TamperDetected(
                    f"aggregate {originator_id}: expected v{(gt or 0) + 1}, found v{first}"
                )
            prev = self._hash_at(originator_id, first - 1)
            expected = first
            for row in rows:
                plain, env, h = self.mapper.open(row)
                if row.originator_version != expected:
                    raise TamperDetected(f"aggregate {originator_id}: version v{expected} missing")
                if env.prev_hash != prev:
                    raise TamperDetected(
                        f"event {originator_id} v{expected}: previous-event hash does not link"
                    )
                events.append(Mapper.to_domain_event(self.mapper, plain))
                prev, expected = h, expected + 1
        return events


def _where(stored: StoredEvent) -> str:
    return f"event {stored.originator_id} v{stored.originator_version}"


@lru_cache(maxsize=65_536)
def canonical_sqlite_id(originator_id: str) -> UUID:
    """Only the library's own spelling (32 lower-case hex digits): the signature covers
    the UUID's bytes, so an upper-case copy of an aggregate's rows would otherwise verify
    as a second aggregate and be checkpointed by the sealer. Remembered for the ids read
    most recently (every read of a row builds its id: a round's rows share one, and the
    sealer reads every row again); a refused id is refused again each time."""
    if (
        type(originator_id) is not str
        or len(originator_id) != 32
        or not _HEX.issuperset(originator_id)
    ):
        raise TamperDetected(f"a row has a non-canonical originator id {originator_id!r}")
    return UUID(originator_id)


F = TypeVar("F", bound=Callable[..., Any])


class InsertObserver(Protocol):
    """Sees every insert of events inside its transaction (the read side folds a commit's
    own events into its views there: :mod:`ledger.readside.commits`)."""

    def before_insert(self, c: Any) -> None:
        """Inside the transaction, after PostgreSQL's insert lock, before the insert."""

    def inserted(
        self,
        c: Any,
        stored: Sequence[StoredEvent],
        ids: Sequence[int],
        events: Sequence[Any] | None = None,
    ) -> None:
        """Inside the transaction, the events inserted with their notification ids and,
        when the event store inserts them, the domain events they were made from (one
        each, in order; None when the rows were inserted without them)."""

    def ended(self, committed: bool) -> None:
        """After the transaction, committed or not (called for every insert)."""


def observed(method: F) -> F:
    """A recorder's ``insert_events`` that tells its ``observer`` how the transaction
    ended (an insert refused at a version conflict included)."""

    @wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        observer: InsertObserver | None = self.observer
        if observer is None:
            return method(self, *args, **kwargs)
        try:
            ids = method(self, *args, **kwargs)
        except BaseException:
            observer.ended(False)
            raise
        observer.ended(True)
        return ids

    return call  # type: ignore[return-value]


STATEMENT_CACHE = 256
"""Compiled statements each SQLite connection keeps (Python's default is 128)."""


class CachingSQLitePool(SQLiteConnectionPool):
    """The library's SQLite connections, keeping their compiled statements.

    eventsourcing 9.5.6 opens them with ``cached_statements=True``, which ``sqlite3``
    reads as a cache of one statement: every statement but a repeat of the one just run
    was compiled again on each execution (30 to 100 us each for the read side's upserts
    on this machine; a command runs a dozen distinct statements). This is the library's
    ``_create_connection`` with a cache of :data:`STATEMENT_CACHE`."""

    def _create_connection(self) -> SQLiteConnection:
        try:
            c = sqlite3.connect(
                database=self.db_name,
                uri=True,
                check_same_thread=False,
                isolation_level=None,  # auto-commit: the library issues BEGIN itself
                cached_statements=STATEMENT_CACHE,
                timeout=self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT,
            )
        except (sqlite3.Error, TypeError) as e:
            raise InterfaceError(e) from e
        if not self.is_sqlite_memory_mode and not self.is_journal_mode_wal:
            cursor = c.cursor()
            cursor.execute("PRAGMA journal_mode;")
            if cursor.fetchone()[0].lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL;")
                self.journal_mode_was_changed_to_wal = True
            self.is_journal_mode_wal = True
        c.row_factory = sqlite3.Row
        return SQLiteConnection(sqlite_conn=c, max_age=self.max_age)


def cache_statements(datastore: SQLiteDatastore) -> None:
    """The datastore's new connections made by :class:`CachingSQLitePool` (a class of
    the same state: the pool's connections made before keep theirs)."""
    if type(datastore.pool) is SQLiteConnectionPool:
        datastore.pool.__class__ = CachingSQLitePool


class AppendOnlySQLiteRecorder(SQLiteApplicationRecorder):
    observer: InsertObserver | None = None

    def __init__(self, datastore: SQLiteDatastore, events_table_name: str = "stored_events"):
        cache_statements(datastore)
        super().__init__(datastore, events_table_name)
        self._insert_head = f"INSERT INTO {self.events_table_name}"
        self._insert_texts: dict[int, str] = {}

    @observed
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        return super().insert_events(stored_events, **kwargs)

    def convert_originator_id(self, originator_id: str) -> UUID | str:
        return canonical_sqlite_id(originator_id)

    def _insert_events(
        self, c: Any, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        snapshots = kwargs.pop("snapshots", None)
        events = kwargs.pop("events", None)
        # The library's loop runs one statement an event; a few multi-row ones hand the
        # GIL away a few times a save instead of once an event (ledger.sqlite_rows).
        ids = sqlite_rows.insert(
            c,
            self._insert_head,
            4,
            [
                (
                    s.originator_id.hex if isinstance(s.originator_id, UUID) else s.originator_id,
                    s.originator_version,
                    s.topic,
                    s.state,
                )
                for s in stored_events
            ],
            texts=self._insert_texts,
        )
        if snapshots:
            c.executemany(
                f"INSERT INTO {SQLITE_SNAPSHOTS} VALUES (?,?,?,?)",
                [
                    (UUID(str(s.originator_id)).hex, s.originator_version, s.topic, s.state)
                    for s in snapshots
                ],
            )
        if self.observer is not None and ids:
            self.observer.before_insert(c)  # the write lock is taken: nothing comes between
            self.observer.inserted(c, stored_events, ids, events)
        return ids

    def select_newer(self, versions: Sequence[tuple[UUID, int]]) -> list[StoredEvent]:
        """Every event of each aggregate after the version given, by aggregate then
        version: one query per :data:`NEWER_CHUNK` aggregates, where ``select_events``
        takes one each."""
        t = self.events_table_name
        out: list[StoredEvent] = []
        for i in range(0, len(versions), NEWER_CHUNK):
            chunk = versions[i : i + NEWER_CHUNK]
            values = ",".join(["(?,?)"] * len(chunk))
            statement = (
                f"WITH v(id, ver) AS (VALUES {values}) SELECT e.originator_id, "
                f"e.originator_version, e.topic, e.state FROM v JOIN {t} e "
                "ON e.originator_id = v.id AND e.originator_version > v.ver "
                "ORDER BY e.originator_id, e.originator_version"
            )
            params = [x for aid, ver in chunk for x in (aid.hex, ver)]
            with self.datastore.transaction(commit=False) as c:
                c.execute(statement, params)
                out.extend(
                    StoredEvent(
                        originator_id=self.convert_originator_id(row["originator_id"]),
                        originator_version=row["originator_version"],
                        topic=row["topic"],
                        state=row["state"],
                    )
                    for row in c.fetchall()
                )
        return out

    def any_newer(self, versions: Sequence[tuple[UUID, int]]) -> bool:
        """Whether any of the aggregates has an event after the version given: one query
        per :data:`NEWER_CHUNK` aggregates (the primary key answers each pair), where
        ``select_events`` would take one per aggregate."""
        t = self.events_table_name
        for i in range(0, len(versions), NEWER_CHUNK):
            chunk = versions[i : i + NEWER_CHUNK]
            values = ",".join(["(?,?)"] * len(chunk))
            statement = (
                f"WITH v(id, ver) AS (VALUES {values}) SELECT 1 FROM v JOIN {t} e "
                "ON e.originator_id = v.id AND e.originator_version > v.ver LIMIT 1"
            )
            params = [x for aid, ver in chunk for x in (aid.hex, ver)]
            with self.datastore.transaction(commit=False) as c:
                c.execute(statement, params)
                if c.fetchall():
                    return True
        return False

    def select_ids(self, after: int, limit: int) -> list[int]:
        """The notification ids after ``after``, in order, at most ``limit`` (the sealer
        reads these, and only the rows it was not handed: :mod:`ledger.written`)."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(
                f"SELECT rowid FROM {self.events_table_name} WHERE rowid > ? "
                "ORDER BY rowid LIMIT ?",
                (after, limit),
            )
            return [row[0] for row in c.fetchall()]

    def select_originators(self, topic: str, after: int) -> list[UUID | str]:
        """The originator of each event of ``topic`` after notification id ``after``, in
        log order: the ids alone, where ``select_notifications`` reads each whole row."""
        with self.datastore.transaction(commit=False) as c:
            c.execute(
                f"SELECT originator_id FROM {self.events_table_name} "
                "WHERE rowid > ? AND topic = ? ORDER BY rowid",
                (after, topic),
            )
            return [self.convert_originator_id(row[0]) for row in c.fetchall()]

    def construct_create_table_statements(self) -> list[str]:
        t = self.events_table_name
        return [
            *super().construct_create_table_statements(),
            f"CREATE TRIGGER IF NOT EXISTS {t}_no_update BEFORE UPDATE ON {t} "
            f"BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END",
            f"CREATE TRIGGER IF NOT EXISTS {t}_no_delete BEFORE DELETE ON {t} "
            f"BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END",
        ]


def postgres_snapshots(events_table_name: str) -> str:
    """The snapshot table beside an event table (``casino_events``: ``casino_snapshots``)."""
    return events_table_name.removesuffix("_events") + "_snapshots"


MAX_WAITING = 256
"""Callers queued for a pooled connection at most; the next is refused at once (503)."""


def _no_connection(e: BaseException) -> bool:
    """Whether ``e`` says no connection could be had at all (the pool waited its timeout
    or its queue was full), as opposed to a connection that broke under a query."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, PoolTimeout | TooManyRequests):
            return True
        seen = seen.__cause__
    return False


def once_more(method: F) -> F:
    """The library's recorder method without its retries (ten attempts 0.2 s apart, each
    waiting up to the pool's timeout for a connection: minutes before a caller hears of
    a dead server), with one retry instead, and only when a pooled connection broke under
    the query (the server restarted since it was opened): a second attempt takes a fresh
    one. When no connection can be had, the error goes up at once: the caller answers
    503 ``storage-unavailable`` within the pool's timeout (:func:`bound_waits`)."""
    inner: Callable[..., Any] = getattr(method, "__wrapped__", method)

    @wraps(inner)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return inner(self, *args, **kwargs)
        except (InterfaceError, OperationalError, PgInterfaceError, PgOperationalError) as e:
            if _no_connection(e):
                raise
            return inner(self, *args, **kwargs)

    return call  # type: ignore[return-value]


def bound_waits(datastore: object, seconds: float) -> None:
    """A PostgreSQL store's waits bounded by ``seconds``: for a pooled connection (the
    pool's timeout; the library reads it as whole seconds) and, for the pool's own
    attempts to reconnect, libpq's ``connect_timeout`` (whole seconds, at least 2)."""
    if not isinstance(datastore, PostgresDatastore):
        return
    pool = datastore.pool
    pool.timeout = seconds
    pool.max_waiting = MAX_WAITING
    if isinstance(pool.kwargs, dict):
        pool.kwargs["connect_timeout"] = max(2, math.ceil(seconds))


class BoundedPostgresRecorder(PostgresAggregateRecorder):
    """The aggregate recorder's reads and writes with :func:`once_more`."""

    insert_events = once_more(PostgresAggregateRecorder.insert_events)
    select_events = once_more(PostgresAggregateRecorder.select_events)


class AppendOnlyPostgresRecorder(PostgresApplicationRecorder):
    """Also serialises schema creation: processes starting at the same moment would
    otherwise deadlock on CREATE OR REPLACE of the trigger function and triggers. Every
    read and write is retried at most once (:func:`once_more`)."""

    observer: InsertObserver | None = None
    insert_events = observed(once_more(PostgresApplicationRecorder.insert_events))
    select_events = once_more(PostgresApplicationRecorder.select_events)
    max_notification_id = once_more(PostgresApplicationRecorder.max_notification_id)

    def _select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """The library's ``select_notifications`` (9.5.6), its rows read as tuples and in
        binary: the library reads them in text (a state's bytes spelled in hex, then
        decoded by the client), each as a dict (psycopg's ``dict_row``), and builds each
        notification by keyword in a Python loop. The sealer and the read side's runner
        read every row of the log this way; a page of 2,000 rows of 800 bytes takes
        13.5-14.2 ms the library's way and 5.2-5.4 ms this way here (0.38-0.39; medians
        of 30, three runs of ``bench/bench_notifications.py``, recorded). The statement
        is the library's, composed once per shape."""
        shape = (start is not None, inclusive_of_start, stop is not None, bool(topics))
        statement = self._notifications_statements.get(shape)
        if statement is None:
            statement = self._notifications_statement(*shape)
            self._notifications_statements[shape] = statement
        params: list[Any] = []
        if start is not None:
            params.append(start)
        if stop is not None:
            params.append(stop)
        if topics:
            params.append(list(topics))
        params.append(limit)
        with (
            self.datastore.get_connection() as conn,
            conn.cursor(row_factory=tuple_row, binary=True) as c,
        ):
            c.execute(statement, params, prepare=True)
            return list(starmap(Notification, c.fetchall()))

    select_notifications = once_more(_select_notifications)

    @once_more
    def select_originators(self, topic: str, after: int) -> list[UUID | str]:
        """The originator of each event of ``topic`` after notification id ``after``, in
        log order: the ids alone (16 bytes a row, in binary), where
        ``select_notifications`` reads each whole row. The table's runner lists a round's
        seats so at its deal and its windows: 10,000 openings read whole were hundreds of
        reads of the socket, each handing the GIL away (docs/performance/request-path.md)."""
        statement = SQL(
            "SELECT originator_id FROM {schema}.{table} WHERE notification_id > %s "
            "AND topic = %s ORDER BY notification_id"
        ).format(schema=Identifier(self.datastore.schema), table=Identifier(self.events_table_name))
        with (
            self.datastore.get_connection() as conn,
            conn.cursor(row_factory=tuple_row, binary=True) as c,
        ):
            c.execute(statement, (after, topic), prepare=True)
            return [row[0] for row in c.fetchall()]

    @once_more
    def select_ids(self, after: int, limit: int) -> list[int]:
        """The notification ids after ``after``, in order, at most ``limit`` (the sealer
        reads these, and only the rows it was not handed: :mod:`ledger.written`)."""
        statement = SQL(
            "SELECT notification_id FROM {schema}.{table} WHERE notification_id > %s "
            "ORDER BY notification_id LIMIT %s"
        ).format(schema=Identifier(self.datastore.schema), table=Identifier(self.events_table_name))
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as c:
            c.execute(statement, (after, limit), prepare=True)
            return [row[0] for row in c.fetchall()]

    @cached_property
    def _notifications_statements(self) -> dict[tuple[bool, ...], Composed]:
        return {}

    def _notifications_statement(
        self, start: bool, inclusive: bool, stop: bool, topics: bool
    ) -> Composed:
        """The text of the library's query for one shape: its columns in the order of
        :class:`Notification`'s fields (``id`` last), so a row is its arguments."""
        where = []
        if start:
            where.append(SQL("notification_id>=%s" if inclusive else "notification_id>%s"))
        if stop:
            where.append(SQL("notification_id <= %s"))
        if topics:
            where.append(SQL("topic = ANY(%s)"))
        statement = SQL(
            "SELECT originator_id, originator_version, topic, state, notification_id "
            "FROM {schema}.{table}"
        ).format(schema=Identifier(self.datastore.schema), table=Identifier(self.events_table_name))
        if where:
            statement += SQL(" WHERE ") + SQL(" AND ").join(where)
        statement += SQL(" ORDER BY notification_id LIMIT %s")
        return statement

    def _insert_stored_events(
        self, curs: Any, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        snapshots = kwargs.pop("snapshots", None)
        # The library's PostgresApplicationRecorder._insert_stored_events (9.5.6): the
        # insert lock, the NOTIFY, then the insert; the insert passes four plain arrays
        # where the library passes one array of composite values (formatted in Python:
        # ~20 us more an event, 11 % of a JB round's CPU). The arrays go in binary (%b):
        # in text, psycopg frames an array in Python and quotes each element by regular
        # expression, and a state's bytes are spelled as hex and escaped (16 us an event
        # of 800 bytes here, against 0.7 us in binary; PostgreSQL parses the text too).
        self._lock_table(curs)
        self._notify_channel(curs)
        # the sessions this process notifies from: its own listener skips their
        # notifications (it wakes on its own commits already; ledger.commit_listener)
        self.own_backends.add(curs.connection.info.backend_pid)
        if self.observer is not None:
            self.observer.before_insert(curs.connection.cursor())  # the insert lock is queued
        curs.execute(
            self._insert_columns_statement,
            (
                [e.originator_id for e in stored_events],
                [e.originator_version for e in stored_events],
                [e.topic for e in stored_events],
                [e.state for e in stored_events],
            ),
            prepare=True,
        )
        if snapshots:
            # In the events' transaction, after the table lock (so two writers never wait
            # on each other's snapshot rows), on another cursor: ``curs`` still has to
            # return the events' notification ids.
            with curs.connection.cursor() as other:
                other.executemany(
                    self.insert_snapshot_statement,
                    [(s.originator_id, s.originator_version, s.topic, s.state) for s in snapshots],
                )

    def _fetch_ids_after_insert_events(
        self, curs: Any, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        if self.observer is not None and ids:
            events = kwargs.get("events")
            self.observer.inserted(curs.connection.cursor(), stored_events, ids, events)
        return ids

    def create_table(self) -> None:
        # The library creates composite types in their own transactions before the tables;
        # a session-level lock on a separate connection covers all of it.
        with self.datastore.get_connection() as conn:
            conn.execute(SQL("SELECT pg_advisory_lock(hashtext('croupier-create-schema'))"))
            try:
                super().create_table()
            finally:
                conn.execute(SQL("SELECT pg_advisory_unlock(hashtext('croupier-create-schema'))"))

    @once_more
    def select_newer(self, versions: Sequence[tuple[UUID, int]]) -> list[StoredEvent]:
        """Every event of each aggregate after the version given, by aggregate then
        version: one query per :data:`NEWER_CHUNK` aggregates, where ``select_events``
        takes one each (each aggregate probed through the primary key, as below)."""
        return [
            StoredEvent(
                originator_id=row["originator_id"],
                originator_version=row["originator_version"],
                topic=row["topic"],
                state=bytes(row["state"]),
            )
            for rows in self._by_chunk(self._select_newer_statement, versions)
            for row in rows
        ]

    @once_more
    def any_newer(self, versions: Sequence[tuple[UUID, int]]) -> bool:
        """Whether any of the aggregates has an event after the version given: one query
        per :data:`NEWER_CHUNK` aggregates, where ``select_events`` takes one each."""
        return any(rows for rows in self._by_chunk(self._any_newer_statement, versions))

    def _by_chunk(self, statement: Any, versions: Sequence[tuple[UUID, int]]) -> Iterator[Any]:
        """``statement``'s rows for each :data:`NEWER_CHUNK` of (aggregate, version)
        pairs, one query each, as they are asked for."""
        for i in range(0, len(versions), NEWER_CHUNK):
            chunk = versions[i : i + NEWER_CHUNK]
            with self.datastore.get_connection() as conn, conn.cursor() as curs:
                curs.execute(
                    statement, ([aid for aid, _ in chunk], [ver for _, ver in chunk]), prepare=True
                )
                yield curs.fetchall()

    def __init__(self, datastore: PostgresDatastore, events_table_name: str = "stored_events"):
        super().__init__(datastore, events_table_name=events_table_name)
        # The library names the channel every insert notifies after the table alone, so
        # every schema of a database shares it: a listener (ledger.commit_listener) would
        # be woken by other schemas' commits. Ours names the schema too (at most the 63
        # bytes PostgreSQL keeps of an identifier).
        self.channel_name = f"{datastore.schema}_{self.channel_name}"[:63]
        self.own_backends: set[int] = set()
        """The backend pids of this process's connections that have inserted."""
        schema, table = Identifier(datastore.schema), Identifier(self.events_table_name)
        id_type = SQL(datastore.originator_id_type)  # "uuid" or "text", checked by the library
        self._insert_columns_statement = SQL(
            "INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state)"
            " SELECT * FROM unnest(%b::{id_type}[], %b::bigint[], %b::text[], %b::bytea[])"
            " RETURNING notification_id"
        ).format(id_type=id_type, schema=schema, table=table)
        # Each aggregate probed on its own through the primary key. As a join, the
        # planner took a long-lived aggregate's many versions for a match soon found and
        # answered by a sequential scan of the whole log (17 ms a call at 300,000 events;
        # a scan for each aggregate, with the probe alone). Asked in the key's order, the
        # first entry after the version is the only plan that does not read every row.
        self._any_newer_statement = SQL(
            "SELECT 1 FROM unnest(%b::{id_type}[], %b::bigint[]) AS v(id, ver)"
            " CROSS JOIN LATERAL (SELECT 1 FROM {schema}.{table} e"
            " WHERE e.originator_id = v.id AND e.originator_version > v.ver"
            " ORDER BY e.originator_version LIMIT 1) AS newer LIMIT 1"
        ).format(id_type=id_type, schema=schema, table=table)
        self._select_newer_statement = SQL(
            "SELECT e.originator_id, e.originator_version, e.topic, e.state"
            " FROM unnest(%b::{id_type}[], %b::bigint[]) AS v(id, ver)"
            " CROSS JOIN LATERAL (SELECT * FROM {schema}.{table} e"
            " WHERE e.originator_id = v.id AND e.originator_version > v.ver"
            " ORDER BY e.originator_version) AS e"
            " ORDER BY e.originator_id, e.originator_version"
        ).format(id_type=id_type, schema=schema, table=table)
        fn = Identifier("croupier_append_only")
        lock = Identifier(LOCK_FUNCTION)
        # The insert lock (EXCLUSIVE, which keeps notification ids in commit order) is
        # taken through a SECURITY DEFINER function of the table's owner: LOCK TABLE in
        # that mode needs UPDATE, DELETE or TRUNCATE, which the application role must not
        # have (`croupier db init` grants it only SELECT, INSERT and EXECUTE on this).
        self.insert_snapshot_statement = SQL(
            "INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state) "
            "VALUES (%s, %s, %s, %s)"
        ).format(schema=schema, table=Identifier(postgres_snapshots(self.events_table_name)))
        self.lock_table_statements = [
            self.lock_table_statements[0],  # SET LOCAL lock_timeout
            SQL("SELECT {schema}.{lock}()").format(schema=schema, lock=lock),
        ]
        self.sql_create_statements += [
            SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{lock}() RETURNS void LANGUAGE plpgsql "
                "SECURITY DEFINER SET search_path = pg_catalog AS "
                "$$ BEGIN LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE; END $$"
            ).format(schema=schema, lock=lock, table=table),
            SQL("REVOKE ALL ON FUNCTION {schema}.{lock}() FROM PUBLIC").format(
                schema=schema, lock=lock
            ),
            SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{fn}() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION '" + _APPEND_ONLY + " (% on %)', TG_OP, TG_TABLE_NAME "
                "USING ERRCODE = 'insufficient_privilege'; END $$"
            ).format(schema=schema, fn=fn),
            SQL(
                "CREATE OR REPLACE TRIGGER {trg} BEFORE UPDATE OR DELETE ON {schema}.{table} "
                "FOR EACH ROW EXECUTE FUNCTION {schema}.{fn}()"
            ).format(
                trg=Identifier(self.events_table_name + "_append_only"),
                schema=schema,
                table=table,
                fn=fn,
            ),
            SQL(
                "CREATE OR REPLACE TRIGGER {trg} BEFORE TRUNCATE ON {schema}.{table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION {schema}.{fn}()"
            ).format(
                trg=Identifier(self.events_table_name + "_no_truncate"),
                schema=schema,
                table=table,
                fn=fn,
            ),
        ]
