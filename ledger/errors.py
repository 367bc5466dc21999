"""Typed ledger errors: each has a stable ``code`` and carries the ids it concerns."""

from __future__ import annotations

from typing import Any


class LedgerError(Exception):
    """Base of every business-rule error the ledger raises; nothing was written."""

    code = "ledger-error"

    def __init__(self, message: str, **ids: Any) -> None:
        super().__init__(message)
        self.message = message
        self.ids = {k: str(v) for k, v in ids.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        # The error's code and message win over any id of the same name.
        return {**self.ids, "code": self.code, "message": self.message}


class InvalidAmount(LedgerError):
    code = "invalid-amount"


class InvalidRequest(LedgerError):
    code = "invalid-request"


class CurrencyMismatch(LedgerError):
    code = "currency-mismatch"


class InsufficientFunds(LedgerError):
    code = "insufficient-funds"


class AccountNotFound(LedgerError):
    code = "account-not-found"


class AccountExists(LedgerError):
    code = "account-exists"


class SessionNotFound(LedgerError):
    code = "session-not-found"


class SessionClosed(LedgerError):
    code = "session-closed"


class SessionBusy(LedgerError):
    """A round is open in the session: no new round, no close."""

    code = "session-busy"


class RoundNotFound(LedgerError):
    code = "round-not-found"


class RoundNotOpen(LedgerError):
    """No round is open in the session, or the round named has already ended."""

    code = "round-not-open"


class DecisionNotForThisGame(LedgerError):
    """The session's open round is of another game than the decision sent."""

    code = "decision-not-for-this-game"


class IdempotencyConflict(LedgerError):
    """The same request id was used before with a different body."""

    code = "idempotency-conflict"


class Contention(LedgerError):
    """Too many concurrent writers on the same aggregate; safe to retry."""

    code = "contention"


class StorageUnavailable(LedgerError):
    """The store failed for a reason other than a version conflict (connection lost,
    disk full, database locked past its timeout). Nothing was written by this command;
    retrying with the same request id is safe once the store is back."""

    code = "storage-unavailable"


class PositionNotReached(LedgerError):
    """A read asked for a log position (``at_least``) beyond the log's head: no command
    has written it (a command's ``X-Log-Position`` is at or below the head once it is
    answered), so nothing is answered from a view older than asked."""

    code = "position-not-reached"


class AutoCompletionFailed(LedgerError):
    """A round's default actions did not end it: a game bug, never a player's fault."""

    code = "auto-completion-failed"


class TamperDetected(Exception):
    """A stored event failed its signature or hash-chain check on read."""

    code = "tamper-detected"


class ChatRefused(LedgerError):
    """Base of the table chat's refusals (ledger/chat.py); never raised itself."""

    code = "chat-refused"


class ChatMessageInvalid(ChatRefused):
    """Empty, too long, or with control characters: plain text of a bounded length."""

    code = "chat-message-invalid"


class ChatMuted(ChatRefused):
    """The operator muted this player's chat (until ``until``)."""

    code = "chat-muted"


class ChatBanned(ChatRefused):
    """The operator banned this player from the chat."""

    code = "chat-banned"


class ChatRateLimited(ChatRefused):
    """Too many messages in the chat window; ``retry_after`` seconds until the next."""

    code = "chat-rate-limited"

    def __init__(self, message: str, retry_after: int, **ids: object) -> None:
        super().__init__(message, **ids)
        self.retry_after = retry_after


class ChatMessageNotFound(ChatRefused):
    """A hide names a message the player never sent at that table."""

    code = "chat-message-not-found"
