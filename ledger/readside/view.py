"""A projection's tables beside the event store, and its tracking record.

A view is the library's tracking recorder (``eventsourcing.sqlite.SQLiteTrackingRecorder``
or ``eventsourcing.postgres.PostgresTrackingRecorder``) on the application's own datastore
(the same database, the same connection pool), with the projection's tables added to the
tables it creates. Every batch the projection applies is one transaction that writes its
rows and the tracking record (the library's ``_insert_tracking``: it refuses a position
that does not advance), so a crash leaves either the whole batch or none of it, and no
event is applied twice.

The batch transaction first locks the projection's tracking row and checks it still holds
the position the batch was read from (another worker may have moved it, or a rebuild
reset it): a batch is applied only on top of exactly the rows it was computed against.

Rows are plain dicts of column -> int | str | None; every table has a ``position`` column:
the notification id of the last event that wrote the row.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from operator import itemgetter
from typing import Any, NamedTuple

import orjson
from eventsourcing.persistence import Tracking
from eventsourcing.postgres import PostgresDatastore, PostgresTrackingRecorder
from eventsourcing.sqlite import SQLiteDatastore, SQLiteTrackingRecorder
from psycopg.sql import SQL

from ledger import sqlite_rows

Row = dict[str, Any]
Key = tuple[Any, ...]

INT, TEXT = "int", "text"


@dataclass(frozen=True)
class Table:
    """One table of a view: ``columns`` as (name, INT or TEXT), ``key`` its primary key."""

    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    append_only: bool = False
    """Rows are only ever inserted (never read back by the projection): not cached."""
    indexes: tuple[tuple[str, ...], ...] = ()
    """Secondary indexes (the queries' orders)."""
    fixed: tuple[str, ...] = ()
    """Columns a row keeps from its first write on (the projection never changes them):
    an upsert does not set them again. Setting an indexed column rewrites its index
    entry even to the same value (SQLite: twice the time of the upsert; PostgreSQL: no
    HOT update)."""

    def __post_init__(self) -> None:
        unknown = set(self.fixed) - set(self.names)
        if unknown or set(self.fixed) & set(self.key):
            raise ValueError(f"fixed columns of {self.name}: {sorted(self.fixed)}")

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)

    @cached_property
    def values_of(self) -> Any:
        """A row's values in column order, as a tuple (``itemgetter``: the fold writes
        every row it changed through this)."""
        names = self.names
        return itemgetter(*names) if len(names) > 1 else lambda row: (row[names[0]],)

    @cached_property
    def _key_getter(self) -> Any:
        return itemgetter(*self.key)

    def key_of(self, row: Row) -> Key:
        key = self.key
        if len(key) == 1:  # most tables: no generator for one column (the fold's hot path)
            return (row[key[0]],)
        return self._key_getter(row)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Query:
    """A read of one view table: its columns, ``WHERE where`` (``?`` marks for
    ``params``), ``ORDER BY order``, ``LIMIT limit``."""

    table: Table
    where: str = ""
    params: tuple[Any, ...] = ()
    order: str = ""
    limit: int | None = None

    def tail(self) -> str:
        text = f" ORDER BY {self.order}" if self.order else ""
        return text if self.limit is None else f"{text} LIMIT {int(self.limit)}"


DELETE, UPSERT, INSERT = "delete", "upsert", "insert"


class Change(NamedTuple):
    """A batch's writes to one table: ``rows`` deleted (their keys), upserted or
    inserted."""

    table: Table
    kind: str
    rows: Sequence[Any]


class Moved(Exception):
    """The tracking row no longer holds the position a batch was read from."""


def _prefix(events_table: str) -> str:
    return events_table.removesuffix("_events")


