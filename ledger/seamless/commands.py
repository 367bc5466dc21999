"""Commands of seamless mode. ``name`` and the bodies are wire format (request records).

Only :class:`OpenSeamlessSession` comes from outside (the operator's route); the others
are issued by :mod:`ledger.seamless.gate` and :mod:`ledger.seamless.outbox` around the
wallet calls, each committed (in a group-commit batch with other commands) before the
wallet is called or after it answered, so no transaction waits on the wallet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ledger.commands import Command, SessionCommand
from ledger.errors import InvalidRequest
from ledger.money import check_currency
from ledger.results import (
    DeliveriesRecorded,
    SeamlessSessionOpened,
    StakeFinished,
    StakeIntended,
)

_TOKEN_MAX = 100


@dataclass(frozen=True)
class OpenSeamlessSession(Command[SeamlessSessionOpened]):
    """A session on the operator's wallet: the player's token there and a currency."""

    name: ClassVar[str] = "open_seamless_session"
    operator: str
    player_token: str
    currency: str

    def __post_init__(self) -> None:
        for what in ("operator", "player_token"):
            value = getattr(self, what)
            if not isinstance(value, str) or not 0 < len(value) <= _TOKEN_MAX:
                raise InvalidRequest(
                    f"{what.replace('_', ' ')} must be a non-empty string of at most"
                    f" {_TOKEN_MAX} characters"
                )
        check_currency(self.currency)


@dataclass(frozen=True)
class IntendStake(SessionCommand[StakeIntended]):
    """Record that the debit ``transaction`` is about to be sent for ``request``."""

    name: ClassVar[str] = "seamless_intend_stake"
    request: str
    transaction: dict[str, Any]
    digest: str = ""  # of the staking command as it arrived (a retry must match it)

    def body(self) -> dict[str, Any]:
        """The request's identity: the staking command as it arrived, not the debit a
        probe derived for it now. A retry of the request therefore carries the intent
        record's digest and gets the recorded intent (with its transaction) back; another
        command under the same request id is an :class:`IdempotencyConflict`."""
        return {"session_id": self.session_id, "request": self.request, "digest": self.digest}


@dataclass(frozen=True)
class FinishStake(SessionCommand[StakeFinished]):
    """Record the debit's outcome; if accepted, run the command that staked (``inner``:
    its name and body) with that stake authorised, in the same transaction."""

    name: ClassVar[str] = "seamless_finish_stake"
    transaction_id: str
    outcome: str
    cause: str | None = None
    error: str | None = None
    wallet_balance: int | None = None
    inner: Command[Any] | None = None

    def body(self) -> dict[str, Any]:
        doc = super().body()
        inner = self.inner
        doc["inner"] = None if inner is None else {"name": inner.name, "body": inner.body()}
        return doc


@dataclass(frozen=True)
class RecordDeliveries(Command[DeliveriesRecorded]):
    """The wallet acknowledged (or refused for good) these queued credits and rollbacks:
    each ``{transaction_id, session_id, call, state, attempts, cause, wallet_balance}``."""

    name: ClassVar[str] = "seamless_record_deliveries"
    deliveries: tuple[dict[str, Any], ...]

    def body(self) -> dict[str, Any]:
        return {"deliveries": [dict(d) for d in self.deliveries]}
