"""The seamless-wallet wire protocol: the four calls croupier makes to an operator's wallet,
their JSON bodies, the typed error codes, and how transaction ids are derived.

Calls: ``POST {base_url}/{call}`` for ``balance``, ``debit``, ``credit`` and ``rollback``;
the body is one JSON object (the request models below), the answer one JSON object
(:class:`WalletResponse`). Both bodies are signed, HMAC-SHA256 over the exact bytes with
the operator's shared key (:mod:`wallet.signing`): ``X-Croupier-Signature: sha256=<hex>`` on
the request, ``X-Wallet-Signature: sha256=<hex>`` on the answer. An unsigned, mis-signed or
malformed answer is a failure and is never trusted.

Money is ``int`` minor units of an ISO 4217 ``currency``; a float is refused. Every business
answer (accepted or refused) is HTTP 200; a malformed request is 400 and a bad signature 401,
both with a signed :class:`WalletResponse`; anything else (5xx, timeouts) is not an answer.

Transaction ids: ``uuid5(NAMESPACE, f"{game_code}/{stage}")``. The game code names the round,
the stage the money movement within it: ``main``, ``side:<bet>`` (e.g. ``side:21+3``),
``raise`` (Red Dog's raise, ``raise:<decision number>``), ``double``, ``split``,
``insurance`` (debits, optionally ``:<hand>``), ``win`` and
``cash-out`` (credits, optionally ``:<hand>``), ``rollback:<debit transaction id>``. A live
table's round is shared by its players: its stages name the seat's session and a sequence
number (``main:3.<session hex>``, ``double:1.7.<session hex>``; README "Seamless wallet"). So every
retry of a call, by any process, after any restart, carries the same id, and the wallet
applies it at most once. A rollback carries the debit's id as ``reference_transaction_id``.

Error codes (``error`` when ``status`` is ``error``):

- ``insufficient-funds``, ``unknown-player``, ``currency-mismatch``: refused, nothing moved.
- ``invalid-signature`` (HTTP 401), ``invalid-request`` (HTTP 400): refused, nothing moved.
- ``duplicate-transaction``: this id was seen before; ``original`` holds the first answer
  (status, error, balance). A duplicate of an accepted call is a success.
- ``transaction-conflict``: this id was seen before with a different body; nothing moved.
- ``unknown-transaction``: a rollback of a debit the wallet never saw. The rollback is
  acknowledged and remembered: a debit with that id arriving later is refused.
- ``rolled-back``: a debit whose id was already rolled back; refused, nothing moved.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, model_validator

# Wire format: fixed forever (changing it would change every transaction id).
NAMESPACE = uuid.UUID("6f0c5d1e-8a4b-5c2d-9e3f-0a1b2c3d4e5f")


class Call(StrEnum):
    BALANCE = "balance"
    DEBIT = "debit"
    CREDIT = "credit"
    ROLLBACK = "rollback"


class Status(StrEnum):
    OK = "ok"
    ERROR = "error"


class ErrorCode(StrEnum):
    INSUFFICIENT_FUNDS = "insufficient-funds"
    UNKNOWN_PLAYER = "unknown-player"
    CURRENCY_MISMATCH = "currency-mismatch"
    INVALID_SIGNATURE = "invalid-signature"
    INVALID_REQUEST = "invalid-request"
    DUPLICATE_TRANSACTION = "duplicate-transaction"
    TRANSACTION_CONFLICT = "transaction-conflict"
    UNKNOWN_TRANSACTION = "unknown-transaction"
    ROLLED_BACK = "rolled-back"


DEBIT_STAGES = frozenset({"main", "side", "raise", "double", "split", "insurance"})
CREDIT_STAGES = frozenset({"win", "cash-out"})
_QUALIFIER = r"[A-Za-z0-9+._-]{1,64}"
_STAGE = re.compile(
    rf"^(?:(?:main|raise|double|split|insurance|win|cash-out)(?::{_QUALIFIER})?"
    rf"|side:{_QUALIFIER}"
    r"|rollback:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$"
)


class InvalidStage(ValueError):
    """A stage name outside the protocol's list (see the module docstring)."""

    def __init__(self, stage: str) -> None:
        super().__init__(f"not a wallet stage: {stage!r}")
        self.stage = stage


def stage_kind(stage: str) -> str:
    """The stage's kind: ``main``, ``side``, ..., ``rollback``.

    >>> stage_kind("side:21+3"), stage_kind("win:2"), stage_kind("main")
    ('side', 'win', 'main')
    """
    if not _STAGE.match(stage):
        raise InvalidStage(stage)
    return stage.split(":", 1)[0]


def rollback_stage(debit_transaction_id: uuid.UUID) -> str:
    return f"rollback:{debit_transaction_id}"


def transaction_id(game_code: str, stage: str) -> uuid.UUID:
    """The id of the money call for ``stage`` of round ``game_code``: the same for every
    retry, so the wallet can apply it at most once.

    >>> transaction_id("RD-1", "main") == transaction_id("RD-1", "main")
    True
    >>> transaction_id("RD-1", "main") == transaction_id("RD-1", "side:21+3")
    False
    """
    stage_kind(stage)
    if not game_code:
        raise ValueError("a transaction needs the round's game code")
    return uuid.uuid5(NAMESPACE, f"{game_code}/{stage}")