class View:
    """The tables of one projection in the application's database, and its tracking row
    (named ``tracking_name`` in the tracking table)."""

    def __init__(
        self, datastore: Any, events_table: str, name: str, tables: Sequence[Table]
    ) -> None:
        self.name = name
        base = _prefix(events_table)
        self.tracking_name = f"{base}:{name}"
        self.tables = list(tables)
        self.table_names = {t.name: f"{base}_view_{name}_{t.name}" for t in tables}
        self.postgres = isinstance(datastore, PostgresDatastore)
        self.events_table = events_table
        if self.postgres:
            self.schema = datastore.schema
            self.tracking_table = f"{self.schema}.{base}_tracking"
            self.recorder: Any = PostgresTrackingRecorder(
                datastore, tracking_table_name=f"{base}_tracking"
            )
            self.table_names = {k: f"{self.schema}.{v}" for k, v in self.table_names.items()}
            self.events_table = f"{self.schema}.{events_table}"
        else:
            assert isinstance(datastore, SQLiteDatastore)
            self.tracking_table = "tracking"  # the library's name on SQLite
            self.recorder = SQLiteTrackingRecorder(datastore)
        self.datastore = datastore
        self._tables = {t.name: t for t in self.tables}
        self._statements: dict[tuple[str, bool], Any] = {}  # the writes, by table and kind
        self._together: dict[tuple[tuple[str, str, str], ...], Any] = {}  # by what they write

    # -- schema ------------------------------------------------------------------------

    def create_statements(self) -> list[str]:
        out = []
        for t in self.tables:
            cols = ", ".join(f"{c} {'BIGINT' if kind == INT else 'TEXT'}" for c, kind in t.columns)
            out.append(
                f"CREATE TABLE IF NOT EXISTS {self.table_names[t.name]} "
                f"({cols}, PRIMARY KEY ({', '.join(t.key)}))"
            )
            table = self.table_names[t.name]
            for columns in t.indexes:
                index = f"{table.rsplit('.', 1)[-1]}_by_{'_'.join(columns)}"
                out.append(f"CREATE INDEX IF NOT EXISTS {index} ON {table} ({', '.join(columns)})")
        return out

    def create_tables(self) -> None:
        """The library's tracking table, this view's tables, and its tracking row at 0."""
        self.recorder.create_table()
        with self.transaction() as c:
            # The write first: on SQLite a transaction that read before it writes cannot
            # wait for another process's write lock ("database is locked" at once when
            # several servers start together); writing first waits like any command.
            self.execute(
                c,
                f"INSERT INTO {self.tracking_table} (application_name, notification_id) "
                "VALUES (?, 0) ON CONFLICT (application_name) DO NOTHING",
                (self.tracking_name,),
            )
            for statement in self.create_statements():
                self.execute(c, statement)

    # -- SQL on either store -----------------------------------------------------------

    def sql(self, text: str) -> Any:
        return SQL(text.replace("?", "%s")) if self.postgres else text

    def execute(self, c: Any, text: str, params: Sequence[Any] = ()) -> None:
        c.execute(self.sql(text), tuple(params))

    def executemany(self, c: Any, text: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            c.executemany(self.sql(text), [tuple(r) for r in rows])

    @contextmanager
    def transaction(self, *, commit: bool = True) -> Iterator[Any]:
        with self.datastore.transaction(commit=commit) as c:
            yield c

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """A read transaction that sees one state of the database throughout (WAL
        snapshot on SQLite; REPEATABLE READ on PostgreSQL)."""
        with self.datastore.transaction(commit=False) as c:
            if self.postgres:
                c.execute(SQL("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
            yield c

    # -- tracking ----------------------------------------------------------------------

    def position(self, c: Any | None = None) -> int:
        """How far the view has read the log (0: nothing yet)."""
        if c is None:
            with self.transaction(commit=False) as c2:
                return self.position(c2)
        self.execute(
            c,
            f"SELECT notification_id FROM {self.tracking_table} WHERE application_name = ?",
            (self.tracking_name,),
        )
        row = c.fetchone()
        return 0 if row is None else int(row["notification_id"])

    def head_and_position(self) -> tuple[int, int]:
        """The log's newest notification id and this view's position, in one query."""
        newest = "MAX(notification_id)" if self.postgres else "MAX(rowid)"
        with self.transaction(commit=False) as c:
            self.execute(
                c,
                f"SELECT (SELECT {newest} FROM {self.events_table}) AS head, "
                f"(SELECT notification_id FROM {self.tracking_table} "
                "WHERE application_name = ?) AS position",
                (self.tracking_name,),
            )
            row = c.fetchone()
        return int(row["head"] or 0), int(row["position"] or 0)

    def positions(self, names: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The log's newest notification id and the positions of the views named (their
        tracking names), in one query."""
        newest = "MAX(notification_id)" if self.postgres else "MAX(rowid)"
        marks = ", ".join("?" for _ in names)
        with self.transaction(commit=False) as c:
            self.execute(
                c,
                f"SELECT application_name AS name, notification_id AS position, "
                f"(SELECT {newest} FROM {self.events_table}) AS head "
                f"FROM {self.tracking_table} WHERE application_name IN ({marks})",
                names,
            )
            rows = c.fetchall()
        head = int(rows[0]["head"] or 0) if rows else 0
        return head, {r["name"]: int(r["position"] or 0) for r in rows}

    def read(self, queries: Sequence[Query]) -> tuple[int, int, list[list[Row]]]:
        """The log's head, this view's position and each query's rows, read together.

        PostgreSQL: one statement, so one round trip and one snapshot: the position and
        the rows are those of the same moment (each query's rows aggregated as a JSON
        array in its ``ORDER BY``; a read of several statements, or in a BEGIN and
        ROLLBACK, took two to three times as long on a loaded machine). SQLite: one
        read transaction (one snapshot), the statements in process."""
        newest = "MAX(notification_id)" if self.postgres else "MAX(rowid)"
        head = (
            f"(SELECT {newest} FROM {self.events_table}) AS head, "
            f"(SELECT notification_id FROM {self.tracking_table} "
            "WHERE application_name = ?) AS position"
        )
        params: list[Any] = [self.tracking_name]
        selects = []
        for q in queries:
            where = f" WHERE {q.where}" if q.where else ""
            columns = ", ".join(q.table.names)
            selects.append(
                f"SELECT {columns} FROM {self.table_names[q.table.name]}{where}{q.tail()}"
            )
        if self.postgres:
            parts = [head]
            for n, (q, text) in enumerate(zip(queries, selects, strict=True)):
                order = f" ORDER BY {q.order}" if q.order else ""
                parts.append(f"(SELECT json_agg(q{order}) FROM ({text}) q) AS r{n}")
                params.extend(q.params)
            with self.datastore.get_connection() as conn, conn.cursor() as c:
                c.execute(self.sql(f"SELECT {', '.join(parts)}"), params, prepare=True)
                first = c.fetchone()
            rows = [first[f"r{n}"] or [] for n in range(len(queries))]
        else:
            with self.transaction(commit=False) as c:
                self.execute(c, f"SELECT {head}", params)
                first = c.fetchone()
                rows = []
                for q, text in zip(queries, selects, strict=True):
                    self.execute(c, text, q.params)
                    rows.append([{n: r[n] for n in q.table.names} for r in c.fetchall()])
        return int(first["head"] or 0), int(first["position"] or 0), rows

    def lock(self, c: Any) -> int:
        """Take the tracking row for this transaction (other writers of this view wait)
        and return the position it holds."""
        if self.postgres:
            self.execute(
                c,
                f"SELECT notification_id FROM {self.tracking_table} "
                "WHERE application_name = ? FOR UPDATE",
                (self.tracking_name,),
            )
            row = c.fetchone()
            return 0 if row is None else int(row["notification_id"])
        # SQLite: a write first takes the database's write lock for the transaction.
        self.execute(
            c,
            f"UPDATE {self.tracking_table} SET notification_id = notification_id "
            "WHERE application_name = ?",
            (self.tracking_name,),
        )
        return self.position(c)

    def track(self, c: Any, position: int) -> None:
        """The library's tracking record, in the batch's transaction."""
        self.recorder._insert_tracking(c, Tracking(self.tracking_name, position))

    def track_all(self, c: Any, names: Sequence[str], position: int) -> None:
        """The tracking rows of several views (``names``: their tracking names) moved to
        ``position`` in one statement (the library's ``_insert_tracking`` is one statement
        and, on PostgreSQL, one round trip each). Only forward, as the library's."""
        marks = ", ".join("?" for _ in names)
        self.execute(
            c,
            f"UPDATE {self.tracking_table} SET notification_id = ? "
            f"WHERE application_name IN ({marks}) AND notification_id < ?",
            (position, *names, position),
        )

    def reset(self, c: Any) -> None:
        """Every row gone and the position back to 0 (a rebuild starts here)."""
        for t in self.tables:
            self.execute(c, f"DELETE FROM {self.table_names[t.name]}")
        self.execute(
            c,
            f"UPDATE {self.tracking_table} SET notification_id = 0 WHERE application_name = ?",
            (self.tracking_name,),
        )

    # -- rows --------------------------------------------------------------------------

    def get(self, c: Any, table: Table, key: Key) -> Row | None:
        where = " AND ".join(f"{k} = ?" for k in table.key)
        text = f"SELECT {', '.join(table.names)} FROM {self.table_names[table.name]} WHERE {where}"
        if not self.postgres:
            self.execute(c, text, key)
            row = c.fetchone()
        else:
            # Its own cursor: ``c`` may have a pipelined write whose result is still to
            # come (a fold's earlier flush), and its fetch would read that result.
            with c.connection.cursor(row_factory=c.row_factory) as own:
                self.execute(own, text, key)
                row = own.fetchone()
        return None if row is None else {n: row[n] for n in table.names}

    def get_many(self, c: Any, table: Table, keys: Sequence[Key]) -> dict[Key, Row]:
        """The rows of ``keys`` that exist, by key: one statement (PostgreSQL: the keys
        as one array per column, unnested; SQLite: ``IN`` over row values, in chunks)."""
        names = table.names
        name = self.table_names[table.name]
        listed = ", ".join(names)
        found: list[Any] = []
        if self.postgres:
            kinds = {n: "bigint" if kind == INT else "text" for n, kind in table.columns}
            # in binary (%b): psycopg frames a text array in Python, an element at a time
            arrays = ", ".join(f"%b::{kinds[k]}[]" for k in table.key)
            columns = [[key[i] for key in keys] for i in range(len(table.key))]
            text = (
                f"SELECT {listed} FROM {name} WHERE ({', '.join(table.key)}) "
                f"IN (SELECT * FROM unnest({arrays}))"
            )
            # Its own cursor, as :meth:`get`'s.
            with c.connection.cursor(row_factory=c.row_factory) as own:
                self.execute(own, text, columns)
                found = own.fetchall()
        else:
            width = len(table.key)
            mark = f"({', '.join('?' for _ in table.key)})"
            for i in range(0, len(keys), 400):
                part = keys[i : i + 400]
                text = (
                    f"SELECT {listed} FROM {name} WHERE ({', '.join(table.key)}) "
                    f"IN (VALUES {', '.join(mark for _ in part)})"
                )
                self.execute(c, text, [v for key in part for v in key[:width]])
                found.extend(c.fetchall())
        out: dict[Key, Row] = {}
        for r in found:
            row = {n: r[n] for n in names}
            out[table.key_of(row)] = row
        return out

    def select(
        self, c: Any, table: Table, where: str = "", params: Sequence[Any] = (), tail: str = ""
    ) -> list[Row]:
        text = f"SELECT {', '.join(table.names)} FROM {self.table_names[table.name]}"
        if where:
            text += f" WHERE {where}"
        self.execute(c, f"{text} {tail}", params)
        return [{n: r[n] for n in table.names} for r in c.fetchall()]

    def write(self, c: Any, table: Table, rows: Sequence[Row], *, insert_only: bool) -> None:
        """Insert ``rows`` (or, unless ``insert_only``, insert or update them by their
        key): one statement for all of them (PostgreSQL: the rows as one array per
        column, unnested; SQLite: a few multi-row statements, :mod:`ledger.sqlite_rows`)."""
        if not rows:
            return
        statement = self._statements.get((table.name, insert_only))
        if statement is None:
            statement = self._statements[(table.name, insert_only)] = self._write_sql(
                table, insert_only
            )
        values = list(map(table.values_of, rows))
        if self.postgres:  # one list per column (psycopg adapts a list, not a tuple, to an array)
            c.execute(statement, [list(column) for column in zip(*values, strict=True)])
        else:  # a few multi-row statements, not a step a row (ledger.sqlite_rows)
            head, tail, texts = statement
            sqlite_rows.insert(c, head, len(table.names), values, tail, texts)

    def _write_sql(self, table: Table, insert_only: bool) -> Any:
        names = table.names
        into = f"INSERT INTO {self.table_names[table.name]} ({', '.join(names)})"
        tail = "" if insert_only else _on_conflict(table, names)
        if not self.postgres:
            return into, tail, {}
        kinds = {n: "bigint" if kind == INT else "text" for n, kind in table.columns}
        arrays = ", ".join(f"?::{kinds[n]}[]" for n in names)
        return self.sql(f"{into} SELECT * FROM unnest({arrays}){tail}")

    def remove(self, c: Any, table: Table, keys: Sequence[Key]) -> None:
        """Delete the rows of ``keys``, in one statement."""
        if not keys:
            return
        name = self.table_names[table.name]
        if self.postgres:
            kinds = {n: "bigint" if kind == INT else "text" for n, kind in table.columns}
            arrays = ", ".join(f"%b::{kinds[k]}[]" for k in table.key)
            where = f"({', '.join(table.key)}) IN (SELECT * FROM unnest({arrays}))"
            columns = [[key[i] for key in keys] for i in range(len(table.key))]
            self.execute(c, f"DELETE FROM {name} WHERE {where}", columns)
        else:
            where = " AND ".join(f"{k} = ?" for k in table.key)
            self.executemany(c, f"DELETE FROM {name} WHERE {where}", keys)

    def table(self, name: str) -> Table:
        return self._tables[name]

    def change(self, c: Any, change: Change) -> None:
        if change.kind == DELETE:
            self.remove(c, change.table, change.rows)
        else:
            self.write(c, change.table, change.rows, insert_only=change.kind == INSERT)

    def write_together(
        self, c: Any, parts: Sequence[tuple[View, Sequence[Change]]], position: int
    ) -> None:
        """The changes of several views (this one and others on the same datastore) and
        their tracking rows moved to ``position`` (only forward, as :meth:`track_all`).

        PostgreSQL: one statement (each table's rows one JSON array, every write a
        data-modifying ``WITH`` of the tracking rows' ``UPDATE``), so a commit's fold
        costs one statement's round of client work whatever it touched; SQLite: one
        ``executemany`` per table, then the tracking rows."""
        names = [view.tracking_name for view, _ in parts]
        if not self.postgres:
            for view, changes in parts:
                for change in changes:
                    view.change(c, change)
            self.track_all(c, names, position)
            return
        shape = tuple(
            (view.tracking_name, change.table.name, change.kind)
            for view, changes in parts
            for change in changes
        )
        statement = self._together.get(shape)
        if statement is None:
            statement = self._together[shape] = self._together_sql(parts)
        doc = [
            change.rows
            if change.kind != DELETE
            else [dict(zip(change.table.key, key, strict=True)) for key in change.rows]
            for _, changes in parts
            for change in changes
        ]
        try:
            text = orjson.dumps(doc).decode()
        except TypeError:  # an int beyond 64 bits, a lone surrogate: the exact encoder
            text = json.dumps(doc)
        c.execute(statement, {"doc": text, "position": position, "names": names}, prepare=True)

    def _together_sql(self, parts: Sequence[tuple[View, Sequence[Change]]]) -> Any:
        ctes: list[str] = []
        for view, changes in parts:
            for change in changes:
                n = len(ctes)
                table, columns = view.table_names[change.table.name], change.table.names
                rows = f"json_populate_recordset(NULL::{table}, %(doc)s::json -> {n})"
                if change.kind == DELETE:
                    match = " AND ".join(f"t.{k} = d.{k}" for k in change.table.key)
                    ctes.append(f"DELETE FROM {table} t USING {rows} d WHERE {match}")
                    continue
                listed = ", ".join(columns)
                text = f"INSERT INTO {table} ({listed}) SELECT {listed} FROM {rows}"
                if change.kind == UPSERT:
                    text += _on_conflict(change.table, columns)
                ctes.append(text)
        with_ = ", ".join(f"w{n} AS ({text})" for n, text in enumerate(ctes))
        return SQL(
            (f"WITH {with_} " if ctes else "")
            + f"UPDATE {self.tracking_table} SET notification_id = %(position)s "
            "WHERE application_name = ANY(%(names)s) AND notification_id < %(position)s"
        )


def _on_conflict(table: Table, columns: Sequence[str]) -> str:
    """An upsert's conflict clause: every column set again but the key and the fixed
    ones (nothing to set: the row is left as it is)."""
    kept = (*table.key, *table.fixed)
    sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in kept)
    target = f" ON CONFLICT ({', '.join(table.key)})"
    return f"{target} DO UPDATE SET {sets}" if sets else f"{target} DO NOTHING"


_ABSENT: Any = object()


class Rows:
    """The rows a batch reads and writes: read through to the view on a miss, kept (at
    most ``size`` of them, least recently used out first) across batches while this
    process is the only writer of the view (the position it last wrote is still the
    view's). ``complete``: every row is held (a view built from empty by this process,
    nothing evicted yet), so a miss is a row that does not exist."""

    def __init__(self, view: View, size: int = 20_000) -> None:
        self.view = view
        self.size = size
        self.position = -1
        self.complete = False
        self.cache: OrderedDict[tuple[str, Key], Row | None] = OrderedDict()
        self.dirty: dict[tuple[str, Key], Row | None] = {}
        self.fetched: dict[tuple[str, Key], Row | None] = {}
        """Rows read for this batch beforehand (:meth:`prefetch`): held until its end
        whatever the cache's size, then kept as any row read."""
        self.inserted: dict[str, list[Row]] = {}
        self.c: Any = None

    def begin(self, c: Any, position: int) -> None:
        """A batch on top of ``position`` (the locked tracking row's)."""
        if position != self.position:
            self.cache.clear()
            self.complete = position == 0
            self.position = position  # what it reads now is the view at this position
        self.c = c
        self.dirty, self.fetched, self.inserted = {}, {}, {}

    def get(self, table: Table, key: Key) -> Row | None:
        k = (table.name, key)
        found = self.dirty.get(k, _ABSENT)
        if found is not _ABSENT:
            return found  # type: ignore[no-any-return]  # None: deleted in this batch
        found = self.fetched.get(k, _ABSENT)  # read for this batch beforehand
        if found is _ABSENT:
            found = self.cache.get(k, _ABSENT)
            if found is not _ABSENT:
                self.cache.move_to_end(k)
            elif self.complete:
                return None
            else:
                found = self.view.get(self.c, table, key)
                self._keep(k, found)
        return None if found is None else dict(found)

    def put(self, table: Table, row: Row) -> None:
        key = table.key
        if len(key) == 1:
            self.dirty[(table.name, (row[key[0]],))] = row
        else:
            self.dirty[(table.name, table.key_of(row))] = row

    def peek(self, table: Table, key: Key) -> Row | None:
        """The row as held now (written in this batch, or kept), never read from the
        view: None if absent or not held (what :meth:`Projector.needs` looks at)."""
        k = (table.name, key)
        if k in self.dirty:
            return self.dirty[k]
        if k in self.fetched:
            return self.fetched[k]
        return self.cache.get(k)

    def prefetch(self, projector: Any, events: Sequence[Any]) -> None:
        """Read, in one statement per table, the rows the fold of ``events`` will ask
        for and that are not held (the projector's ``needs``), so the fold reads none of
        them one by one. Asked again while a read brings rows that tell further keys (a
        ledger's player, a seat's round), at most three times. A row found not to exist
        is kept as absent."""
        for _ in range(3):
            if self.complete:
                return  # every row is held: a miss is a row that does not exist
            wanted: dict[str, dict[Key, None]] = {}
            dirty, fetched, cache = self.dirty, self.fetched, self.cache
            for event in events:
                for table, key in projector.needs(self, event):
                    k = (table.name, key)
                    if k not in dirty and k not in fetched and k not in cache:
                        wanted.setdefault(table.name, {})[key] = None
            if not wanted:
                return
            for name, keys in wanted.items():
                found = self.view.get_many(self.c, self.view.table(name), list(keys))
                for key in keys:
                    fetched[(name, key)] = found.get(key)

    def delete(self, table: Table, key: Key) -> None:
        k = (table.name, key)
        held = self.fetched[k] if k in self.fetched else self.cache.get(k, False)
        if held is None or (self.complete and held is False):
            self.dirty.pop(k, None)  # not in the view (put in this batch, if at all)
        else:
            self.dirty[k] = None

    def insert(self, table: Table, row: Row) -> None:
        self.inserted.setdefault(table.name, []).append(row)

    def _keep(self, k: tuple[str, Key], row: Row | None) -> None:
        self.cache[k] = row
        self.cache.move_to_end(k)
        while len(self.cache) > self.size:
            self.cache.popitem(last=False)
            self.complete = False

    def changes(self) -> list[Change]:
        """This batch's writes: per table, the keys deleted, the rows written (inserted
        or updated) and the rows inserted."""
        by_table: dict[str, list[Row]] = {}
        gone: dict[str, list[Key]] = {}
        for (name, key), row in self.dirty.items():
            if row is None:
                gone.setdefault(name, []).append(key)
            else:
                by_table.setdefault(name, []).append(row)
        table = self.view.table
        return [
            *(Change(table(name), DELETE, keys) for name, keys in gone.items()),
            *(Change(table(name), UPSERT, rows) for name, rows in by_table.items()),
            *(Change(table(name), INSERT, rows) for name, rows in self.inserted.items()),
        ]

    def flush(self) -> None:
        for change in self.changes():
            self.view.change(self.c, change)

    def committed(self, position: int) -> None:
        for k, row in self.fetched.items():
            if k not in self.dirty:
                self._keep(k, row)
        for k, row in self.dirty.items():
            self._keep(k, row)
        self.dirty, self.fetched, self.inserted, self.c = {}, {}, {}, None
        self.position = position

    def discard(self) -> None:
        """This batch's writes dropped (its transaction rolled back): the rows kept are
        still the view's at the position they were read at."""
        self.dirty, self.fetched, self.inserted, self.c = {}, {}, {}, None

    def abandon(self) -> None:
        self.cache.clear()
        self.dirty, self.fetched, self.inserted, self.c = {}, {}, {}, None
        self.position, self.complete = -1, False


class Memory:
    """Rows held in memory only: the fold of the whole log that a check compares the
    view with (same interface as :class:`Rows`)."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[Key, Row]] = {}

    def get(self, table: Table, key: Key) -> Row | None:
        found = self.tables.get(table.name, {}).get(key)
        return None if found is None else dict(found)

    def put(self, table: Table, row: Row) -> None:
        self.tables.setdefault(table.name, {})[table.key_of(row)] = row

    def delete(self, table: Table, key: Key) -> None:
        self.tables.get(table.name, {}).pop(key, None)

    def insert(self, table: Table, row: Row) -> None:
        self.put(table, row)
