"""Read raw event rows straight from SQLite or PostgreSQL, without the application.

``--db`` is a SQLite file path (or ``sqlite:///path``), or a ``postgresql://`` URL whose
optional ``?schema=NAME`` selects the schema (default ``public``); the table is
``stored_events`` on SQLite and ``casino_events`` on PostgreSQL (snapshots:
``stored_snapshots`` and ``casino_snapshots``, absent when none was ever taken).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlparse, urlunparse
from uuid import UUID

from ledger import envelope

PG_TABLE = "casino_events"
SQLITE_TABLE = "stored_events"
PG_SNAPSHOTS = "casino_snapshots"
SQLITE_SNAPSHOTS = "stored_snapshots"
MAX_ROW_ID = envelope.MAX_ROW_ID
"""Row ids are assigned one after another: one beyond 2^48 is not a row this server wrote
(and spans of ids are never materialised, so a huge id costs nothing)."""
NON_CANONICAL = "non-canonical:"
"""Prefix of an originator id that is not in the store's canonical form (reported)."""
TRUST_TOPICS = (envelope.GENESIS_TOPIC, envelope.ROTATED_TOPIC)
"""The key history's rows: the genesis and each rotation."""
_HEX = frozenset("0123456789abcdef")


class Row(NamedTuple):
    notification_id: int
    originator_id: str
    version: int
    topic: str
    state: bytes


class SourceError(Exception):
    """The database cannot be opened or holds no croupier log."""


