"""The simulated wallet's books: SQLite tables of players and of transactions, the
transaction id as primary key so each call is applied at most once whatever the deliveries.

The operator's system, not croupier's log (see :mod:`wallet.sim`): plain rows, updated in
place. WAL with ``synchronous=NORMAL``: durable across a crash of the process (what the
fault tests kill), not across a power cut; fine for a simulator.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from wallet.protocol import (
    BalanceRequest,
    CreditRequest,
    DebitRequest,
    ErrorCode,
    OriginalResult,
    RollbackRequest,
    Status,
    TransactionRequest,
    WalletResponse,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (
    token TEXT PRIMARY KEY,
    currency TEXT NOT NULL,
    balance INTEGER NOT NULL CHECK (balance >= 0)
);
CREATE TABLE IF NOT EXISTS transactions (
    transaction_id TEXT PRIMARY KEY,
    call TEXT NOT NULL,
    player_token TEXT NOT NULL,
    game_code TEXT NOT NULL,
    stage TEXT NOT NULL,
    amount INTEGER NOT NULL,
    currency TEXT NOT NULL,
    reference TEXT,
    digest TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    balance INTEGER,
    -- applied | refused | rolled-back (a debit cancelled, possibly before it arrived)
    state TEXT NOT NULL,
    deliveries INTEGER NOT NULL DEFAULT 1
);
"""


@dataclass(frozen=True)
class Player:
    token: str
    currency: str
    balance: int


@dataclass(frozen=True)
class Row:
    transaction_id: str
    call: str
    player_token: str
    amount: int
    status: str
    error: str | None
    balance: int | None
    state: str
    deliveries: int


def _digest(r: TransactionRequest) -> str:
    """What makes two deliveries the same transaction (not the request id or time)."""
    ref = getattr(r, "reference_transaction_id", None)
    text = f"{r.player_token}|{r.game_code}|{r.stage}|{r.amount}|{r.currency}|{ref}"
    return hashlib.sha256(text.encode()).hexdigest()


