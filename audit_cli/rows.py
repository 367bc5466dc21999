"""Read raw event rows straight from SQLite or PostgreSQL, without the application.

``--db`` is a SQLite file path (or ``sqlite:///path``), or a ``postgresql://`` URL whose
optional ``?schema=NAME`` selects the schema (default ``public``); the table is
``stored_events`` on SQLite and ``casino_events`` on PostgreSQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlparse, urlunparse

PG_TABLE = "casino_events"
SQLITE_TABLE = "stored_events"


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
        with psycopg.connect(url) as conn:
            row = conn.execute(f"SELECT count(*) FROM {schema}.{PG_TABLE}").fetchone()
            return int(row[0]) if row else 0
    with sqlite3.connect(f"file:{_sqlite_path(db)}?mode=ro", uri=True) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {SQLITE_TABLE}").fetchone()[0])


def read_rows(db: str) -> Iterator[Row]:
    """Every event row in notification order."""
    if _is_pg(db):
        import psycopg

        url, schema = _pg(db)
        try:
            conn = psycopg.connect(url)
        except psycopg.Error as e:
            raise SourceError(f"cannot connect to PostgreSQL: {e}") from e
        with conn, conn.cursor(name="croupier_audit") as cur:
            cur.itersize = 5000
            cur.execute(
                "SELECT notification_id, originator_id::text, originator_version, topic, state "
                f"FROM {schema}.{PG_TABLE} ORDER BY notification_id"
            )
            for record in cur:
                yield _row(*record)
        return
    path = _sqlite_path(db)
    lite = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
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


def id_bounds(db: str) -> tuple[int, int]:
    """Smallest and largest notification id (0, -1 for an empty log)."""
    if _is_pg(db):
        import psycopg

        url, schema = _pg(db)
        with psycopg.connect(url) as conn:
            row = conn.execute(
                f"SELECT min(notification_id), max(notification_id) FROM {schema}.{PG_TABLE}"
            ).fetchone()
    else:
        with sqlite3.connect(f"file:{_sqlite_path(db)}?mode=ro", uri=True) as lite:
            row = lite.execute(f"SELECT min(rowid), max(rowid) FROM {SQLITE_TABLE}").fetchone()
    if row is None or row[0] is None:
        return 0, -1
    return int(row[0]), int(row[1])


_CONNECTIONS: dict[str, Any] = {}


def read_range(db: str, lo: int, hi: int) -> list[Row]:
    """Rows with notification id in [lo, hi], in order; one cached connection per process."""
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
        return [_row(*record) for record in cur]
    if conn is None:
        conn = _CONNECTIONS[db] = sqlite3.connect(f"file:{_sqlite_path(db)}?mode=ro", uri=True)
    cursor = conn.execute(
        "SELECT rowid, originator_id, originator_version, topic, state "
        f"FROM {SQLITE_TABLE} WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
        (lo, hi),
    )
    return [_row(*record) for record in cursor]


def _row(n: int, oid: Any, version: int, topic: str, state: Any) -> Row:
    """One row as both stores return it: ids canonical, state bytes (a tampered state of
    another type is passed through for the checks to flag)."""
    if isinstance(state, bytearray | memoryview):
        state = bytes(state)
    return Row(n, _canonical(str(oid)), version, topic, state)


def _canonical(oid: str) -> str:
    """The library stores UUIDs as 32 hex digits on SQLite: add the dashes (cheaper than
    parsing a UUID per row); anything else is returned as it is, for the checks to flag."""
    if len(oid) == 32:
        return f"{oid[:8]}-{oid[8:12]}-{oid[12:16]}-{oid[16:20]}-{oid[20:]}"
    return str(oid)


def read_aggregate(db: str, originator_id: str) -> list[Row]:
    """Every row of one aggregate (e.g. a round), in notification order, by its index."""
    oid = _canonical(originator_id.replace("-", ""))
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
                return [_row(*record) for record in cur]
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
