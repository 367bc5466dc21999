"""Account-history rows of the live tables, folded from the log's events (issue 13 §10).

One row per seat (a player's part of one table round), in the shape of the other games'
rows (:class:`ledger.projections.History`, ``audit-cli history``): date (the round's GMT
start), game, code, the bets by type, ``stakes`` (every amount the seat staked: chips
still on the table, doubles, splits, insurance), ``wins`` (every amount credited: a
cash-out, the settlement), a void's ``refunded`` and ``reversed_win`` (with ``wins`` 0,
as the other games' voids), and ``net`` = wins - stakes + refunded, the balance change.
Bets cancelled (a disconnection before the deal, a bet landing after it) show as
``cancelled`` with their refund. A seat whose every chip was taken back (UNDO) played
nothing and has no row.

The fold reads only field values, so the same code serves the in-memory projection
(domain events' attributes) and the auditor's raw rows (the JSON payloads).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from ledger import contracts

GAME, VARIANT = "blackjack", "infinite"
SEAT_PREFIX = contracts.SEAT.split("@")[0] + "/"
TOPICS = frozenset(
    {
        contracts.TABLE_ROUND_OPENED,
        contracts.SEAT_OPENED,
        contracts.SEAT_BET_PLACED,
        contracts.SEAT_BET_UNDONE,
        contracts.SEAT_BETS_CANCELLED,
        contracts.SEAT_DECIDED,
        contracts.SEAT_SETTLED,
        contracts.SEAT_VOIDED,
    }
)
"""The topics the fold reads (a notification-log query can select on them)."""


def wanted(topic: str) -> bool:
    return topic in TOPICS


class SeatRows:
    """Fold of the table events into one account-history row per seat."""

    def __init__(self) -> None:
        self._rounds: dict[str, tuple[str, str]] = {}
        """table round id -> (started_at, currency)."""
        self._seats: dict[str, dict[str, Any]] = {}
        self._chips: dict[str, list[tuple[str, int]]] = {}

    def apply(
        self, topic: str, originator_id: Any, doc: Mapping[str, Any], closed: set[str]
    ) -> dict[str, Any] | None:
        """Apply one event; return the row when ``topic`` opened a seat (a new row, for
        the caller's indexes), else None. ``closed``: sessions closed so far (a void
        after a session closed lands on the account)."""
        oid = str(UUID(str(originator_id)))  # raw rows may spell it as 32 hex digits
        if topic == contracts.TABLE_ROUND_OPENED:
            self._rounds[oid] = (str(doc["started_at"]), str(doc["currency"]))
            return None
        if topic == contracts.SEAT_OPENED:
            started_at, currency = self._rounds.get(str(UUID(str(doc["round_id"]))), ("", ""))
            opened: dict[str, Any] = {
                "code": doc["code"],
                "game": GAME,
                "variant": VARIANT,
                "table": doc["table"],
                "date": started_at,
                "started_at": started_at,
                "player_id": doc["player_id"],
                "session_id": str(doc["session_id"]),
                "currency": currency,
                "bets": {},
                "stakes": 0,
                "wins": 0,
                "refunded": 0,
                "reversed_win": 0,
                "net": 0,
                "landed_on": None,
                "outcome": "open",
                "status": contracts.RoundStatus.OPEN.value,
            }
            self._seats[oid] = opened
            self._chips[oid] = []
            return opened
        row = self._seats.get(oid)
        if row is None:
            return None  # an event without its opening: `audit-cli verify` reports the log
        chips = self._chips[oid]
        if topic == contracts.SEAT_BET_PLACED:
            if row["status"] == "cancelled":  # back at the table before the deal
                row.update(outcome="open", status=contracts.RoundStatus.OPEN.value)
            chips.append((str(doc["bet"]), int(doc["amount"])))
            row["stakes"] += int(doc["amount"])
        elif topic == contracts.SEAT_BET_UNDONE:
            if chips:
                chips.pop()
            row["stakes"] -= int(doc["amount"])
        elif topic == contracts.SEAT_BETS_CANCELLED:
            row.update(outcome="cancelled", status="cancelled")
            row["refunded"] += int(doc["refunded"])
            chips.clear()  # the row keeps showing the bets that were cancelled
        elif topic == contracts.SEAT_DECIDED:
            row["stakes"] += int(doc["cost"])
            row["wins"] += int(doc["paid"])
        elif topic == contracts.SEAT_SETTLED:
            row["wins"] += int(doc["credited"])
            row["refunded"] += int(doc["refunded"])
            net = int(doc["result"]["returned"]) - int(doc["result"]["staked"])
            outcome = "win" if net > 0 else "push" if net == 0 else "lose"
            row.update(outcome=outcome, status=contracts.RoundStatus.SETTLED.value)
        elif topic == contracts.SEAT_VOIDED:
            # No win stands (wins 0); what was credited shows as reversed, the stakes
            # with their refund beside them: net 0, as the other games' voids.
            row.update(
                outcome="voided",
                status=contracts.RoundStatus.VOIDED.value,
                wins=0,
                reversed_win=int(doc["reversed_win"]),
                landed_on="account" if row["session_id"] in closed else "session",
                void_reason=doc["reason"],
                incident_id=doc["incident_id"],
            )
            row["refunded"] += int(doc["refunded"])
        if topic in (contracts.SEAT_BET_PLACED, contracts.SEAT_BET_UNDONE):
            row["bets"] = _totals(chips)
        row["net"] = row["wins"] - row["stakes"] + row["refunded"]
        return None

    def row(self, seat_id: str) -> dict[str, Any] | None:
        return self._seats.get(seat_id)


def played(row: Mapping[str, Any]) -> bool:
    """False for a seat whose every chip was taken back before the deal."""
    return bool(row["stakes"])


def _totals(chips: list[tuple[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for bet, amount in chips:
        out[bet] = out.get(bet, 0) + amount
    return out