class WalletBooks:
    """Balances and transactions in one SQLite file; every method is one transaction."""

    def __init__(self, path: Path | str) -> None:
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    # -- admin ----------------------------------------------------------------------------

    def set_player(self, token: str, currency: str, balance: int) -> Player:
        if balance < 0:
            raise ValueError("a balance is never negative")
        with self._lock:
            self._db.execute(
                "INSERT INTO players VALUES (?, ?, ?) ON CONFLICT (token) DO UPDATE"
                " SET currency = excluded.currency, balance = excluded.balance",
                (token, currency, balance),
            )
        return Player(token, currency, balance)

    def player(self, token: str) -> Player | None:
        with self._lock:
            row = self._db.execute(
                "SELECT token, currency, balance FROM players WHERE token = ?", (token,)
            ).fetchone()
        return Player(*row) if row else None

    def transactions(self) -> list[Row]:
        with self._lock:
            rows = self._db.execute(
                "SELECT transaction_id, call, player_token, amount, status, error, balance,"
                " state, deliveries FROM transactions ORDER BY rowid"
            ).fetchall()
        return [Row(*r) for r in rows]

    # -- the calls ------------------------------------------------------------------------

    def balance(self, r: BalanceRequest) -> WalletResponse:
        p = self.player(r.player_token)
        if p is None:
            return _error(r, ErrorCode.UNKNOWN_PLAYER, None)
        if p.currency != r.currency:
            return _error(r, ErrorCode.CURRENCY_MISMATCH, p)
        return WalletResponse(
            status=Status.OK, request_id=r.request_id, balance=p.balance, currency=p.currency
        )

    def apply(self, r: TransactionRequest) -> WalletResponse:
        """Apply a debit, credit or rollback at most once (by its transaction id)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                answer = self._apply(r)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return answer

    def _apply(self, r: TransactionRequest) -> WalletResponse:
        seen = self._db.execute(
            "SELECT digest, status, error, balance, state, call FROM transactions"
            " WHERE transaction_id = ?",
            (str(r.transaction_id),),
        ).fetchone()
        p = self._player(r.player_token)
        if seen is not None:
            self._db.execute(
                "UPDATE transactions SET deliveries = deliveries + 1 WHERE transaction_id = ?",
                (str(r.transaction_id),),
            )
            digest, status, error, balance, state, call = seen
            if isinstance(r, DebitRequest) and call == "debit" and state == "rolled-back":
                return _error(r, ErrorCode.ROLLED_BACK, p, "rolled back before or after it arrived")
            if digest != _digest(r):
                return _error(r, ErrorCode.TRANSACTION_CONFLICT, p, "same id, different body")
            original = OriginalResult(
                status=Status(status), error=ErrorCode(error) if error else None, balance=balance
            )
            return _error(r, ErrorCode.DUPLICATE_TRANSACTION, p, original=original)
        if isinstance(r, RollbackRequest):
            return self._rollback(r, p)
        if p is None:
            return self._record(r, _error(r, ErrorCode.UNKNOWN_PLAYER, None), "refused")
        if p.currency != r.currency:
            return self._record(r, _error(r, ErrorCode.CURRENCY_MISMATCH, p), "refused")
        if isinstance(r, DebitRequest):
            if p.balance < r.amount:
                return self._record(r, _error(r, ErrorCode.INSUFFICIENT_FUNDS, p), "refused")
            return self._record(r, self._move(r, p, -r.amount), "applied")
        assert isinstance(r, CreditRequest)
        return self._record(r, self._move(r, p, r.amount), "applied")

    def _rollback(self, r: RollbackRequest, p: Player | None) -> WalletResponse:
        ref = str(r.reference_transaction_id)
        debit = self._db.execute(
            "SELECT call, player_token, amount, state FROM transactions WHERE transaction_id = ?",
            (ref,),
        ).fetchone()
        if debit is None:
            # Remember the cancelled debit so that, if it arrives late, it is refused.
            self._db.execute(
                "INSERT INTO transactions VALUES (?, 'debit', ?, ?, ?, ?, ?, NULL, '', 'error',"
                " 'rolled-back', NULL, 'rolled-back', 0)",
                (ref, r.player_token, r.game_code, "(unseen)", r.amount, r.currency),
            )
            answer = _error(r, ErrorCode.UNKNOWN_TRANSACTION, p, "remembered: a late debit fails")
            return self._record(r, answer, "applied")
        call, token, amount, state = debit
        if call != "debit" or token != r.player_token or amount != r.amount:
            answer = _error(r, ErrorCode.TRANSACTION_CONFLICT, p, "not this player's debit")
            return self._record(r, answer, "refused")
        self._db.execute(
            "UPDATE transactions SET state = 'rolled-back' WHERE transaction_id = ?", (ref,)
        )
        if state == "applied":
            assert p is not None
            return self._record(r, self._move(r, p, amount), "applied")
        # A refused debit (nothing taken) or one already rolled back: nothing to give back.
        return self._record(r, _ok(r, p), "applied")

    def _player(self, token: str) -> Player | None:
        row = self._db.execute(
            "SELECT token, currency, balance FROM players WHERE token = ?", (token,)
        ).fetchone()
        return Player(*row) if row else None

    def _move(self, r: TransactionRequest, p: Player, delta: int) -> WalletResponse:
        balance = p.balance + delta
        self._db.execute("UPDATE players SET balance = ? WHERE token = ?", (balance, p.token))
        return _ok(r, Player(p.token, p.currency, balance))

    def _record(self, r: TransactionRequest, answer: WalletResponse, state: str) -> WalletResponse:
        ref = getattr(r, "reference_transaction_id", None)
        self._db.execute(
            "INSERT INTO transactions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
            (
                str(r.transaction_id),
                _call(r),
                r.player_token,
                r.game_code,
                r.stage,
                r.amount,
                r.currency,
                str(ref) if ref else None,
                _digest(r),
                answer.status.value,
                answer.error.value if answer.error else None,
                answer.balance,
                state,
            ),
        )
        return answer


def _call(r: TransactionRequest) -> str:
    if isinstance(r, DebitRequest):
        return "debit"
    return "credit" if isinstance(r, CreditRequest) else "rollback"


def _ok(r: TransactionRequest, p: Player | None) -> WalletResponse:
    return WalletResponse(
        status=Status.OK,
        request_id=r.request_id,
        transaction_id=r.transaction_id,
        amount=r.amount,
        balance=p.balance if p else None,
        currency=r.currency,
    )


def _error(
    r: BalanceRequest | TransactionRequest,
    code: ErrorCode,
    p: Player | None,
    message: str = "",
    original: OriginalResult | None = None,
) -> WalletResponse:
    return WalletResponse(
        status=Status.ERROR,
        request_id=r.request_id,
        transaction_id=getattr(r, "transaction_id", None),
        amount=getattr(r, "amount", None),
        balance=p.balance if p else None,
        currency=p.currency if p else None,
        error=code,
        message=message or str(code),
        original=original,
    )
