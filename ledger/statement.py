"""A statement per account, read from the movements in the log: every deposit, withdrawal,
buy-in, session return, stake, win, refund and reversal with its time, round code and
running balances.

Built only from the events' double-entry ``movement`` fields (the same ones
``audit-cli verify --balances`` replays), so the statement's running balances are the
rebuilt balances. A player's money sits in the account and in the player's game sessions
(funded from the account by a buy-in); ``balance`` is the sum of both, ``account_balance``
the account's alone (the live balance of ``GET /v1/accounts/{player}`` once every session
is closed) and ``session_balance`` the balance of the session a stake or win moved.

The book is fed rows in notification order from the raw log (``audit-cli statement``, and
``croupier projections check`` through the view's fold). The HTTP API and
:func:`statements` read the statement view (:mod:`ledger.readside.statement`), which
folds the log with the same rules into tables: a page costs what it returns, and the
application keeps no statement in memory.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from ledger.statement_lines import ACCOUNT_OPENED, KINDS, Line

__all__ = ["ACCOUNT_OPENED", "KINDS", "Line", "StatementBook", "Statements", "statements"]


def _time(doc: dict[str, Any]) -> str:
    ts = doc.get("timestamp")
    return str(ts.get("_data_") if isinstance(ts, dict) else ts)


class StatementBook:
    """Every player's statement, fed event by event in notification order.

    ``player`` set: only that player's ledgers are followed, and only the lines after
    ``after`` are kept, at most ``limit`` of them (:attr:`full` then says the reader may
    stop feeding): what one page of a statement needs, whatever the length of the log."""

    def __init__(self, player: str | None = None, after: int = 0, limit: int | None = None) -> None:
        self.last_seq = 0
        self.player, self.after, self.limit = player, after, limit
        self.kept = 0
        self._owner: dict[str, str] = {}
        self._ledgers: dict[str, list[str]] = defaultdict(list)
        self._balance: dict[str, int] = defaultdict(int)
        self._lines: dict[str, list[Line]] = defaultdict(list)

    @property
    def full(self) -> bool:
        return self.limit is not None and self.kept >= self.limit

    def feed(self, seq: int, originator_id: str, topic: str, doc: dict[str, Any]) -> None:
        self.last_seq = max(self.last_seq, seq)
        if topic == ACCOUNT_OPENED and isinstance(doc.get("player_id"), str):
            if self.player is None or doc["player_id"] == self.player:
                self._own(f"account:{originator_id}", doc["player_id"])
            return
        mv = doc.get("movement")
        if not isinstance(mv, dict):
            return
        src, dst, amount = str(mv.get("source")), str(mv.get("destination")), mv.get("amount")
        if type(amount) is not int:
            return
        player = self._owner.get(src) or self._owner.get(dst)
        if player is None:
            return
        for name in (src, dst):  # a buy-in makes the new session the player's
            if name.startswith("session:") and name not in self._owner:
                self._own(name, player)
        self._balance[src] -= amount
        self._balance[dst] += amount
        if seq <= self.after or self.full:
            return  # before the page asked for (its balances count) or after it
        self.kept += 1
        ledger = "account" if topic.startswith("croupier/account/") else "session"
        own = f"{ledger}:{originator_id}"
        session = next((n for n in (own, src, dst) if n.startswith("session:")), None)
        event = topic.rsplit("/", 1)[-1].split("@")[0]
        # Session events name the round by game_code since class_version 2 (round_id before).
        code = doc.get("round_code") or doc.get("game_code") or doc.get("round_id")
        self._lines[player].append(
            Line(
                seq=seq,
                time=_time(doc),
                kind=KINDS.get(event, event),
                ledger=ledger,
                session_id=session.split(":", 1)[1] if session else None,
                round_code=str(code) if code else None,
                amount=amount if dst == own else -amount,
                currency=str(mv.get("currency")),
                balance=sum(self._balance[n] for n in self._ledgers[player]),
                account_balance=sum(
                    self._balance[n] for n in self._ledgers[player] if n.startswith("account:")
                ),
                session_balance=self._balance[session] if session else None,
            )
        )

    def wants(self, originator_id: str, topic: str) -> bool:
        """Whether an event may move the followed player's money: the account openings
        (one names the player) and the events of the player's own ledgers (a movement is
        recorded by the aggregate of one of its two ledgers, and a buy-in by the account
        it leaves, so a session is the player's before its first event). Every event when
        no player is followed."""
        return (
            self.player is None
            or topic == ACCOUNT_OPENED
            or f"account:{originator_id}" in self._owner
            or f"session:{originator_id}" in self._owner
        )

    def feed_payload(self, seq: int, originator_id: str, topic: str, payload: bytes) -> bool:
        """Feed one stored event; True once the page asked for is full."""
        self.last_seq = max(self.last_seq, seq)
        if b'"movement"' not in payload and topic != ACCOUNT_OPENED:
            return self.full  # most events move no money: skip parsing them
        try:
            doc = json.loads(payload)
        except ValueError:
            return self.full
        if isinstance(doc, dict):
            self.feed(seq, originator_id, topic, doc)
        return self.full

    def _own(self, ledger: str, player: str) -> None:
        self._owner[ledger] = player
        self._ledgers[player].append(ledger)

    def lines(self, player: str, after: int = 0, limit: int | None = None) -> list[Line]:
        """The player's lines after cursor ``after`` (a ``seq``), oldest first."""
        found = [ln for ln in self._lines.get(player, []) if ln.seq > after]
        return found if limit is None else found[:limit]

    def balances(self, player: str) -> dict[str, int]:
        """Every ledger of the player (account and sessions) with its balance now."""
        return {n: self._balance[n] for n in self._ledgers.get(player, [])}


from ledger.readside.statement import Statements, statements  # noqa: E402  # the views
