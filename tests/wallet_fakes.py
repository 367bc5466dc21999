"""Fakes for the wallet tests: a wallet simulator in-process or over real HTTP, and a fake
croupier that follows the client's rules and remembers what it believes each balance is."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from wallet.client import DebitOutcome, Timeouts, WalletClient
from wallet.delivery import DeliveryState, RetryPolicy
from wallet.protocol import Transaction
from wallet.sim.admin import SimAdmin
from wallet.sim.app import create_wallet_app
from wallet.sim.faults import FaultPlan, Faults
from wallet.sim.serve import serving_in_thread
from wallet.sim.store import WalletBooks

KEY = b"operator shared key for tests"
FAST_RETRY = RetryPolicy(first_delay=0.01, factor=2.0, max_delay=0.05)


@dataclass
class Wallet:
    """A running simulator and the two clients that talk to it."""

    books: WalletBooks
    faults: Faults
    admin: SimAdmin
    client: WalletClient

    def plan(self, **kwargs: object) -> None:
        self.faults.set(FaultPlan.model_validate(kwargs))

    def rows(self, transaction_id: object) -> list[dict[str, object]]:
        return [
            r.__dict__ for r in self.books.transactions() if r.transaction_id == str(transaction_id)
        ]

    def wait_for_deliveries(self, transaction_id: object, n: int, within: float = 10.0) -> None:
        """Wait until a held (late) request has reached the books ``n`` times."""
        deadline = time.monotonic() + within
        while True:
            rows = self.rows(transaction_id)
            if rows and int(rows[0]["deliveries"]) >= n:  # type: ignore[call-overload]
                return
            assert time.monotonic() < deadline, f"{transaction_id}: {rows}"
            time.sleep(0.02)

    def wait_until_idle(self, within: float = 10.0) -> None:
        """Wait until no wallet call is in progress (held, late requests have landed)."""
        deadline = time.monotonic() + within
        while self.admin._http.get("/health").json()["in_flight"]:
            assert time.monotonic() < deadline, "the wallet is still serving calls"
            time.sleep(0.02)


@contextmanager
def wallet_in_process(tmp_path: Path) -> Iterator[Wallet]:
    books = WalletBooks(tmp_path / "wallet.sqlite")
    faults = Faults()
    http = TestClient(create_wallet_app(books, KEY, faults), base_url="http://wallet")
    try:
        yield Wallet(
            books,
            faults,
            SimAdmin("http://wallet", KEY, http=http),
            WalletClient("http://wallet", KEY, http=http, retry=FAST_RETRY),
        )
    finally:
        http.close()
        books.close()


@contextmanager
def wallet_over_http(tmp_path: Path, read_timeout: float = 0.3) -> Iterator[Wallet]:
    books = WalletBooks(tmp_path / "wallet.sqlite")
    faults = Faults()
    with serving_in_thread(create_wallet_app(books, KEY, faults)) as base:
        client = WalletClient(
            base,
            KEY,
            timeouts=Timeouts(connect=2.0, read=read_timeout, write=2.0, pool=5.0),
            retry=FAST_RETRY,
        )
        admin = SimAdmin(base, KEY, http=httpx.Client(base_url=base, timeout=10))
        try:
            yield Wallet(books, faults, admin, client)
        finally:
            client.close()
            admin.close()
    books.close()


@dataclass
class FakeCroupier:
    """Plays by the client's rules: a debit is final only if accepted; an unknown debit is
    rolled back with its own id; credits and rollbacks are delivered until acknowledged.
    ``believed`` is what croupier's log would say each player's wallet balance is."""

    client: WalletClient
    believed: dict[str, int] = field(default_factory=dict)

    def stake(self, debit: Transaction) -> DebitOutcome:
        result = self.client.debit(debit)
        if result.outcome is DebitOutcome.ACCEPTED:
            self.believed[debit.player_token] -= debit.amount
        elif result.outcome is DebitOutcome.UNKNOWN:
            self.roll_back(debit, taken=False)
        return result.outcome

    def roll_back(self, debit: Transaction, taken: bool) -> None:
        delivery = self.client.rollback(Transaction.rollback(debit))
        assert delivery.state is DeliveryState.ACKNOWLEDGED, delivery
        if taken:
            self.believed[debit.player_token] += debit.amount

    def pay(self, credit: Transaction) -> None:
        delivery = self.client.credit(credit)
        assert delivery.state is DeliveryState.ACKNOWLEDGED, delivery
        self.believed[credit.player_token] += credit.amount
