"""The books of ``audit-cli verify``: money moved between ledgers, sessions opened and
closed, request records and recorded balances, kept one way for both verify paths.

The parent (``audit_cli.checker``) records every row of the log into one ``Books``; a
worker (``audit_cli.verify``) records a chunk of rows into books of their own, relative to
a start it does not know, and the parent adds them with :meth:`Books.absorb`, which
refuses (changing nothing) whatever the order of the whole log would report, so that the
parent then records that chunk row by row for the exact findings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from audit_cli.rows import Row
from ledger import contracts

INTERNAL_LEDGERS = ("account:", "session:")
"""The ledgers whose balance never goes below zero (the house and wallets may)."""

Find = Callable[[str, str, Row], None]
"""Reports a finding: (check, message, row)."""


class MovementRequest(NamedTuple):
    """A movement and the request that made it (checked against the request records once
    the whole log is read)."""

    row_id: int
    originator_id: str
    version: int
    request_id: str
    digest: str
    seq: int


class RecordedBalance(NamedTuple):
    """The balance an aggregate's newest event records, and that event's row id."""

    balance: int
    row_id: int


class Books:
    """Ledger balances rebuilt from the movements, with what the cross-checks need.

    ``relative`` books are a chunk's, recorded from an unknown start: a payout below zero
    is then not a finding but the ledger's low (``lows``), and the sessions money moved
    into are kept (``into``) for :meth:`absorb` to check against sessions closed before."""

    def __init__(self, *, relative: bool = False) -> None:
        self.relative = relative
        self.ledgers: dict[str, int] = {}
        """Ledger -> balance (net movement, in the order the ledgers are first moved)."""
        self.lows: dict[str, int] = {}
        """(relative) Account or session ledger -> its lowest running balance right after
        it paid out."""
        self.currencies: dict[str, str] = {}
        self.players: dict[str, str] = {}
        """``account:<id>`` -> the player id its opening event names."""
        self.requests: dict[str, str] = {}
        """Request record id -> its body digest."""
        self.sessions: set[str] = set()
        self.closed: set[str] = set()
        self.into: set[str] = set()
        """(relative) Sessions money moved into (before any close of theirs here)."""
        self.balances: dict[str, RecordedBalance] = {}
        self.movements: list[MovementRequest] = []

    def record(
        self, row: Row, x: dict[str, Any], where: str, find: Find, *, named_requests: bool
    ) -> None:
        """Record one validly signed row's fields (``x``, as ``verify._extract`` reads
        them). ``named_requests``: every movement must name its request (since the
        genesis)."""
        topic, oid = row.topic, row.originator_id
        if topic == contracts.ACCOUNT_OPENED and isinstance(x.get("player_id"), str):
            self.players[f"account:{oid}"] = x["player_id"]
            return
        if topic == contracts.REQUEST_ACCEPTED:
            self.requests[oid] = str(x.get("digest"))
            return
        if topic == contracts.SESSION_OPENED:
            self.sessions.add(oid)
        elif topic == contracts.SESSION_CLOSED:
            if oid in self.closed:
                find("books-double-close", f"{where}: session closed twice", row)
            self.closed.add(oid)
        mv = x.get("movement")
        if isinstance(mv, dict):
            self._movement(row, mv, where, find, named_requests)
        if "balance" in x:
            try:
                self.balances[oid] = RecordedBalance(int(x["balance"]), row.notification_id)
            except (TypeError, ValueError, OverflowError):
                find("books-balance", f"{where}: the recorded balance is not an integer", row)

    def _movement(
        self, row: Row, mv: dict[str, Any], where: str, find: Find, named_requests: bool
    ) -> None:
        amount = mv.get("amount")
        src, dst, cur = mv.get("source"), mv.get("destination"), mv.get("currency")
        if type(amount) is not int or amount <= 0 or type(src) is not str or type(dst) is not str:
            find("books-movement", f"{where}: malformed movement {mv}", row)
            return
        if named_requests:
            req = mv.get("request")
            if not isinstance(req, dict) or not req.get("id") or type(req.get("seq")) is not int:
                find("books-request", f"{where}: the movement names no request", row)
            else:
                self.movements.append(
                    MovementRequest(
                        row.notification_id,
                        row.originator_id,
                        row.version,
                        str(req["id"]),
                        str(req.get("digest")),
                        req["seq"],
                    )
                )
        currencies = self.currencies
        for name in (src, dst):
            if currencies.setdefault(name, str(cur)) != cur:
                find("books-currency", f"{where}: {name} moves in two currencies", row)
        ledgers = self.ledgers
        ledgers[src] = ledgers.get(src, 0) - amount
        ledgers[dst] = ledgers.get(dst, 0) + amount
        if dst.startswith("session:"):
            sid = dst.split(":", 1)[1]
            if sid in self.closed:
                find("books-closed-session", f"{where}: money moved into closed {dst}", row)
            elif self.relative:
                self.into.add(sid)
        if src.startswith(INTERNAL_LEDGERS):
            low = ledgers[src]
            if not self.relative:
                if low < 0:
                    find("books-negative", f"{where}: {src} below zero ({low})", row)
            elif low < self.lows.get(src, low + 1):
                self.lows[src] = low

    def absorb(self, chunk: Books) -> bool:
        """Add a chunk's relative books to these, or return False and change nothing when
        that would report anything (a session closed twice or moved into once closed, a
        ledger in two currencies, an account or session below zero)."""
        closed = self.closed
        if not closed.isdisjoint(chunk.closed) or not closed.isdisjoint(chunk.into):
            return False
        known = self.currencies
        for name, cur in chunk.currencies.items():
            if known.get(name, cur) != cur:
                return False
        ledgers = self.ledgers
        for name, low in chunk.lows.items():
            if ledgers.get(name, 0) + low < 0:
                return False
        self.players.update(chunk.players)
        self.requests.update(chunk.requests)
        self.sessions.update(chunk.sessions)
        closed.update(chunk.closed)
        for name, cur in chunk.currencies.items():
            known.setdefault(name, cur)
        for name, delta in chunk.ledgers.items():
            ledgers[name] = ledgers.get(name, 0) + delta
        self.balances.update(chunk.balances)
        self.movements.extend(chunk.movements)
        return True

    def findings(self, find: Callable[[str, str, Row | None], None]) -> None:
        """Once the whole log is recorded: recorded balances equal the replayed ones, each
        currency sums to zero, every session ledger is a session of the log (zero once
        closed), and every movement's request record exists with its body digest, each
        request numbering its movements 1, 2, ... once."""
        replayed = {
            name.split(":", 1)[1]: bal
            for name, bal in self.ledgers.items()
            if name.startswith(INTERNAL_LEDGERS)
        }
        for oid, (bal, n) in self.balances.items():
            if replayed.get(oid, 0) != bal:
                find(
                    "books-balance",
                    f"aggregate {oid}: recorded balance {bal} (row {n}) "
                    f"but movements give {replayed.get(oid, 0)}",
                    None,
                )
        totals: dict[str, int] = {}
        for name, bal in self.ledgers.items():
            cur = self.currencies.get(name, "?")
            totals[cur] = totals.get(cur, 0) + bal
        for cur, total in totals.items():
            if total != 0:
                find("books-sum", f"movements in {cur} sum to {total}, not 0", None)
        for name, bal in self.ledgers.items():
            if not name.startswith("session:"):
                continue
            sid = name.split(":", 1)[1]
            if sid not in self.sessions:
                message = f"{name} holds {bal} but the log has no such session"
                find("books-session", message, None)
            elif sid in self.closed and bal != 0:
                find("books-session", f"closed {name} still holds {bal}, not 0", None)
        # A second movement 1 is a request that moved money twice (its record deleted and
        # the request retried); its movements may be saved in any order.
        numbers: dict[str, list[int]] = {}
        requests = self.requests
        for n, oid, version, rid, digest, seq in self.movements:
            found = requests.get(rid)
            if found != digest:
                row = Row(n, oid, version, "", b"")
                if found is None:
                    message = f"row {n}: its request record {rid} is not in the log"
                else:
                    message = f"row {n}: request {rid} has another body digest"
                find("books-request", message, row)
            seqs = numbers.get(rid)
            if seqs is None:
                numbers[rid] = [seq]
            else:
                seqs.append(seq)
        for rid, seqs in numbers.items():
            if len(seqs) == 1 and seqs[0] == 1:
                continue  # (most requests move money once)
            if sorted(seqs) != list(range(1, len(seqs) + 1)):
                find(
                    "books-request",
                    f"request {rid} numbered its movements {sorted(seqs)}: "
                    "it moved money more than once",
                    None,
                )
