"""Typed ledger errors: each has a stable ``code`` and carries the ids it concerns."""

from __future__ import annotations

from typing import Any


class LedgerError(Exception):
    """Base of every business-rule error the ledger raises; nothing was written."""

    code = "ledger-error"
    status = 400

    def __init__(self, message: str, **ids: Any) -> None:
        super().__init__(message)
        self.message = message
        self.ids = {k: str(v) for k, v in ids.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        # The error's code and message win over any id of the same name.
        return {**self.ids, "code": self.code, "message": self.message}


class InvalidAmount(LedgerError):
    code = "invalid-amount"
    status = 422


class InvalidRequest(LedgerError):
    code = "invalid-request"
    status = 422


class CurrencyMismatch(LedgerError):
    code = "currency-mismatch"
    status = 422


class InsufficientFunds(LedgerError):
    code = "insufficient-funds"
    status = 409


class AccountNotFound(LedgerError):
    code = "account-not-found"
    status = 404


class AccountExists(LedgerError):
    code = "account-exists"
    status = 409


class SessionNotFound(LedgerError):
    code = "session-not-found"
    status = 404


class SessionClosed(LedgerError):
    code = "session-closed"
    status = 409


class SessionBusy(LedgerError):
    """A round is open in the session: no new round, no close."""

    code = "session-busy"
    status = 409


class RoundNotFound(LedgerError):
    code = "round-not-found"
    status = 404


class RoundNotOpen(LedgerError):
    code = "round-not-open"
    status = 409


class IdempotencyConflict(LedgerError):
    """The same request id was used before with a different body."""

    code = "idempotency-conflict"
    status = 409


class Contention(LedgerError):
    """Too many concurrent writers on the same aggregate; safe to retry."""

    code = "contention"
    status = 503


class TamperDetected(Exception):
    """A stored event failed its signature or hash-chain check on read."""

    code = "tamper-detected"
