"""Start-up recovery with several workers on one PostgreSQL store (``serve --workers N``):
a worker starting up rolls back a debit intent left without an outcome only once no
process can still be waiting on that debit (older than the wallet client's longest call
plus a margin). A debit another live worker has in flight is left alone (and completes);
an old orphan is rolled back once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ledger import commands as c
from ledger.results import RoundPlayed
from ledger.seamless.book import wallet_book
from ledger.seamless.commands import IntendStake, OpenSeamlessSession
from ledger.seamless.gate import RECOVER_MARGIN_SECONDS
from ledger.seamless.wire import to_wire
from tests.conftest import Store, _make_store
from tests.seamless_support import OP, open_casino
from tests.wallet_fakes import wallet_over_http
from wallet.client import DebitResult, WalletClient
from wallet.protocol import Transaction

START = 10_000


@pytest.fixture
def pg(tmp_path: Path) -> Iterator[Store]:
    yield from _make_store("postgres", tmp_path)


class Held:
    """A wallet client whose debits wait until released (a debit in flight)."""

    def __init__(self, inner: WalletClient) -> None:
        self.inner = inner
        self.sending = threading.Event()
        self.release = threading.Event()

    def debit(self, t: Transaction) -> DebitResult:
        self.sending.set()
        assert self.release.wait(30), "the test never released the debit"
        return self.inner.debit(t)

    def longest_call(self) -> float:
        return self.inner.longest_call()


def _stamp(entry: Any) -> float:
    return datetime.fromisoformat(entry.time).timestamp()


@pytest.mark.postgres
def test_a_worker_starting_up_leaves_another_workers_debit_in_flight_and_rolls_back_an_orphan(
    pg: Store, tmp_path: Path
) -> None:
    (tmp_path / "wallet").mkdir()
    with wallet_over_http(tmp_path / "wallet", read_timeout=1.0) as wallet:
        for player in ("ann", "bob"):
            wallet.admin.set_player(player, "EUR", START)
        a = open_casino(tmp_path / "data", wallet.client, pg.database_url)
        pg.apps.append(a)
        ann = a.command("o1", OpenSeamlessSession(OP, "ann", "EUR")).session_id
        bob = a.command("o2", OpenSeamlessSession(OP, "bob", "EUR")).session_id
        # An orphan: bob's debit intent from a worker that died before its outcome.
        orphan = Transaction.debit("bob", "RD-ORPHAN-1", "main", 300, "EUR")
        a.command("orphan", IntendStake(bob, "gone", to_wire(orphan), ""))

        # Worker A sends ann's bet; its debit is in flight at the wallet.
        held = Held(wallet.client)
        a.seamless.gate.wallets = {OP: held}  # type: ignore[dict-item]
        answers: list[Any] = []
        bet = threading.Thread(
            target=lambda: answers.append(a.command("bet-1", c.RedDogBet(ann, 500)))
        )
        bet.start()
        assert held.sending.wait(30)

        # Worker B starts up on the same store while A's debit is in flight.
        b = open_casino(tmp_path / "data", wallet.client, pg.database_url)
        pg.apps.append(b)
        pending = {e.player_token: e for e in wallet_book(b).pending_outcomes()}
        assert set(pending) == {"ann", "bob"}
        threshold = b.seamless.gate.longest_debit() + RECOVER_MARGIN_SECONDS
        assert threshold >= wallet.client.longest_call() + RECOVER_MARGIN_SECONDS
        assert _stamp(pending["ann"]) > _stamp(pending["bob"])
        # now: the orphan is past the threshold, ann's in-flight debit is not
        now = (
            _stamp(pending["bob"])
            + threshold
            + (_stamp(pending["ann"]) - _stamp(pending["bob"])) / 2
        )
        assert b.seamless.gate.recover(now=now) == 1
        assert [e.player_token for e in wallet_book(b).pending_outcomes()] == ["ann"]
        assert b.seamless.gate.recover() == 0  # at the real time: both are young

        held.release.set()
        bet.join(30)
        # accepted: the round started (a refusal or a rolled-back stake raises)
        assert answers and isinstance(answers[0], RoundPlayed), answers
        assert b.seamless.outbox.drain() == 0
        book = wallet_book(b).listed()
        won = sum(e.amount for e in book if e.call == "credit" and e.player_token == "ann")
        assert wallet.admin.balance("ann") == START - 500 + won  # debited once, kept
        assert not [e for e in book if e.call == "rollback" and e.player_token == "ann"]
        assert wallet.admin.balance("bob") == START
        states = {e.player_token: e.state for e in wallet_book(b).listed() if e.call == "debit"}
        assert states == {"ann": "accepted", "bob": "rolled-back"}
