"""Rows written to SQLite a few statements at a time, not one statement each.

Python's ``sqlite3`` releases the GIL around each step of a statement, and
``executemany`` steps once a row. In a server process the event loop's thread is
usually waiting for the GIL while the group-commit writer inserts a batch, so each of
those releases can hand the GIL to the loop, and the writer gets it back only when the
loop blocks or after the interpreter's switch interval (5 ms; ``bench/bench_gil.py``:
a SQLite call beside a busy thread took 474 µs on average). A Red Dog batch of 25
rounds inserted about 220 event rows and 200 view rows, each its own step.

Here the rows go in as multi-row ``INSERT ... VALUES (...), (...)`` statements: at most
:data:`MOST` rows (and 999 parameters, SQLite's oldest limit) a statement, the sizes
powers of two, so a table has at most a handful of statement texts for the
connection's statement cache and any number of rows costs a few steps. SQLite inserts
a statement's rows in order, each as an ``executemany`` would (an upsert's conflict
with a row written earlier in the same statement takes its ``DO UPDATE``), and a
failure aborts the whole statement, as before within the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MOST = 64
"""Rows in one statement at most."""
PARAMETERS = 999
"""Parameters in one statement at most (``SQLITE_MAX_VARIABLE_NUMBER`` before 3.32)."""


def sizes(n: int, width: int) -> list[int]:
    """How ``n`` rows of ``width`` columns are split into statements: as many of the
    largest power of two that fits as there are, then the rest by its binary digits."""
    most = MOST
    while most > 1 and most * width > PARAMETERS:
        most //= 2
    out = [most] * (n // most)
    rest = n % most
    size = most // 2
    while rest:
        if size <= rest:
            out.append(size)
            rest -= size
        size //= 2
    return out


def statement(head: str, width: int, n: int, tail: str = "") -> str:
    """``head VALUES (?, ...), ... tail`` for ``n`` rows of ``width`` columns."""
    row = "(" + ",".join("?" * width) + ")"
    return f"{head} VALUES {','.join([row] * n)}{tail}"


def insert(
    c: Any,
    head: str,
    width: int,
    rows: Sequence[Sequence[Any]],
    tail: str = "",
    texts: dict[int, str] | None = None,
) -> list[int]:
    """Insert ``rows`` (each ``width`` values) with ``head`` (``INSERT INTO t (a, b)``)
    and ``tail`` (an ``ON CONFLICT`` clause, say); ``texts`` caches the statements by
    row count. Returns each row's rowid: a statement's rows take consecutive rowids
    (SQLite gives a new row one more than the table's largest, within the write lock
    the transaction holds), the last of them ``lastrowid``."""
    ids: list[int] = []
    at = 0
    for n in sizes(len(rows), width):
        text = None if texts is None else texts.get(n)
        if text is None:
            text = statement(head, width, n, tail)
            if texts is not None:
                texts[n] = text
        c.execute(text, [v for row in rows[at : at + n] for v in row])
        last = c.lastrowid
        ids.extend(range(last - n + 1, last + 1))
        at += n
    return ids