def _is_pg(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def is_sqlite(db: str) -> bool:
    return not _is_pg(db)


def _text(raw: bytes) -> str | bytes:
    """SQLite text as str, or the raw bytes when it is not UTF-8 (reported, not raised)."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw


def _lite(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = _text
    return conn


def _pg(db: str) -> tuple[str, str]:
    u = urlparse(db)
    schema = parse_qs(u.query).get("schema", ["public"])[0]
    if not schema.replace("_", "").isalnum():
        raise SourceError(f"bad schema name {schema!r}")
    return urlunparse(u._replace(query="")), schema


def _sqlite_path(db: str) -> Path:
    path = Path(db[len("sqlite:///") :] if db.startswith("sqlite:///") else db)
    if not path.exists():
        raise SourceError(f"no SQLite database at {path}")
    return path


def count_rows(db: str) -> int:
    if _is_pg(db):
        import psycopg

        url, schema = _pg(db)
        try:
            with psycopg.connect(url) as conn:
                row = conn.execute(f"SELECT count(*) FROM {schema}.{PG_TABLE}").fetchone()
                return int(row[0]) if row else 0
        except psycopg.Error as e:
            raise SourceError(_pg_problem(e, schema)) from e
    try:
        with _lite(_sqlite_path(db)) as conn:
            return int(conn.execute(f"SELECT count(*) FROM {SQLITE_TABLE}").fetchone()[0])
    except sqlite3.Error as e:
        raise SourceError(f"cannot read {db}: {e}") from e


def _pg_problem(e: Exception, schema: str) -> str:
    """One line for a PostgreSQL error: a schema without the log is named as such (a
    wrong ``?schema=`` or database is the usual cause), not shown as a traceback."""
    import psycopg

    if isinstance(e, psycopg.errors.UndefinedTable):
        return f"no croupier log in schema {schema!r} (no table {schema}.{PG_TABLE})"
    if isinstance(e, psycopg.OperationalError):
        return f"cannot connect to PostgreSQL: {e}"
    return f"cannot read the log: {str(e).splitlines()[0] if str(e) else e!r}"


def read_rows(db: str, *, skip_malformed: bool = False) -> Iterator[Row]:
    """Every event row in notification order; with ``skip_malformed`` (the reports: RTP,
    rounds, history) without rows whose ids are not canonical, which ``verify`` reports."""
    if skip_malformed:
        yield from (r for r in read_rows(db) if not r.originator_id.startswith(NON_CANONICAL))
        return
    if _is_pg(db):
        import psycopg

        url, schema = _pg(db)
        try:
            conn = psycopg.connect(url)
        except psycopg.Error as e:
            raise SourceError(f"cannot connect to PostgreSQL: {e}") from e
        try:
            with conn, conn.cursor(name="croupier_audit") as cur:
                cur.itersize = 5000
                cur.execute(
                    "SELECT notification_id, originator_id::text, originator_version, topic, "
                    f"state FROM {schema}.{PG_TABLE} ORDER BY notification_id"
                )
                for record in cur:
                    yield _pg_row(*record)
        except psycopg.Error as e:
            raise SourceError(_pg_problem(e, schema)) from e
        return
    path = _sqlite_path(db)
    lite = _lite(path)
    try:
        lite_cur = lite.execute(
            "SELECT rowid, originator_id, originator_version, topic, state "
            f"FROM {SQLITE_TABLE} ORDER BY rowid"
        )
        for record in lite_cur:
            yield _row(*record)
    except sqlite3.Error as e:
        raise SourceError(f"cannot read {path}: {e}") from e
    finally:
        lite.close()


def chunk_bounds(db: str, size: int) -> Iterator[tuple[int, int]]:
    """(first id, last id) of consecutive runs of ``size`` rows, from the ids that exist
    (never from the span of ids: one row with a huge id must not cost memory). The
    database groups the ids (one pass in C: numbering them in Python was the serial
    start of ``verify``, 0.25 s for 200,000 rows)."""
    if type(size) is not int or size < 1:
        raise ValueError(f"chunk size {size!r} is not a positive integer")
    if _is_pg(db):
        import psycopg

        url, schema = _pg(db)
        try:
            with psycopg.connect(url) as conn:
                cur = conn.execute(
                    "SELECT min(notification_id), max(notification_id) FROM (SELECT "
                    "notification_id, (row_number() OVER (ORDER BY notification_id) - 1) / %s "
                    f"AS c FROM {schema}.{PG_TABLE}) s GROUP BY c ORDER BY c",
                    (size,),
                )
                yield from ((int(lo), int(hi)) for lo, hi in cur)
        except psycopg.Error as e:
            raise SourceError(_pg_problem(e, schema)) from e
        return
    with _lite(_sqlite_path(db)) as lite:
        runs = lite.execute(
            "SELECT min(rowid), max(rowid) FROM (SELECT rowid, "
            f"(row_number() OVER (ORDER BY rowid) - 1) / ? AS c FROM {SQLITE_TABLE}) "
            "GROUP BY c ORDER BY c",
            (size,),
        )
        yield from ((int(lo), int(hi)) for lo, hi in runs)


def read_trust_rows(db: str) -> list[Row]:
    """The key-history rows (genesis, rotations), in order: few, read before the rest."""
    return read_topic_rows(db, TRUST_TOPICS)


def read_topic_rows(db: str, topics: Sequence[str]) -> list[Row]:
    """Every row with one of these topics, in log order."""
    if _is_pg(db):
        import psycopg

        url, schema = _pg(db)
        try:
            with psycopg.connect(url) as conn:
                cur = conn.execute(
                    "SELECT notification_id, originator_id::text, originator_version, topic, "
                    f"state FROM {schema}.{PG_TABLE} WHERE topic = ANY(%s) "
                    "ORDER BY notification_id",
                    (list(topics),),
                )
                return [_pg_row(*r) for r in cur]
        except psycopg.Error as e:
            raise SourceError(f"cannot read the log: {e}") from e
    marks = ", ".join("?" for _ in topics)
    try:
        with _lite(_sqlite_path(db)) as lite:
            found = lite.execute(
                "SELECT rowid, originator_id, originator_version, topic, state "
                f"FROM {SQLITE_TABLE} WHERE topic IN ({marks}) ORDER BY rowid",
                tuple(topics),
            )
            return [_row(*r) for r in found]
    except sqlite3.Error as e:
        raise SourceError(f"cannot read {db}: {e}") from e


_CONNECTIONS: dict[str, Any] = {}


def read_range(db: str, lo: int, hi: int, *, cached: bool = True) -> list[Row]:
    """Rows with notification id in [lo, hi], in order; one cached connection per process
    (``cached=False``: a connection of its own, closed after, e.g. in a process that
    forks workers later, which must not inherit it)."""
    if not cached:
        rows = read_range(db, lo, hi)
        close_connection(db)
        return rows
    conn = _CONNECTIONS.get(db)
    if _is_pg(db):
        import psycopg

        url, schema = _pg(db)
        if conn is None:
            conn = _CONNECTIONS[db] = psycopg.connect(url, autocommit=True)
        cur = conn.execute(
            "SELECT notification_id, originator_id::text, originator_version, topic, state "
            f"FROM {schema}.{PG_TABLE} WHERE notification_id BETWEEN %s AND %s "
            "ORDER BY notification_id",
            (lo, hi),
        )
        return _rows(cur, True)
    if conn is None:
        conn = _CONNECTIONS[db] = _lite(_sqlite_path(db))
    cursor = conn.execute(
        "SELECT rowid, originator_id, originator_version, topic, state "
        f"FROM {SQLITE_TABLE} WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
        (lo, hi),
    )
    return _rows(cursor, False)


_new_row = tuple.__new__


def _rows(records: Iterator[Any], pg: bool) -> list[Row]:
    """``_row`` of each record, its common case inline (verify reads every row: the
    calls were about a third of the reading)."""
    out: list[Row] = []
    append = out.append
    hexdigits = _HEX
    for record in records:
        n, oid, version, topic, state = record
        if type(state) is not bytes:
            append(_row(n, oid, version, topic, state, pg))
        elif type(oid) is str and len(oid) == 32 and hexdigits.issuperset(oid):
            oid = f"{oid[:8]}-{oid[8:12]}-{oid[12:16]}-{oid[16:20]}-{oid[20:]}"
            append(_new_row(Row, (n, oid, version, topic, state)))
        else:
            append(_new_row(Row, (n, _canonical(oid, pg), version, topic, state)))
    return out


def close_connection(db: str) -> None:
    """Close this process's cached ``read_range`` connection to ``db`` (if any)."""
    conn = _CONNECTIONS.pop(db, None)
    if conn is not None:
        conn.close()


def _pg_row(n: int, oid: Any, version: int, topic: str, state: Any) -> Row:
    return _row(n, oid, version, topic, state, True)


def _row(n: int, oid: Any, version: int, topic: str, state: Any, pg: bool = False) -> Row:
    """One row as both stores return it: ids canonical, state bytes (a tampered state of
    another type is passed through for the checks to flag)."""
    if isinstance(state, bytearray | memoryview):
        state = bytes(state)
    return Row(n, _canonical(oid, pg), version, topic, state)


def _canonical(oid: Any, pg: bool = False) -> str:
    """The canonical text of an originator id: on SQLite the library stores 32 lower-case
    hex digits, on PostgreSQL a uuid (read as its lower-case hyphenated text). Anything
    else (upper case, other spellings, other types) is marked ``non-canonical:`` for the
    checks to report: the signature covers the UUID's bytes, so an upper-case copy of an
    aggregate would otherwise verify as a second aggregate."""
    if type(oid) is str:
        if len(oid) == 32 and _HEX.issuperset(oid):
            return f"{oid[:8]}-{oid[8:12]}-{oid[12:16]}-{oid[16:20]}-{oid[20:]}"
        if pg and len(oid) == 36:
            return oid  # PostgreSQL's uuid::text
    return NON_CANONICAL + repr(oid)[:80]


def read_aggregate(db: str, originator_id: str) -> list[Row]:
    """Every row of one aggregate (e.g. a round), in notification order, by its index."""
    oid = str(UUID(originator_id))  # canonical hyphenated text; ValueError if not a UUID
    if _is_pg(db):
        import psycopg

        url, schema = _pg(db)
        try:
            with psycopg.connect(url) as conn:
                cur = conn.execute(
                    "SELECT notification_id, originator_id::text, originator_version, topic, "
                    f"state FROM {schema}.{PG_TABLE} WHERE originator_id = %s "
                    "ORDER BY notification_id",
                    (oid,),
                )
                return [_row(n, o, v, t, st, pg=True) for n, o, v, t, st in cur]
        except psycopg.Error as e:
            raise SourceError(f"cannot read PostgreSQL: {e}") from e
    path = _sqlite_path(db)
    lite = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cursor = lite.execute(
            "SELECT rowid, originator_id, originator_version, topic, state "
            f"FROM {SQLITE_TABLE} WHERE originator_id = ? ORDER BY rowid",
            (oid.replace("-", ""),),
        )
        return [_row(*record) for record in cursor]
    except sqlite3.Error as e:
        raise SourceError(f"cannot read {path}: {e}") from e
    finally:
        lite.close()


def read_snapshot_rows(db: str) -> list[Row]:
    """Every stored snapshot (``notification_id`` 0: the snapshot table has no row ids),
    in the same canonical form as event rows; none when the table does not exist."""
    if _is_pg(db):
        import psycopg

        url, schema = _pg(db)
        try:
            with psycopg.connect(url) as conn:
                exists = conn.execute(
                    "SELECT to_regclass(%s)", (f"{schema}.{PG_SNAPSHOTS}",)
                ).fetchone()
                if not exists or exists[0] is None:
                    return []
                cur = conn.execute(
                    "SELECT 0, originator_id::text, originator_version, topic, state "
                    f"FROM {schema}.{PG_SNAPSHOTS} ORDER BY originator_id, originator_version"
                )
                return [_pg_row(*r) for r in cur]
        except psycopg.Error as e:
            raise SourceError(f"cannot read the snapshots: {e}") from e
    try:
        with _lite(_sqlite_path(db)) as lite:
            if not lite.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                (SQLITE_SNAPSHOTS,),
            ).fetchone():
                return []
            found = lite.execute(
                "SELECT 0, originator_id, originator_version, topic, state "
                f"FROM {SQLITE_SNAPSHOTS} ORDER BY originator_id, originator_version"
            )
            return [_row(*r) for r in found]
    except sqlite3.Error as e:
        raise SourceError(f"cannot read the snapshots of {db}: {e}") from e
