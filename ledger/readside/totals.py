"""The daily totals projection: per UTC day, game, variant and currency, what the house
took and paid and how many rounds ended (the day rows of ``audit-cli report`` in UTC,
which the operations reports and metrics read instead of the whole log).

Counted as :mod:`audit_cli.report` counts them (tests hold the two equal): money is every
movement into or out of the house's ledger, dated by the event that moved it and
attributed to its round's game by the game code it names; a round counts on the day it
ended, settled or voided (a settled round voided later moves from the one to the other);
``staked`` and ``paid`` are those of the rounds settled that day (the observed RTP is
``paid / staked``). The report's RTP intervals and the operator's time zone stay with the
report, which reads the raw log.

State kept beside the day rows: each round's game and how it ended (``rounds``), which
round an aggregate is (``aggregates``), a live table round's currency (``table_rounds``),
and the money of a round not started yet (``parked``: a command's stake is recorded by
the session before the round's start; it is counted once the round says its game).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING, Any

import orjson

from ledger import contracts
from ledger.readside.projection import Event, Projector
from ledger.readside.view import INT, TEXT, Key, Query, Table
from ledger.tables import account_rows

if TYPE_CHECKING:
    from ledger.ports import LogApp

MONEY_KINDS = {
    contracts.SESSION_STAKE_DEBITED: "stakes",
    contracts.SESSION_WIN_CREDITED: "wins",
    contracts.SESSION_ROUND_SETTLED: "wins",
    contracts.SESSION_REFUNDED: "refunds",
    contracts.SESSION_WIN_REVERSED: "reversed",
}
BLACKJACK = (account_rows.GAME, account_rows.VARIANT)

DAYS = Table(
    "days",
    (
        ("day", TEXT),
        ("game", TEXT),
        ("variant", TEXT),
        ("currency", TEXT),
        ("rounds", INT),
        ("voided", INT),
        ("stakes", INT),
        ("wins", INT),
        ("refunds", INT),
        ("reversed", INT),
        ("staked", INT),
        ("paid", INT),
        ("position", INT),
    ),
    ("day", "game", "variant", "currency"),
)
ROUNDS = Table(
    "rounds",
    (
        ("code", TEXT),
        ("game", TEXT),
        ("variant", TEXT),
        ("currency", TEXT),
        ("ended", TEXT),
        ("voided", INT),
        ("staked", INT),
        ("paid", INT),
        ("position", INT),
    ),
    ("code",),
)
AGGREGATES = Table(
    "aggregates", (("aggregate_id", TEXT), ("code", TEXT), ("position", INT)), ("aggregate_id",)
)
TABLE_ROUNDS = Table(
    "table_rounds", (("round_id", TEXT), ("currency", TEXT), ("position", INT)), ("round_id",)
)
PARKED = Table(
    "parked",
    (("code", TEXT), ("session_id", TEXT), ("moves", TEXT), ("position", INT)),
    ("code", "session_id"),
)
MONEY = ("stakes", "wins", "refunds", "reversed")


def _day(doc: Mapping[str, Any]) -> str:
    stamp = doc.get("timestamp")
    text = stamp.get("_data_") if isinstance(stamp, dict) else stamp
    if type(text) is str and text.endswith("+00:00") and text[10:11] == "T":
        return text[:10]  # already UTC (the ledger's clock): its date is its first ten
    when = datetime.fromisoformat(str(text))
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).date().isoformat()


def _house(mv: dict[str, Any]) -> bool:
    return any(
        isinstance(e, str) and e.startswith("house:")
        for e in (mv.get("source"), mv.get("destination"))
    )


class TotalsProjector(Projector):
    name = "totals"
    tables = (DAYS, ROUNDS, AGGREGATES, TABLE_ROUNDS, PARKED)

    def wants(self, topic: str, state: bytes) -> bool:
        return topic in _ROUND_TOPICS or (b'"movement"' in state and b"house:" in state)

    def takes(self, topic: str, doc: Mapping[str, Any]) -> bool:
        return topic in _ROUND_TOPICS or "movement" in doc

    def takes_topic(self, topic: str) -> bool | None:
        return True if topic in _ROUND_TOPICS else None

    def apply(self, rows: Any, event: Event) -> None:
        seq, originator_id, topic, doc = event
        mv = doc.get("movement")
        if isinstance(mv, dict) and _house(mv):
            self._money(rows, seq, originator_id, topic, doc, mv)
        if topic == contracts.ROUND_STARTED:
            code = str(doc["code"])
            self._start(rows, seq, originator_id, code, doc)
            self._unpark(rows, seq, code, str(doc.get("session_id")), code)
        elif topic == contracts.TABLE_ROUND_OPENED:
            rows.put(
                TABLE_ROUNDS,
                {"round_id": originator_id, "currency": str(doc["currency"]), "position": seq},
            )
        elif topic == contracts.SEAT_OPENED:
            code = f"{doc['code']}/{doc['session_id']}"
            table = rows.get(TABLE_ROUNDS, (str(doc["round_id"]),))
            currency = table["currency"] if table is not None else "?"
            game = {"game": BLACKJACK[0], "variant": BLACKJACK[1], "currency": currency}
            self._start(rows, seq, originator_id, code, game)
            self._unpark(rows, seq, str(doc["code"]), str(doc["session_id"]), code)
        elif topic in (contracts.ROUND_SETTLED, contracts.SEAT_SETTLED):
            result = doc["result"] if topic == contracts.SEAT_SETTLED else doc
            staked = int(result["staked"])
            paid = int(result["returned"] if topic == contracts.SEAT_SETTLED else result["payout"])
            self._end(rows, seq, originator_id, _day(doc), 0, staked, paid)
        elif topic in (contracts.ROUND_VOIDED, contracts.SEAT_VOIDED):
            self._end(rows, seq, originator_id, _day(doc), 1, 0, 0)

    def needs(self, rows: Any, event: Event) -> Iterable[tuple[Table, Key]]:
        """The rounds a movement may name (and its parked money when neither is held),
        a seat's table round and parked money, an ending round's aggregate and, once
        held, its round. The day rows (a few a day) are read when asked for."""
        _, oid, topic, doc = event
        out: list[tuple[Table, Key]] = []
        mv = doc.get("movement")
        if isinstance(mv, dict) and _house(mv):
            code = str(doc.get("game_code"))
            mine = f"{code}/{oid}"
            out += [(ROUNDS, (code,)), (ROUNDS, (mine,))]
            if rows.peek(ROUNDS, (code,)) is None and rows.peek(ROUNDS, (mine,)) is None:
                out.append((PARKED, (code, oid)))
        if topic == contracts.SEAT_OPENED:
            out.append((TABLE_ROUNDS, (str(doc.get("round_id")),)))
            out.append((PARKED, (str(doc.get("code")), str(doc.get("session_id")))))
        elif topic == contracts.ROUND_STARTED:
            out.append((PARKED, (str(doc.get("code")), str(doc.get("session_id")))))
        elif topic in _ENDS:
            out.append((AGGREGATES, (oid,)))
            known = rows.peek(AGGREGATES, (oid,))
            if known is not None:
                out.append((ROUNDS, (known["code"],)))
        return out

    def _start(self, rows: Any, seq: int, oid: str, code: str, doc: Mapping[str, Any]) -> None:
        rows.put(AGGREGATES, {"aggregate_id": oid, "code": code, "position": seq})
        rows.put(
            ROUNDS,
            {
                "code": code,
                "game": str(doc["game"]),
                "variant": str(doc["variant"]),
                "currency": str(doc["currency"]),
                "ended": None,
                "voided": 0,
                "staked": 0,
                "paid": 0,
                "position": seq,
            },
        )

    def _end(
        self, rows: Any, seq: int, oid: str, day: str, voided: int, staked: int, paid: int
    ) -> None:
        known = rows.get(AGGREGATES, (oid,))
        rnd = rows.get(ROUNDS, (known["code"],)) if known is not None else None
        if rnd is None:
            return
        if rnd["ended"] is not None:  # it ended before (settled, now voided): undo that day
            self._count(rows, seq, rnd, -1)
        rnd.update(ended=day, voided=voided, staked=staked, paid=paid, position=seq)
        rows.put(ROUNDS, rnd)
        self._count(rows, seq, rnd, 1)

    def _count(self, rows: Any, seq: int, rnd: dict[str, Any], sign: int) -> None:
        row = self._row(rows, rnd["ended"], rnd["game"], rnd["variant"], rnd["currency"])
        if rnd["voided"]:
            row["voided"] += sign
        else:
            row["rounds"] += sign
            if rnd["staked"] > 0:
                row["staked"] += sign * rnd["staked"]
                row["paid"] += sign * rnd["paid"]
        row["position"] = seq
        rows.put(DAYS, row)

    def _money(
        self, rows: Any, seq: int, oid: str, topic: str, doc: Mapping[str, Any], mv: dict[str, Any]
    ) -> None:
        kind = MONEY_KINDS.get(topic)
        if kind is None:
            kind = "stakes" if str(mv.get("destination")).startswith("house:") else "wins"
        code = str(doc.get("game_code"))
        rnd = rows.get(ROUNDS, (code,)) or rows.get(ROUNDS, (f"{code}/{oid}",))
        move = [_day(doc), str(mv["currency"]), kind, int(mv["amount"])]
        if rnd is None:  # its round starts later in the log (same command): park it
            parked = rows.get(PARKED, (code, oid))
            moves = _moves(parked["moves"]) if parked is not None else []
            moves.append(move)
            row = {"code": code, "session_id": oid, "moves": _text(moves), "position": seq}
            rows.put(PARKED, row)
            return
        self._add(rows, seq, rnd, move)

    def _add(self, rows: Any, seq: int, rnd: dict[str, Any], move: list[Any]) -> None:
        day, currency, kind, amount = move
        row = self._row(rows, day, rnd["game"], rnd["variant"], currency)
        row[kind] += amount
        row["position"] = seq
        rows.put(DAYS, row)

    def _unpark(self, rows: Any, seq: int, code: str, session_id: str, key: str) -> None:
        parked = rows.get(PARKED, (code, session_id))
        if parked is None:
            return
        rnd = rows.get(ROUNDS, (key,))
        for move in _moves(parked["moves"]):
            self._add(rows, seq, rnd, move)
        rows.delete(PARKED, (code, session_id))

    def _row(self, rows: Any, day: str, game: str, variant: str, currency: str) -> dict[str, Any]:
        found: dict[str, Any] | None = rows.get(DAYS, (day, game, variant, currency))
        if found is not None:
            return found  # the store's copy (or this batch's own row), changed then put
        blank = dict.fromkeys(("rounds", "voided", *MONEY, "staked", "paid", "position"), 0)
        return {"day": day, "game": game, "variant": variant, "currency": currency, **blank}


def _text(moves: list[list[Any]]) -> str:
    """``json.dumps(moves)``, the same text, for the lists of text and integers a parked
    row holds (``json.dumps`` makes an encoder each call: a tenth of the totals' fold
    when every stake is parked until its round starts)."""
    if all(type(v) is str or type(v) is int for move in moves for v in move):
        return (
            "["
            + ", ".join(
                "["
                + ", ".join(
                    encode_basestring_ascii(v) if type(v) is str else int.__repr__(v) for v in move
                )
                + "]"
                for move in moves
            )
            + "]"
        )
    return json.dumps(moves)


def _moves(text: str) -> list[list[Any]]:
    """``json.loads(text)``: by orjson when it reads the text exactly (it reads an
    integer beyond 64 bits as a float, and refuses ``NaN``: then by ``json``)."""
    try:
        moves: list[list[Any]] = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)  # type: ignore[no-any-return]
    if any(type(v) is float for move in moves for v in move):
        return json.loads(text)  # type: ignore[no-any-return]
    return moves


_ROUND_TOPICS = frozenset(
    {
        contracts.ROUND_STARTED,
        contracts.ROUND_SETTLED,
        contracts.ROUND_VOIDED,
        contracts.TABLE_ROUND_OPENED,
        contracts.SEAT_OPENED,
        contracts.SEAT_SETTLED,
        contracts.SEAT_VOIDED,
    }
)


def daily(
    app: LogApp,
    start: str | None = None,
    end: str | None = None,
    at_least: int | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """The day rows from day ``start`` to ``end`` inclusive (``YYYY-MM-DD``), by day, game,
    variant and currency, each with its GGR and observed RTP; and the log position they
    reflect."""
    where, params = [], []
    if start is not None:
        where.append("day >= ?")
        params.append(start)
    if end is not None:
        where.append("day <= ?")
        params.append(end)
    query = Query(DAYS, " AND ".join(where), tuple(params), "day, game, variant, currency")
    position, (found,) = app.readside.read("totals", at_least, (query,))
    out = []
    for row in found:
        row["ggr"] = row["stakes"] - row["wins"] - row["refunds"] + row["reversed"]
        row["rtp_observed"] = row["paid"] / row["staked"] if row["staked"] else None
        out.append(row)
    return out, position


_ENDS = frozenset(
    {contracts.ROUND_SETTLED, contracts.SEAT_SETTLED, contracts.ROUND_VOIDED, contracts.SEAT_VOIDED}
)
