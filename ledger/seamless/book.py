"""Every wallet transaction croupier sent, rebuilt from the log: the outbox's pending
calls, the debits whose outcome is missing, and the reconciliation report.

Fed event by event in notification order, from the raw log (``audit-cli wallet
reconcile``) or from the application's store: nothing about the wallet is kept anywhere
but in the log. A running application keeps in memory only what is open (debits without
an outcome, credits and rollbacks not yet delivered: bounded by the work in flight, not by
the history), followed from the log by :class:`OpenItems` for the outbox and the gate;
the reconciliation's pages are read from the wallet view (:func:`listing`,
:mod:`ledger.readside.wallet`), which folds the log with this book's rules.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ledger import contracts
from ledger.seamless.entries import TOPICS, Entry, State, _instant, _time, in_range

if TYPE_CHECKING:
    from ledger.ports import LogApp

__all__ = [
    "TOPICS",
    "Entry",
    "OpenItems",
    "State",
    "WalletBook",
    "_instant",
    "in_range",
    "listing",
]


class WalletBook:
    """The wallet transactions, fed event by event in notification order.

    By default every transaction is kept (``audit-cli wallet reconcile``). ``open_only``:
    a transaction is dropped once it has its outcome or its delivery, so the book holds
    the open ones only. ``keep``: a transaction is kept only if ``keep(entry)`` says so
    when it is first seen (a page of the reconciliation). ``operator_of`` (with
    ``operators_max``): the session -> operator index keeps at most that many sessions and
    asks ``operator_of(session_id)`` for one it no longer holds."""

    def __init__(
        self,
        *,
        open_only: bool = False,
        keep: Callable[[Entry], bool] | None = None,
        operator_of: Callable[[str], str] | None = None,
        operators_max: int | None = None,
    ) -> None:
        self.last_seq = 0
        self.open_only, self._keep = open_only, keep
        self._operator_of, self._operators_max = operator_of, operators_max
        self.operators: OrderedDict[str, str] = OrderedDict()  # seamless session -> operator
        self.entries: dict[str, Entry] = {}  # transaction id -> its entry, oldest first
        # Kept as the log is fed, so the outbox's poll costs what is pending, not the history.
        self._undelivered: dict[str, None] = {}
        self._unresolved: dict[str, None] = {}

    @property
    def order(self) -> list[str]:
        """The transaction ids, oldest first."""
        return list(self.entries)

    # -- feeding -------------------------------------------------------------------------

    def feed_payload(self, seq: int, originator_id: str, topic: str, payload: bytes) -> None:
        self.last_seq = max(self.last_seq, seq)
        if topic not in TOPICS:
            return
        try:
            doc = json.loads(payload)
        except ValueError:
            return
        if isinstance(doc, dict):
            self.feed(seq, originator_id, topic, doc)

    def feed(self, seq: int, originator_id: str, topic: str, doc: dict[str, Any]) -> None:
        self.last_seq = max(self.last_seq, seq)
        if topic == contracts.SESSION_OPENED:
            if isinstance(doc.get("operator"), str):
                self._remember(originator_id, doc["operator"])
        elif topic == contracts.SESSION_STAKE_INTENDED:
            entry = self._add(seq, originator_id, doc, State.PENDING_OUTCOME)
            if entry.transaction_id in self.entries:
                self._unresolved[entry.transaction_id] = None
        elif topic == contracts.SESSION_WALLET_CALL_QUEUED:
            entry = self._add(seq, originator_id, doc, State.PENDING_DELIVERY)
            if entry.transaction_id in self.entries:
                self._undelivered[entry.transaction_id] = None
            ref = entry.reference_transaction_id if entry.call == "rollback" else None
            debit = self.entries.get(ref or "")
            if debit is not None and debit.state in (State.ACCEPTED, State.UNKNOWN):
                debit.state = State.ROLLBACK_PENDING
        elif topic == contracts.SESSION_STAKE_RESOLVED:
            tid = str(doc.get("transaction_id"))
            found = self.entries.get(tid)
            self._unresolved.pop(tid, None)
            if found is not None and found.state == State.PENDING_OUTCOME:
                outcome = str(doc.get("outcome"))
                found.state = {"accepted": State.ACCEPTED, "refused": State.REFUSED}.get(
                    outcome, State.UNKNOWN
                )
                found.cause, found.outcome = doc.get("cause"), outcome
            self._close(tid)
        elif topic == contracts.WALLET_DELIVERED:
            tid = str(doc.get("transaction_id"))
            sent = self.entries.get(tid)
            self._undelivered.pop(tid, None)
            if sent is None or sent.state != State.PENDING_DELIVERY:
                return
            acknowledged = doc.get("state") == "acknowledged"
            sent.state = State.REJECTED
            if acknowledged:
                sent.state = State.ACCEPTED if sent.call == "credit" else State.ROLLED_BACK
            sent.cause, sent.attempts = doc.get("cause"), doc.get("attempts")
            debit = self.entries.get(sent.reference_transaction_id or "")
            if sent.call == "rollback" and debit is not None:
                debit.state = State.ROLLED_BACK if acknowledged else State.REJECTED
            self._close(tid)

    def _close(self, tid: str) -> None:
        """An open-only book forgets a transaction once nothing is left open about it."""
        if self.open_only and tid not in self._unresolved and tid not in self._undelivered:
            self.entries.pop(tid, None)

    def _remember(self, session_id: str, operator: str) -> None:
        self.operators[session_id] = operator
        self.operators.move_to_end(session_id)
        if self._operators_max is not None and len(self.operators) > self._operators_max:
            self.operators.popitem(last=False)

    def _operator(self, session_id: str) -> str:
        found = self.operators.get(session_id)
        if found is None and self._operator_of is not None:
            found = self._operator_of(session_id)
            if found:
                self._remember(session_id, found)
        return found or ""

    def _add(self, seq: int, session_id: str, doc: dict[str, Any], state: str) -> Entry:
        t = doc.get("transaction") or {}
        entry = Entry(
            seq=seq,
            time=_time(doc),
            transaction_id=str(t.get("transaction_id")),
            call=str(t.get("call")),
            operator=self._operator(session_id),
            session_id=session_id,
            player_token=str(t.get("player_token")),
            game_code=str(t.get("game_code")),
            stage=str(t.get("stage")),
            amount=int(t.get("amount") or 0),
            currency=str(t.get("currency")),
            reference_transaction_id=t.get("reference_transaction_id"),
            state=state,
            transaction=dict(t),
        )
        known = entry.transaction_id in self.entries
        if known or self._keep is None or self._keep(entry):
            self.entries[entry.transaction_id] = entry
        return entry

    # -- reading -------------------------------------------------------------------------

    def pending_deliveries(self) -> list[Entry]:
        """The outbox: credits and rollbacks queued without a delivery recorded."""
        found = (self.entries.get(t) for t in self._undelivered)
        return [e for e in found if e is not None and e.state == State.PENDING_DELIVERY]

    def pending_outcomes(self) -> list[Entry]:
        """Debits whose intent is recorded without an outcome."""
        found = (self.entries.get(t) for t in self._unresolved)
        return [e for e in found if e is not None and e.state == State.PENDING_OUTCOME]

    def listed(
        self,
        operator: str | None = None,
        start: str | None = None,
        end: str | None = None,
        after: int = 0,
    ) -> list[Entry]:
        """Every transaction croupier sent, oldest first. Filters: operator; time from
        ``start`` to ``end`` inclusive (ISO 8601; a bare day as ``end``: all of it); the
        cursor ``after`` (the last ``seq`` seen)."""
        return [e for e in self.entries.values() if _listed(e, operator, start, end, after)]


def _listed(e: Entry, operator: str | None, start: str | None, end: str | None, after: int) -> bool:
    if operator is not None and e.operator != operator:
        return False
    return e.seq > after and not ((start or end) and not in_range(e.time, start, end))


def totals(entries: list[Entry]) -> dict[str, Any]:
    """Per round and per player: what the wallet has taken and paid by croupier's log
    (``debited``: accepted debits not rolled back; ``credited``: acknowledged credits;
    ``pending``: credits and rollbacks still to deliver; ``net`` = credited - debited)."""

    def blank() -> dict[str, int]:
        return {"debited": 0, "credited": 0, "rolled_back": 0, "pending": 0, "net": 0}

    rounds: dict[str, dict[str, int]] = defaultdict(blank)
    players: dict[str, dict[str, int]] = defaultdict(blank)
    for e in entries:
        for bucket in (rounds[e.game_code], players[f"{e.operator}:{e.player_token}"]):
            if e.call == "debit" and e.state in (State.ACCEPTED, State.ROLLBACK_PENDING):
                bucket["debited"] += e.amount
            elif e.call == "debit" and e.state == State.ROLLED_BACK:
                bucket["rolled_back"] += e.amount
            elif e.call == "credit" and e.state == State.ACCEPTED:
                bucket["credited"] += e.amount
            elif e.call in ("credit", "rollback") and e.state == State.PENDING_DELIVERY:
                bucket["pending"] += e.amount
            bucket["net"] = bucket["credited"] - bucket["debited"]
    return {"rounds": dict(rounds), "players": dict(players)}


def expected_round_nets(entries: list[Entry]) -> dict[str, int]:
    """What each seamless round must have moved in the wallet's favour of the player by its
    wallet transactions: minus every accepted debit, plus every credit queued, plus every
    rollback of an accepted debit (a void's refund). ``audit-cli verify --balances`` holds
    this against the round's movements."""
    by_id = {e.transaction_id: e for e in entries}
    nets: dict[str, int] = defaultdict(int)
    for e in entries:
        if e.call == "debit" and e.outcome == "accepted":
            nets[e.game_code] -= e.amount
        elif e.call == "credit":
            nets[e.game_code] += e.amount
        elif e.call == "rollback":
            debit = by_id.get(e.reference_transaction_id or "")
            if debit is not None and debit.outcome == "accepted":
                nets[e.game_code] += e.amount
    return dict(nets)


def _reader(app: LogApp) -> Callable[[str], str]:
    """A seamless session's operator, read from its opening event in the store."""

    def operator_of(session_id: str) -> str:
        try:
            sid = UUID(session_id)
        except ValueError:
            return ""
        for e in app.events.get(sid, lte=1):
            return str(getattr(e, "operator", None) or "")
        return ""

    return operator_of


def _operators_max(app: LogApp) -> int:
    # A share of the memory budget (about 250 bytes a session): 4,096 at the default 64 MiB.
    return max(1_000, app.settings.cache_budget_mb * 64)


def _book(app: LogApp, **kwargs: Any) -> WalletBook:
    return WalletBook(operator_of=_reader(app), operators_max=_operators_max(app), **kwargs)


class OpenItems:
    """The open wallet transactions of one application (the outbox's pending deliveries,
    the debits without an outcome), kept up to date from its log; nothing else is kept.
    One per application, composed with its seamless mode (:mod:`ledger.seamless.compose`)
    and shared by its gate and its outbox."""

    def __init__(self, app: LogApp) -> None:
        self.app = app
        self.book = _book(app, open_only=True)
        self.lock = threading.Lock()

    def catch_up(self) -> WalletBook:
        """The open transactions, brought up to date from the log."""
        from ledger.checkpoints import feed_opened

        with self.lock:
            self.book.last_seq = feed_opened(
                self.app, self.book.last_seq, self.book.feed_payload, TOPICS
            )
        return self.book


def listing(
    app: LogApp,
    operator: str | None = None,
    start: str | None = None,
    end: str | None = None,
    after: int = 0,
    limit: int | None = None,
    at_least: int | None = None,
) -> list[Entry]:
    """One page of the reconciliation (:meth:`WalletBook.listed`), read from the wallet
    view (:mod:`ledger.readside.wallet`) brought to ``at_least`` (the log's head when
    None): a page costs what it returns."""
    return page(app, operator, start, end, after, limit, at_least)[0]


def wallet_book(app: LogApp) -> WalletBook:
    """Every wallet transaction of the application, read from its log now (a full
    reconciliation; the running application holds none of it: :class:`OpenItems`)."""
    from ledger.checkpoints import feed_opened

    book = _book(app)
    book.last_seq = feed_opened(app, 0, book.feed_payload, TOPICS)
    return book


from ledger.readside.wallet import page  # noqa: E402  # the view reads these entries
