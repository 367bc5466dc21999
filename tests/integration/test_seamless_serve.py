"""``croupier serve``'s app in seamless mode, configured from settings (``CROUPIER_WALLETS``):
the lifespan rolls back debits left without an outcome, rebuilds the outbox and starts
the background sender, which pays each win once; shutdown stops it cleanly."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient

from api.app import create_app
from audit_cli.wallet import SeamlessLog, SeamlessRound, round_findings
from ledger.seamless.book import WalletBook
from ledger.settings import Settings
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer
from tests.wallet_fakes import KEY, wallet_over_http


def test_serve_delivers_wins_in_the_background_and_stops_cleanly(tmp_path: Path) -> None:
    (tmp_path / "wallet").mkdir()
    with wallet_over_http(tmp_path / "wallet") as wallet:
        wallet.admin.set_player("ann", "EUR", 10_000)
        base = str(wallet.admin._http.base_url).rstrip("/")
        wallets = {"op": {"mode": "seamless", "base_url": base, "key": KEY.decode()}}
        settings = Settings(data_dir=tmp_path / "data", wallets=wallets, **CREDENTIALS)  # type: ignore[arg-type]
        with TestClient(create_app(settings=settings)) as http:
            key = iter(range(10_000))
            headers = lambda token: {**bearer(token), "Idempotency-Key": f"k{next(key)}"}  # noqa: E731
            body = {"operator": "op", "player_token": "ann", "currency": "EUR"}
            opened = http.post("/v1/seamless/sessions", json=body, headers=headers(OPERATOR))
            sid, token = opened.json()["session_id"], opened.json()["token"]
            paid = staked = 0
            while not paid:
                doc = http.post(
                    f"/v1/sessions/{sid}/red-dog/bet", json={"bet": 100}, headers=headers(token)
                ).json()
                if doc["status"] == "open":
                    doc = http.post(
                        f"/v1/sessions/{sid}/red-dog/see", headers=headers(token)
                    ).json()
                paid, staked = paid + doc["payout"], staked + doc["staked"]
            outbox = http.app.state.casino.seamless.outbox  # type: ignore[attr-defined]
            deadline = time.monotonic() + 20
            while outbox.catch_up():  # the background sender, not this test, delivers
                assert time.monotonic() < deadline, outbox.pending()
                time.sleep(0.02)
            assert outbox.delivered >= 1
        assert outbox._thread is None  # stopped by the shutdown
        assert wallet.admin.balance("ann") == 10_000 + paid - staked


def test_verify_flags_a_seamless_round_whose_movements_differ_from_its_wallet_calls() -> None:
    book = WalletBook()
    debit = {
        "call": "debit",
        "transaction_id": "t1",
        "player_token": "ann",
        "game_code": "RD-1",
        "stage": "main",
        "amount": 500,
        "currency": "EUR",
        "reference_transaction_id": None,
    }
    book.feed(1, "s1", "croupier/session/stake-intended@1", {"transaction": debit})
    book.feed(
        2,
        "s1",
        "croupier/session/stake-resolved@1",
        {"transaction_id": "t1", "outcome": "accepted"},
    )
    rows, findings = round_findings(SeamlessLog(book, {"RD-1": -500}))
    assert rows == [SeamlessRound(game_code="RD-1", moved=-500, wallet_calls=-500)]
    assert not findings
    # A stake moved twice for one accepted debit (or a win paid without its credit queued):
    _, findings = round_findings(SeamlessLog(book, {"RD-1": -1000}))
    assert findings == [
        "seamless round RD-1: its movements net -1000 but its wallet transactions net -500"
    ]
