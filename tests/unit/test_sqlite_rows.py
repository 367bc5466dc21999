"""Rows written a few multi-row statements at a time (:mod:`ledger.sqlite_rows`): the
same rows, rowids and upserts as one statement a row, in fewer steps."""

from __future__ import annotations

import sqlite3

import pytest

from ledger import sqlite_rows


@pytest.mark.parametrize("n", [0, 1, 2, 3, 27, 63, 64, 65, 200, 1000])
@pytest.mark.parametrize("width", [1, 4, 12, 40])
def test_sizes_cover_every_row_within_the_limits(n: int, width: int) -> None:
    sizes = sqlite_rows.sizes(n, width)
    assert sum(sizes) == n
    assert all(s & (s - 1) == 0 for s in sizes)  # powers of two: few statement texts
    assert all(s <= sqlite_rows.MOST and s * width <= sqlite_rows.PARAMETERS for s in sizes)
    assert len(sizes) <= n // max(sizes, default=1) + 7


def _db() -> sqlite3.Connection:
    c = sqlite3.connect(":memory:", isolation_level=None)
    c.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER, w TEXT)")
    return c


def test_rowids_are_those_of_one_statement_a_row() -> None:
    rows = [(f"k{i}", i, "x" * (i % 7)) for i in range(300)]
    one, many = _db(), _db()
    one.execute("INSERT INTO t VALUES ('before', 0, '')")
    many.execute("INSERT INTO t VALUES ('before', 0, '')")
    expected = []
    for row in rows:
        cur = one.execute("INSERT INTO t VALUES (?,?,?)", row)
        expected.append(cur.lastrowid)
    ids = sqlite_rows.insert(many.cursor(), "INSERT INTO t", 3, rows, texts={})
    assert ids == expected
    read = many.execute("SELECT rowid, k, v, w FROM t WHERE k != 'before' ORDER BY rowid")
    assert [(r[0], *r[1:]) for r in read] == [(i, *row) for i, row in zip(ids, rows, strict=True)]


def test_an_upsert_of_a_key_twice_keeps_the_later_row_as_executemany_does() -> None:
    tail = " ON CONFLICT (k) DO UPDATE SET v = excluded.v, w = excluded.w"
    rows = [("a", 1, "first"), ("b", 2, "b"), ("a", 3, "second")]
    one, many = _db(), _db()
    one.executemany("INSERT INTO t VALUES (?,?,?)" + tail, rows)
    sqlite_rows.insert(many.cursor(), "INSERT INTO t", 3, rows, tail)
    query = "SELECT k, v, w FROM t ORDER BY k"
    assert many.execute(query).fetchall() == one.execute(query).fetchall()


def test_a_refused_row_refuses_its_statement_and_writes_nothing_of_it() -> None:
    c = _db()
    c.execute("BEGIN")
    with pytest.raises(sqlite3.IntegrityError):
        sqlite_rows.insert(c.cursor(), "INSERT INTO t", 3, [("a", 1, ""), ("a", 2, "")])
    c.execute("ROLLBACK")
    assert c.execute("SELECT count(*) FROM t").fetchone()[0] == 0


def test_fewer_steps_than_rows() -> None:
    c = _db()
    statements: list[str] = []
    c.set_trace_callback(statements.append)
    sqlite_rows.insert(c.cursor(), "INSERT INTO t", 3, [(f"k{i}", i, "") for i in range(27)])
    assert len(statements) == len(sqlite_rows.sizes(27, 3)) == 4
