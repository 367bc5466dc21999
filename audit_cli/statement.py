"""``audit-cli statement``: a player's statement from the raw log (no application).

The lines come from :class:`ledger.statement.StatementBook`, fed every row in notification
order, so running balances always start from the first movement; ``--from``/``--to``
only choose which lines are printed.
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from typing import TextIO

from audit_cli.rows import read_rows
from ledger import envelope
from ledger.statement import Line, StatementBook

COLUMNS = (
    "seq",
    "time",
    "kind",
    "ledger",
    "session_id",
    "round_code",
    "amount",
    "currency",
    "balance",
    "account_balance",
    "session_balance",
)


def parse_when(text: str) -> str:
    """An ISO 8601 day (``2026-12-01``) or time, checked; naive times are UTC."""
    datetime.fromisoformat(text)
    return text


def _instant(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def in_range(time: str, start: str | None, end: str | None) -> bool:
    """Whether a line's time falls from ``start`` to ``end`` inclusive (a bare day as
    ``end`` includes the whole day)."""
    when = _instant(time)
    if start is not None and when < _instant(start):
        return False
    if end is not None:
        last = _instant(end)
        if len(end) == 10:  # a day: up to its end
            return when < last + timedelta(days=1)
        return when <= last
    return True


def read_statement(
    db: str, player: str, start: str | None = None, end: str | None = None
) -> list[Line]:
    book = StatementBook()
    for row in read_rows(db):
        try:
            payload = envelope.decode(row.state).payload
        except (envelope.EnvelopeError, ValueError, TypeError, AttributeError):
            continue  # not an event of ours: `audit-cli verify` reports it
        book.feed_payload(row.notification_id, row.originator_id, row.topic, payload)
    return [ln for ln in book.lines(player) if in_range(ln.time, start, end)]


def write_csv(lines: list[Line], out: TextIO) -> None:
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for ln in lines:
        writer.writerow(ln.to_dict())
