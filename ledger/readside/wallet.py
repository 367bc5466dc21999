"""The wallet projection: every transaction croupier sent to a seamless wallet, with its
state, for the reconciliation (``GET /v1/wallet/transactions``).

The fold of :class:`ledger.seamless.book.WalletBook` (which ``audit-cli wallet reconcile``
still reads the raw log with) kept in two tables: ``sessions`` (each seamless session's
operator) and ``transactions`` (one row per transaction id: the entry of the book, its
``ord`` the notification id that first named it, which orders the list, and ``at_us``
its time in microseconds since the epoch, which the time filters compare).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ledger import contracts
from ledger.errors import InvalidRequest
from ledger.readside.projection import Event, Projector
from ledger.readside.view import INT, TEXT, Query, Table
from ledger.seamless.entries import TOPICS, Entry, State, _instant

if TYPE_CHECKING:
    from ledger.ports import LogApp

SESSIONS = Table(
    "sessions", (("session_id", TEXT), ("operator", TEXT), ("position", INT)), ("session_id",)
)
TRANSACTIONS = Table(
    "transactions",
    (
        ("transaction_id", TEXT),
        ("ord", INT),
        ("seq", INT),
        ("time", TEXT),
        ("at_us", INT),
        ("call", TEXT),
        ("operator", TEXT),
        ("session_id", TEXT),
        ("player_token", TEXT),
        ("game_code", TEXT),
        ("stage", TEXT),
        ("amount", INT),
        ("currency", TEXT),
        ("reference_transaction_id", TEXT),
        ("state", TEXT),
        ("cause", TEXT),
        ("attempts", INT),
        ("outcome", TEXT),
        ("readded", INT),
        ("position", INT),
    ),
    ("transaction_id",),
    indexes=(("ord",), ("operator", "ord"), ("readded", "seq")),
)
ENTRY_FIELDS = tuple(
    n for n, _ in TRANSACTIONS.columns if n not in ("ord", "at_us", "readded", "position")
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(text: str) -> int:
    """Microseconds since the epoch of an ISO 8601 time (UTC when it names no zone)."""
    delta = _instant(text) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _time(doc: Mapping[str, Any]) -> str:
    ts = doc.get("timestamp")
    return str(ts.get("_data_") if isinstance(ts, dict) else ts)


def _text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else json.dumps(value)


def _int(value: Any) -> int | None:
    return value if value is None or type(value) is int else None


class WalletProjector(Projector):
    name = "wallet"
    tables = (SESSIONS, TRANSACTIONS)
    topics = TOPICS

    def takes(self, topic: str, doc: Mapping[str, Any]) -> bool:
        return topic in self.topics

    def takes_topic(self, topic: str) -> bool | None:
        return topic in self.topics

    def apply(self, rows: Any, event: Event) -> None:
        seq, originator_id, topic, doc = event
        if topic == contracts.SESSION_OPENED:
            if isinstance(doc.get("operator"), str):
                rows.put(
                    SESSIONS,
                    {"session_id": originator_id, "operator": doc["operator"], "position": seq},
                )
        elif topic == contracts.SESSION_STAKE_INTENDED:
            self._add(rows, seq, originator_id, doc, State.PENDING_OUTCOME)
        elif topic == contracts.SESSION_WALLET_CALL_QUEUED:
            entry = self._add(rows, seq, originator_id, doc, State.PENDING_DELIVERY)
            ref = entry["reference_transaction_id"] if entry["call"] == "rollback" else None
            debit = rows.get(TRANSACTIONS, (ref or "",))
            if debit is not None and debit["state"] in (State.ACCEPTED, State.UNKNOWN):
                debit.update(state=State.ROLLBACK_PENDING, position=seq)
                rows.put(TRANSACTIONS, debit)
        elif topic == contracts.SESSION_STAKE_RESOLVED:
            found = rows.get(TRANSACTIONS, (str(doc.get("transaction_id")),))
            if found is not None and found["state"] == State.PENDING_OUTCOME:
                outcome = str(doc.get("outcome"))
                found["state"] = {"accepted": State.ACCEPTED, "refused": State.REFUSED}.get(
                    outcome, State.UNKNOWN
                )
                found.update(cause=_text(doc.get("cause")), outcome=outcome, position=seq)
                rows.put(TRANSACTIONS, found)
        elif topic == contracts.WALLET_DELIVERED:
            sent = rows.get(TRANSACTIONS, (str(doc.get("transaction_id")),))
            if sent is None or sent["state"] != State.PENDING_DELIVERY:
                return
            acknowledged = doc.get("state") == "acknowledged"
            sent["state"] = State.REJECTED
            if acknowledged:
                sent["state"] = State.ACCEPTED if sent["call"] == "credit" else State.ROLLED_BACK
            sent.update(
                cause=_text(doc.get("cause")), attempts=_int(doc.get("attempts")), position=seq
            )
            rows.put(TRANSACTIONS, sent)
            debit = rows.get(TRANSACTIONS, (sent["reference_transaction_id"] or "",))
            if sent["call"] == "rollback" and debit is not None:
                debit["state"] = State.ROLLED_BACK if acknowledged else State.REJECTED
                debit["position"] = seq
                rows.put(TRANSACTIONS, debit)

    def _add(
        self, rows: Any, seq: int, session_id: str, doc: Mapping[str, Any], state: str
    ) -> dict[str, Any]:
        t = doc.get("transaction") or {}
        tid = str(t.get("transaction_id"))
        known = rows.get(TRANSACTIONS, (tid,))
        session = rows.get(SESSIONS, (session_id,))
        time = _time(doc)
        entry = {
            "transaction_id": tid,
            "ord": known["ord"] if known is not None else seq,
            "seq": seq,
            "time": time,
            "at_us": micros(time),
            "call": str(t.get("call")),
            "operator": session["operator"] if session is not None else "",
            "session_id": session_id,
            "player_token": str(t.get("player_token")),
            "game_code": str(t.get("game_code")),
            "stage": str(t.get("stage")),
            "amount": int(t.get("amount") or 0),
            "currency": str(t.get("currency")),
            "reference_transaction_id": _text(t.get("reference_transaction_id")),
            "state": state,
            "cause": None,
            "attempts": None,
            "outcome": None,
            "readded": 0 if known is None else 1,
            "position": seq,
        }
        rows.put(TRANSACTIONS, entry)
        return entry


def entry_of(row: dict[str, Any]) -> Entry:
    return Entry(**{k: row[k] for k in ENTRY_FIELDS})


def _bound(text: str, name: str) -> datetime:
    try:
        return _instant(text)
    except ValueError:
        raise InvalidRequest(f"{name} is not an ISO 8601 time: {text!r}") from None


def page(
    app: LogApp,
    operator: str | None = None,
    start: str | None = None,
    end: str | None = None,
    after: int = 0,
    limit: int | None = None,
    at_least: int | None = None,
) -> tuple[list[Entry], int]:
    """The transactions after cursor ``after`` (a ``seq``), oldest first: the operator's
    only, if given; from ``start`` to ``end`` inclusive (ISO 8601; a bare day as ``end``:
    all of it); at most ``limit``. And the log position the page reflects."""
    where: list[str] = []
    params: list[Any] = []
    low = high = None  # at_us bounds, inclusive
    if operator is not None:
        where.append("operator = ?")
        params.append(operator)
    if start is not None:
        low = micros(_bound(start, "from").isoformat())
        where.append("at_us >= ?")
        params.append(low)
    if end is not None:
        last = _bound(end, "to")
        if len(end) == 10:
            high = micros((last + timedelta(days=1)).isoformat()) - 1
        else:
            high = micros(last.isoformat())
        where.append("at_us <= ?")
        params.append(high)
    # A transaction id named again (``readded``) keeps its place (``ord``) with the later
    # ``seq`` (as the book does). The few such rows are read by their own index only and
    # filtered here: given the operator or the times, a planner may read the whole
    # (operator, ord) index up to the cursor instead.
    position, (rows, again) = app.readside.read(
        "wallet",
        at_least,
        (
            Query(TRANSACTIONS, " AND ".join(["ord > ?", *where]), (after, *params), "ord", limit),
            Query(TRANSACTIONS, "readded = 1 AND seq > ?", (after,)),
        ),
    )

    def kept(r: dict[str, Any]) -> bool:
        return (
            r["ord"] <= after
            and (operator is None or r["operator"] == operator)
            and (low is None or r["at_us"] >= low)
            and (high is None or r["at_us"] <= high)
        )

    found = sorted(rows + [r for r in again if kept(r)], key=lambda r: r["ord"])
    return [entry_of(r) for r in found[:limit]], position