Currency = Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
# strict: a float (even 12.0) or a numeric string is not money.
MinorUnits = Annotated[int, Field(strict=True)]
_Text = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def body(self) -> bytes:
        """The exact bytes sent and signed."""
        return self.model_dump_json().encode()


class WalletRequest(_Wire):
    request_id: _Text  # one per HTTP attempt (tracing); idempotency is by transaction id
    player_token: _Text
    currency: Currency
    time: AwareDatetime


class BalanceRequest(WalletRequest):
    game_code: _Text | None = None


class TransactionRequest(WalletRequest):
    transaction_id: uuid.UUID
    game_code: _Text
    stage: _Text
    amount: Annotated[MinorUnits, Field(ge=0)]

    def _check_stage(self, kinds: frozenset[str]) -> None:
        if stage_kind(self.stage) not in kinds:
            raise ValueError(f"stage {self.stage!r} is not one of {sorted(kinds)}")


class DebitRequest(TransactionRequest):
    amount: Annotated[MinorUnits, Field(gt=0)]

    @model_validator(mode="after")
    def _debit_stage(self) -> Self:
        self._check_stage(DEBIT_STAGES)
        return self


class CreditRequest(TransactionRequest):
    reference_transaction_id: uuid.UUID | None = None  # the round's debit, if any

    @model_validator(mode="after")
    def _credit_stage(self) -> Self:
        self._check_stage(CREDIT_STAGES)
        return self


class RollbackRequest(TransactionRequest):
    reference_transaction_id: uuid.UUID  # the debit cancelled
    amount: Annotated[MinorUnits, Field(gt=0)]  # the debit's amount

    @model_validator(mode="after")
    def _names_its_debit(self) -> Self:
        if self.stage != rollback_stage(self.reference_transaction_id):
            raise ValueError("a rollback's stage is rollback:<reference_transaction_id>")
        return self


REQUESTS: dict[Call, type[WalletRequest]] = {
    Call.BALANCE: BalanceRequest,
    Call.DEBIT: DebitRequest,
    Call.CREDIT: CreditRequest,
    Call.ROLLBACK: RollbackRequest,
}


class OriginalResult(_Wire):
    """What the first delivery of a transaction got (sent with ``duplicate-transaction``)."""

    status: Status
    error: ErrorCode | None = None
    balance: MinorUnits | None = None


class WalletResponse(_Wire):
    status: Status
    request_id: str
    transaction_id: uuid.UUID | None = None
    amount: MinorUnits | None = None  # echoed for debit, credit and rollback
    balance: MinorUnits | None = None  # after the call; None if the player is unknown
    currency: Currency | None = None
    error: ErrorCode | None = None
    message: str = ""
    original: OriginalResult | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if (self.status is Status.OK) != (self.error is None):
            raise ValueError("status ok exactly when there is no error code")
        if (self.error is ErrorCode.DUPLICATE_TRANSACTION) != (self.original is not None):
            raise ValueError("original comes exactly with duplicate-transaction")
        return self


@dataclass(frozen=True)
class Transaction:
    """One money call as croupier decided it: fixed across every retry (only the request id
    and time of each attempt change). Build it with :meth:`debit`, :meth:`credit` or
    :meth:`rollback`, which derive the id from the round and the stage."""

    call: Call
    transaction_id: uuid.UUID
    player_token: str
    game_code: str
    stage: str
    amount: int
    currency: str
    reference_transaction_id: uuid.UUID | None = None

    @classmethod
    def debit(
        cls, player_token: str, game_code: str, stage: str, amount: int, currency: str
    ) -> Transaction:
        return cls(
            Call.DEBIT,
            transaction_id(game_code, stage),
            player_token,
            game_code,
            stage,
            amount,
            currency,
        )

    @classmethod
    def credit(
        cls,
        player_token: str,
        game_code: str,
        amount: int,
        currency: str,
        stage: str = "win",
        reference: uuid.UUID | None = None,
    ) -> Transaction:
        return cls(
            Call.CREDIT,
            transaction_id(game_code, stage),
            player_token,
            game_code,
            stage,
            amount,
            currency,
            reference,
        )

    @classmethod
    def rollback(cls, debit: Transaction) -> Transaction:
        """The rollback of ``debit`` (its id derives from the debit's id)."""
        if debit.call is not Call.DEBIT:
            raise ValueError(f"only a debit is rolled back, not a {debit.call}")
        stage = rollback_stage(debit.transaction_id)
        return cls(
            Call.ROLLBACK,
            transaction_id(debit.game_code, stage),
            debit.player_token,
            debit.game_code,
            stage,
            debit.amount,
            debit.currency,
            debit.transaction_id,
        )

    def request(self, request_id: str, time: datetime) -> TransactionRequest:
        """The wire request of one attempt (validated: a bad amount or stage raises)."""
        model = REQUESTS[self.call]
        fields = {
            "request_id": request_id,
            "player_token": self.player_token,
            "currency": self.currency,
            "time": time,
            "transaction_id": self.transaction_id,
            "game_code": self.game_code,
            "stage": self.stage,
            "amount": self.amount,
        }
        if self.reference_transaction_id is not None:
            fields["reference_transaction_id"] = self.reference_transaction_id
        request = model.model_validate(fields)
        assert isinstance(request, TransactionRequest)
        return request
