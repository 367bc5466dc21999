"""The wallet wire protocol: transaction ids derive from the round and the stage, requests
refuse what is not money, signatures cover the exact bytes."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from wallet import signing
from wallet.protocol import (
    CreditRequest,
    DebitRequest,
    ErrorCode,
    InvalidStage,
    OriginalResult,
    RollbackRequest,
    Status,
    Transaction,
    WalletResponse,
    transaction_id,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
STAGES = ["main", "side:21+3", "side:perfect-pairs", "double", "split", "insurance", "win"]


def test_a_stage_of_a_round_always_gets_the_same_transaction_id() -> None:
    assert transaction_id("RD-20261201-1", "main") == transaction_id("RD-20261201-1", "main")
    assert transaction_id("RD-20261201-1", "main").version == 5


def test_every_stage_and_every_round_gets_its_own_transaction_id() -> None:
    ids = {transaction_id(code, s) for code in ("BJ-1", "BJ-2") for s in STAGES}
    assert len(ids) == 2 * len(STAGES)


def test_the_transaction_id_derivation_is_fixed_wire_format() -> None:
    # Changing NAMESPACE or the "code/stage" text would re-debit every round in flight.
    assert transaction_id("RD-1", "main") == uuid.UUID("feb7f20f-a7a7-5fbb-9917-aeb6f9e22700")


@pytest.mark.parametrize("stage", ["", "bet", "side", "main:", "rollback:123", "win:" + "x" * 65])
def test_a_stage_outside_the_protocol_is_refused(stage: str) -> None:
    with pytest.raises(InvalidStage):
        transaction_id("RD-1", stage)


def test_a_rollback_is_named_after_its_debit_and_carries_its_id() -> None:
    debit = Transaction.debit("p", "BJ-7", "double", 200, "EUR")
    rollback = Transaction.rollback(debit)
    assert rollback.stage == f"rollback:{debit.transaction_id}"
    assert rollback.reference_transaction_id == debit.transaction_id
    assert rollback.transaction_id == transaction_id("BJ-7", rollback.stage)
    assert rollback.amount == 200
    assert Transaction.rollback(debit) == rollback  # a retried rollback reuses its id


def test_only_a_debit_is_rolled_back() -> None:
    with pytest.raises(ValueError, match="only a debit"):
        Transaction.rollback(Transaction.credit("p", "BJ-7", 100, "EUR"))


def test_each_attempt_differs_only_in_request_id_and_time() -> None:
    credit = Transaction.credit("p", "VP-3", 750, "EUR")
    a = json.loads(credit.request("r1", NOW).body())
    b = json.loads(credit.request("r2", datetime(2026, 12, 1, 13, 0, tzinfo=UTC)).body())
    assert {k for k in a if a[k] != b[k]} == {"request_id", "time"}


def _debit_fields(**change: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "request_id": "r",
        "player_token": "p",
        "currency": "EUR",
        "time": NOW.isoformat(),
        "transaction_id": str(transaction_id("RD-1", "main")),
        "game_code": "RD-1",
        "stage": "main",
        "amount": 100,
    }
    fields.update(change)
    return fields


@pytest.mark.parametrize(
    "change",
    [
        {"amount": 100.0},  # a float is not money, even a whole one
        {"amount": "100"},
        {"amount": 0},  # a debit takes something
        {"amount": -5},
        {"currency": "eur"},
        {"currency": "EURO"},
        {"stage": "win"},  # a win is a credit
        {"time": "2026-12-01T12:00:00"},  # no time zone
        {"surprise": 1},
    ],
)
def test_a_debit_request_refuses_what_is_not_a_stake(change: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        DebitRequest.model_validate_json(json.dumps(_debit_fields(**change)))


def test_a_credit_may_be_zero_but_not_a_stake_stage() -> None:
    assert (
        CreditRequest.model_validate_json(json.dumps(_debit_fields(stage="win", amount=0))).amount
        == 0
    )
    with pytest.raises(ValidationError):
        CreditRequest.model_validate_json(json.dumps(_debit_fields(stage="main")))


def test_a_rollback_must_name_the_debit_it_cancels() -> None:
    other = uuid.uuid4()
    fields = _debit_fields(stage=f"rollback:{other}", reference_transaction_id=str(uuid.uuid4()))
    with pytest.raises(ValidationError, match="rollback:<reference_transaction_id>"):
        RollbackRequest.model_validate_json(json.dumps(fields))


def test_a_response_is_ok_exactly_when_it_has_no_error_code() -> None:
    with pytest.raises(ValidationError):
        WalletResponse(status=Status.OK, request_id="r", error=ErrorCode.UNKNOWN_PLAYER)
    with pytest.raises(ValidationError):
        WalletResponse(status=Status.ERROR, request_id="r")


def test_a_duplicate_answer_carries_the_original_result_and_only_it_does() -> None:
    original = OriginalResult(status=Status.OK, balance=700)
    with pytest.raises(ValidationError):
        WalletResponse(status=Status.ERROR, request_id="r", error=ErrorCode.DUPLICATE_TRANSACTION)
    with pytest.raises(ValidationError):
        WalletResponse(status=Status.OK, request_id="r", balance=1, original=original)
    dup = WalletResponse(
        status=Status.ERROR,
        request_id="r",
        error=ErrorCode.DUPLICATE_TRANSACTION,
        original=original,
    )
    assert WalletResponse.model_validate_json(dup.body()) == dup


def test_a_signature_covers_exactly_these_bytes_with_this_key() -> None:
    body = b'{"amount":100}'
    header = signing.sign(b"key", body)
    assert signing.verify(b"key", body, header)
    assert not signing.verify(b"key", b'{"amount":1000}', header)
    assert not signing.verify(b"key", body + b" ", header)
    assert not signing.verify(b"other key", body, header)
    assert not signing.verify(b"key", body, None)
    assert not signing.verify(b"key", body, header.removeprefix("sha256="))
