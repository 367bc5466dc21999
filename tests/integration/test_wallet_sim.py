"""The reference wallet (``croupier wallet-sim``) in-process: idempotent by transaction id,
signed both ways, a rollback remembered before its debit, bad requests change nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.wallet_fakes import KEY, Wallet, wallet_in_process
from wallet import signing
from wallet.client import DebitOutcome, WalletRefused
from wallet.delivery import AttemptKind, DeliveryState
from wallet.protocol import ErrorCode, Transaction, WalletResponse


@pytest.fixture
def wallet(tmp_path: Path) -> Iterator[Wallet]:
    with wallet_in_process(tmp_path) as w:
        w.admin.set_player("ann", "EUR", 1_000)
        yield w


def test_the_same_credit_delivered_2000_times_is_applied_once(wallet: Wallet) -> None:
    credit = Transaction.credit("ann", "VP-20261201-1", 750, "EUR")
    attempts = [wallet.client.send(credit) for _ in range(2_000)]
    assert all(a.kind is AttemptKind.ACKNOWLEDGED for a in attempts)
    assert wallet.admin.balance("ann") == 1_750
    [row] = wallet.rows(credit.transaction_id)
    assert row["deliveries"] == 2_000 and row["state"] == "applied"
    assert attempts[-1].error is ErrorCode.DUPLICATE_TRANSACTION  # acknowledged as duplicate


def test_a_rollback_before_its_debit_makes_the_late_debit_refused(wallet: Wallet) -> None:
    debit = Transaction.debit("ann", "RD-1", "main", 300, "EUR")
    delivery = wallet.client.rollback(Transaction.rollback(debit))
    assert delivery.state is DeliveryState.ACKNOWLEDGED
    assert delivery.last.error is ErrorCode.UNKNOWN_TRANSACTION
    result = wallet.client.debit(debit)
    assert result.outcome is DebitOutcome.REFUSED and result.error is ErrorCode.ROLLED_BACK
    assert wallet.admin.balance("ann") == 1_000


def test_a_rolled_back_debit_delivered_again_is_refused_and_not_retaken(wallet: Wallet) -> None:
    debit = Transaction.debit("ann", "RD-2", "main", 300, "EUR")
    assert wallet.client.debit(debit).outcome is DebitOutcome.ACCEPTED
    assert wallet.client.rollback(Transaction.rollback(debit)).state is DeliveryState.ACKNOWLEDGED
    assert wallet.client.rollback(Transaction.rollback(debit)).state is DeliveryState.ACKNOWLEDGED
    assert wallet.client.debit(debit).outcome is DebitOutcome.REFUSED
    assert wallet.admin.balance("ann") == 1_000


def test_a_debit_delivered_twice_is_taken_once_and_accepted_both_times(wallet: Wallet) -> None:
    debit = Transaction.debit("ann", "RD-3", "main", 300, "EUR")
    first, second = wallet.client.debit(debit), wallet.client.debit(debit)
    assert first.outcome is second.outcome is DebitOutcome.ACCEPTED
    assert first.balance == second.balance == 700
    assert wallet.admin.balance("ann") == 700


@pytest.mark.parametrize(
    ("debit", "error"),
    [
        (Transaction.debit("ann", "RD-4", "main", 1_001, "EUR"), ErrorCode.INSUFFICIENT_FUNDS),
        (Transaction.debit("bob", "RD-4", "main", 10, "EUR"), ErrorCode.UNKNOWN_PLAYER),
        (Transaction.debit("ann", "RD-4", "main", 10, "USD"), ErrorCode.CURRENCY_MISMATCH),
    ],
)
def test_a_refused_debit_takes_nothing_and_stays_refused(
    wallet: Wallet, debit: Transaction, error: ErrorCode
) -> None:
    result = wallet.client.debit(debit)
    assert result.outcome is DebitOutcome.REFUSED and result.error is error
    wallet.admin.set_player("ann", "EUR", 5_000)  # enough now, but the id was answered
    again = wallet.client.debit(debit)
    assert again.outcome is DebitOutcome.REFUSED and again.error is error
    assert wallet.admin.balance("ann") == 5_000
    # Rolling back a refused debit is acknowledged and gives nothing back.
    assert wallet.client.rollback(Transaction.rollback(debit)).state is DeliveryState.ACKNOWLEDGED
    assert wallet.admin.balance("ann") == 5_000


def test_the_same_id_with_another_amount_is_a_conflict_that_changes_nothing(wallet: Wallet) -> None:
    credit = Transaction.credit("ann", "VP-2", 100, "EUR")
    assert wallet.client.credit(credit).state is DeliveryState.ACKNOWLEDGED
    other = Transaction(**{**credit.__dict__, "amount": 900})
    delivery = wallet.client.credit(other)
    assert delivery.state is DeliveryState.REJECTED
    assert delivery.last.error is ErrorCode.TRANSACTION_CONFLICT
    assert wallet.admin.balance("ann") == 1_100


def test_the_balance_call_reads_the_players_balance(wallet: Wallet) -> None:
    assert wallet.client.balance("ann", "EUR") == 1_000
    with pytest.raises(WalletRefused) as refused:
        wallet.client.balance("ann", "GBP")
    assert refused.value.error is ErrorCode.CURRENCY_MISMATCH


def _post(wallet: Wallet, path: str, body: bytes, signature: str | None) -> tuple[int, bytes]:
    headers = {} if signature is None else {signing.REQUEST_SIGNATURE: signature}
    reply = wallet.admin._http.post(path, content=body, headers=headers)
    assert signing.verify(KEY, reply.content, reply.headers.get(signing.RESPONSE_SIGNATURE))
    return reply.status_code, reply.content


def _credit_body(**change: object) -> bytes:
    credit = Transaction.credit("ann", "VP-9", 500, "EUR")
    fields = json.loads(credit.request("r-1", datetime.now(UTC)).body())
    fields.update(change)
    return json.dumps(fields).encode()


@pytest.mark.parametrize("signature", [None, "sha256=00", signing.sign(b"other key", b"")])
def test_an_unsigned_or_mis_signed_request_is_refused_and_changes_nothing(
    wallet: Wallet, signature: str | None
) -> None:
    body = _credit_body()
    status, answer = _post(wallet, "/credit", body, signature)
    parsed = WalletResponse.model_validate_json(answer)
    assert status == 401 and parsed.error is ErrorCode.INVALID_SIGNATURE
    assert parsed.request_id == "r-1"
    assert wallet.admin.balance("ann") == 1_000 and wallet.books.transactions() == []


@pytest.mark.parametrize("change", [{"amount": 500.0}, {"amount": -1}, {"currency": "eu"}])
def test_a_malformed_request_is_refused_and_changes_nothing(
    wallet: Wallet, change: dict[str, object]
) -> None:
    body = _credit_body(**change)
    status, answer = _post(wallet, "/credit", body, signing.sign(KEY, body))
    assert status == 400
    assert WalletResponse.model_validate_json(answer).error is ErrorCode.INVALID_REQUEST
    assert wallet.admin.balance("ann") == 1_000 and wallet.books.transactions() == []


def test_admin_calls_need_the_operator_signature(wallet: Wallet) -> None:
    body = json.dumps({"players": [{"token": "ann", "currency": "EUR", "balance": 10**9}]})
    reply = wallet.admin._http.post("/admin/players", content=body.encode())
    assert reply.status_code == 401
    assert wallet.admin.balance("ann") == 1_000


def test_a_credit_to_an_unknown_player_is_rejected_at_once_not_retried(wallet: Wallet) -> None:
    credit = Transaction.credit("bob", "VP-4", 100, "EUR")
    delivery = wallet.client.credit(credit)
    assert delivery.state is DeliveryState.REJECTED and delivery.attempts == 1
    assert delivery.last.error is ErrorCode.UNKNOWN_PLAYER
    assert wallet.admin.balance("bob") is None and wallet.admin.balance("ann") == 1_000
