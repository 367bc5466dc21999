"""A wallet answer that cannot be trusted (malformed, unsigned, mis-signed, another
currency or amount, a negative balance) is a failure with a log line naming the
transaction and the cause: a debit becomes unknown (and is rolled back), a credit is retried."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.wallet_fakes import FakeCroupier, Wallet, wallet_in_process
from wallet.client import DebitOutcome
from wallet.protocol import Call, Transaction
from wallet.sim.faults import Fault

BAD_ANSWERS = {
    Fault.BAD_JSON: "malformed response",
    Fault.UNSIGNED: "unsigned response",
    Fault.BAD_SIGNATURE: "bad response signature",
    Fault.OTHER_CURRENCY: "answer in USD, sent EUR",
    Fault.OTHER_AMOUNT: "answer for amount 301, sent 300",
    Fault.NEGATIVE_BALANCE: "negative balance (-1)",
}


@pytest.fixture
def wallet(tmp_path: Path) -> Iterator[Wallet]:
    with wallet_in_process(tmp_path) as w:
        w.admin.set_player("ann", "EUR", 1_000)
        yield w


@pytest.mark.parametrize(("fault", "cause"), BAD_ANSWERS.items())
def test_a_debit_with_an_untrustworthy_answer_is_unknown_and_rolled_back(
    wallet: Wallet, fault: Fault, cause: str, caplog: pytest.LogCaptureFixture
) -> None:
    wallet.plan(script=[fault], calls=[Call.DEBIT])
    croupier = FakeCroupier(wallet.client, {"ann": 1_000})
    debit = Transaction.debit("ann", "RD-1", "main", 300, "EUR")
    with caplog.at_level(logging.INFO, "croupier.wallet"):
        assert croupier.stake(debit) is DebitOutcome.UNKNOWN
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert str(debit.transaction_id) in line and cause in line
    assert wallet.admin.balance("ann") == croupier.believed["ann"] == 1_000  # taken, given back


@pytest.mark.parametrize(("fault", "cause"), BAD_ANSWERS.items())
def test_a_credit_with_an_untrustworthy_answer_is_retried_and_applied_once(
    wallet: Wallet, fault: Fault, cause: str, caplog: pytest.LogCaptureFixture
) -> None:
    wallet.plan(script=[fault], calls=[Call.CREDIT])
    croupier = FakeCroupier(wallet.client, {"ann": 1_000})
    credit = Transaction.credit("ann", "VP-1", 300, "EUR")
    with caplog.at_level(logging.INFO, "croupier.wallet"):
        croupier.pay(credit)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(str(credit.transaction_id) in m and cause in m for m in errors), errors
    retried = [r.getMessage() for r in caplog.records if "attempt 1 failed" in r.getMessage()]
    assert retried and str(credit.transaction_id) in retried[0] and cause in retried[0]
    assert wallet.admin.balance("ann") == croupier.believed["ann"] == 1_300
    assert wallet.rows(credit.transaction_id)[0]["deliveries"] == 2


def test_a_balance_answer_in_another_currency_is_not_believed(
    wallet: Wallet, caplog: pytest.LogCaptureFixture
) -> None:
    from wallet.client import WalletUnavailable

    wallet.plan(script=[Fault.OTHER_CURRENCY], calls=[Call.BALANCE])
    with caplog.at_level(logging.INFO, "croupier.wallet"), pytest.raises(WalletUnavailable):
        wallet.client.balance("ann", "EUR")
    assert "answer in USD, sent EUR" in caplog.text
