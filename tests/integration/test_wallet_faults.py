"""Fault injection against the reference wallet over real HTTP (uvicorn on 127.0.0.1): for
each call kind, a timeout before and after the wallet applied it, a late delivery, 5xx,
duplicate deliveries and slow answers. At the end the wallet's balance equals what croupier
believes: no debit taken twice, every credit and every rollback applied exactly once."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.wallet_fakes import FakeCroupier, Wallet, wallet_over_http
from wallet.client import DebitOutcome
from wallet.protocol import Call, Transaction
from wallet.sim.faults import Fault

HANG_MS = 700  # how long a timeout fault holds a request; the client's read timeout is 0.3 s


@pytest.fixture(scope="module")
def wallet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wallet]:
    with wallet_over_http(tmp_path_factory.mktemp("wallet"), read_timeout=0.3) as w:
        yield w


@pytest.fixture
def ann(wallet: Wallet, request: pytest.FixtureRequest) -> str:
    token = f"ann-{request.node.name}"
    wallet.admin.set_player(token, "EUR", 1_000)
    wallet.plan()  # no faults until the test sets them
    return token


def _applied(wallet: Wallet, transaction: Transaction) -> list[dict[str, object]]:
    return [r for r in wallet.rows(transaction.transaction_id) if r["status"] == "ok"]


# fault -> (what the client concludes of a debit, is the stake taken in the end)
DEBIT_CASES = {
    Fault.TIMEOUT_BEFORE: (DebitOutcome.UNKNOWN, False),
    Fault.TIMEOUT_AFTER: (DebitOutcome.UNKNOWN, False),
    Fault.LATE: (DebitOutcome.UNKNOWN, False),
    Fault.ERROR_5XX: (DebitOutcome.UNKNOWN, False),
    Fault.DUPLICATE: (DebitOutcome.ACCEPTED, True),
    None: (DebitOutcome.ACCEPTED, True),  # slow (latency below the timeout) but answered
}


@pytest.mark.parametrize("fault", DEBIT_CASES, ids=lambda f: str(f or "slow"))
def test_a_debit_under_a_fault_is_taken_at_most_once(
    wallet: Wallet, ann: str, fault: Fault | None
) -> None:
    outcome, taken = DEBIT_CASES[fault]
    wallet.plan(script=[fault], calls=[Call.DEBIT], hang_ms=HANG_MS, latency_ms=100)
    croupier = FakeCroupier(wallet.client, {ann: 1_000})
    debit = Transaction.debit(ann, f"RD-{ann}", "main", 300, "EUR")
    assert croupier.stake(debit) is outcome
    if fault is Fault.LATE:  # the debit reaches the wallet after its rollback: refused
        wallet.wait_for_deliveries(debit.transaction_id, 1)
    assert wallet.admin.balance(ann) == croupier.believed[ann] == (700 if taken else 1_000)
    rollback = Transaction.rollback(debit)
    assert len(wallet.rows(rollback.transaction_id)) == (0 if taken else 1)


CREDIT_FAULTS = [
    Fault.TIMEOUT_BEFORE,
    Fault.TIMEOUT_AFTER,
    Fault.LATE,
    Fault.ERROR_5XX,
    Fault.DUPLICATE,
    None,
]


@pytest.mark.parametrize("fault", CREDIT_FAULTS, ids=lambda f: str(f or "slow"))
def test_a_credit_under_a_fault_is_applied_exactly_once(
    wallet: Wallet, ann: str, fault: Fault | None
) -> None:
    wallet.plan(script=[fault], calls=[Call.CREDIT], hang_ms=HANG_MS, latency_ms=100)
    croupier = FakeCroupier(wallet.client, {ann: 1_000})
    credit = Transaction.credit(ann, f"VP-{ann}", 450, "EUR")
    croupier.pay(credit)
    if fault in (Fault.TIMEOUT_AFTER, Fault.LATE, Fault.DUPLICATE):
        wallet.wait_for_deliveries(credit.transaction_id, 2)  # the retry reused the id
    assert wallet.admin.balance(ann) == croupier.believed[ann] == 1_450
    assert len(_applied(wallet, credit)) == 1


@pytest.mark.parametrize("fault", CREDIT_FAULTS, ids=lambda f: str(f or "slow"))
def test_a_rollback_under_a_fault_gives_the_stake_back_exactly_once(
    wallet: Wallet, ann: str, fault: Fault | None
) -> None:
    croupier = FakeCroupier(wallet.client, {ann: 1_000})
    debit = Transaction.debit(ann, f"RD-{ann}", "main", 300, "EUR")
    assert croupier.stake(debit) is DebitOutcome.ACCEPTED
    wallet.plan(script=[fault], calls=[Call.ROLLBACK], hang_ms=HANG_MS, latency_ms=100)
    croupier.roll_back(debit, taken=True)
    rollback = Transaction.rollback(debit)
    if fault in (Fault.TIMEOUT_AFTER, Fault.LATE, Fault.DUPLICATE):
        wallet.wait_for_deliveries(rollback.transaction_id, 2)
    assert wallet.admin.balance(ann) == croupier.believed[ann] == 1_000
    assert len(_applied(wallet, rollback)) == 1


def test_concurrent_rounds_under_random_faults_end_with_the_books_agreeing(
    wallet: Wallet, ann: str
) -> None:
    failures = [Fault.TIMEOUT_BEFORE, Fault.TIMEOUT_AFTER, Fault.LATE, Fault.ERROR_5XX]
    rates = {f: 0.08 for f in failures} | {Fault.DUPLICATE: 0.08}
    players = [f"{ann}-{i}" for i in range(6)]
    for p in players:
        wallet.admin.set_player(p, "EUR", 10_000)
    wallet.plan(rates=rates, hang_ms=500, latency_ms=5, seed=16)
    croupier = FakeCroupier(wallet.client, dict.fromkeys(players, 10_000))
    debits: list[Transaction] = []

    def play(player: str) -> None:
        for n in range(6):
            code = f"RD-{player}-{n}"
            debit = Transaction.debit(player, code, "main", 100, "EUR")
            debits.append(debit)
            if croupier.stake(debit) is DebitOutcome.ACCEPTED and n % 2:
                croupier.pay(Transaction.credit(player, code, 250, "EUR"))

    threads = [threading.Thread(target=play, args=(p,)) for p in players]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wallet.plan()
    wallet.wait_until_idle()  # late debits land (refused) before the books are compared
    for p in players:
        assert wallet.admin.balance(p) == croupier.believed[p], p
    # The run did exercise the faults: some stakes were rolled back, some calls re-delivered.
    rows = [r for r in wallet.books.transactions() if str(r.player_token).startswith(ann)]
    assert any(r.call == "rollback" for r in rows)
    assert any(r.deliveries > 1 for r in rows)
