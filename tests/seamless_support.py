"""Seamless-mode fixtures: croupier composed with the reference wallet over real HTTP, its
API behind Starlette's TestClient, and the books of both sides to compare."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from api.app import create_app
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.seamless.book import totals, wallet_book
from ledger.settings import Settings
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer
from tests.wallet_fakes import FAST_RETRY, Wallet, wallet_over_http
from wallet.client import WalletClient

OP = "op"


def open_casino(
    data_dir: Path, client: WalletClient, database_url: str | None = None, **kwargs: Any
) -> Casino:
    settings = Settings(data_dir=data_dir, database_url=database_url, **CREDENTIALS)  # type: ignore[arg-type]
    return bootstrap(settings, wallets={OP: client}, wallet_retry=FAST_RETRY, **kwargs)


@dataclass
class Seamless:
    wallet: Wallet
    casino: Casino
    http: TestClient
    data_dir: Path
    n: int = 0

    def key(self) -> str:
        self.n += 1
        return f"k{self.n}"

    def post(self, path: str, body: Any, token: str, key: str | None = None) -> Any:
        headers = {**bearer(token), "Idempotency-Key": key or self.key()}
        return self.http.post(path, json=body, headers=headers)

    def open(self, player: str, balance: int, currency: str = "EUR") -> tuple[str, str]:
        self.wallet.admin.set_player(player, currency, balance)
        r = self.post(
            "/v1/seamless/sessions",
            {"operator": OP, "player_token": player, "currency": currency},
            OPERATOR,
        )
        assert r.status_code == 201, r.text
        doc = r.json()
        assert doc["balance"] == balance
        return doc["session_id"], doc["token"]

    def croupier_net(self, player: str) -> int:
        """What croupier's log says the wallet has paid the player, net (credited - debited),
        counting credits and rollbacks still pending as delivered once."""
        entries = [e for e in wallet_book(self.casino).listed() if e.player_token == player]
        t = totals(entries)["players"].get(f"{OP}:{player}", {})
        return int(t.get("net", 0)) + sum(
            e.amount for e in entries if e.call == "credit" and e.state == "pending-delivery"
        )

    def deliver(self) -> None:
        assert self.casino.seamless.outbox.drain() == 0


@contextmanager
def seamless(tmp_path: Path, read_timeout: float = 1.0) -> Iterator[Seamless]:
    (tmp_path / "wallet").mkdir(exist_ok=True)
    with wallet_over_http(tmp_path / "wallet", read_timeout=read_timeout) as wallet:
        casino = open_casino(tmp_path / "data", wallet.client)
        try:
            with TestClient(create_app(casino)) as http:
                yield Seamless(wallet, casino, http, tmp_path / "data")
        finally:
            casino.close()
