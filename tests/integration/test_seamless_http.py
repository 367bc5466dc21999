"""Seamless mode end to end over HTTP: croupier's API (TestClient) against the reference
wallet served by uvicorn. Red Dog (with raises), Jacks or Better 4-line and multi-hand:
every stake is debited at the wallet before its round starts, every win credited once by
the outbox; at the end the wallet's balance is what croupier's log says."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from audit_cli.main import main as audit_cli
from ledger.seamless.book import wallet_book
from tests.integration.test_http_e2e import OPERATOR
from tests.seamless_support import Seamless, seamless
from wallet.protocol import Call
from wallet.sim.faults import Fault

START = 100_000
HANG_MS = 1_500  # a timeout fault holds the request past the client's 1 s read timeout


@pytest.fixture
def s(tmp_path: Path) -> Seamless:
    with seamless(tmp_path) as sm:
        yield sm  # type: ignore[misc]


def _wallet_moved(s: Seamless, player: str) -> int:
    balance = s.wallet.admin.balance(player)
    assert balance is not None
    return balance - START


def test_red_dog_over_http_debits_each_stake_and_raise_once_and_credits_each_win_once(
    s: Seamless,
) -> None:
    sid, token = s.open("ann", START)
    staked = paid = 0
    for _ in range(12):
        r = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 1_000}, token)
        assert r.status_code == 200, r.text
        doc = r.json()
        if doc["status"] == "open":
            r = s.post(f"/v1/sessions/{sid}/red-dog/raise", {"amount": 1_000}, token)
            assert r.status_code == 200, r.text
            doc = r.json()
        staked += doc["staked"]
        paid += doc["payout"]
    s.deliver()
    assert _wallet_moved(s, "ann") == paid - staked == s.croupier_net("ann")
    rows = s.wallet.admin.transactions()
    debits = [r for r in rows if r["call"] == "debit" and r["player_token"] == "ann"]
    assert sum(int(r["amount"]) for r in debits) == staked
    raises = [e for e in wallet_book(s.casino).listed() if e.stage.startswith("raise:")]
    assert raises and {e.state for e in raises} == {"accepted"}  # raises debited too
    assert len({r["transaction_id"] for r in debits}) == len(debits)


@pytest.mark.parametrize(
    ("variant", "coin_value", "coins", "lines"), [("jb-4line", 50, 5, 4), ("jb-multi", 10, 1, 10)]
)
def test_video_poker_over_http_in_seamless_mode_agrees_with_the_wallet(
    s: Seamless, variant: str, coin_value: int, coins: int, lines: int
) -> None:
    sid, token = s.open("bea", START)
    staked = paid = 0
    for _ in range(6):
        deal = {"variant": variant, "coin_value": coin_value, "coins": coins, "lines": lines}
        r = s.post(f"/v1/sessions/{sid}/video-poker/deal", deal, token)
        assert r.status_code == 200, r.text
        doc = s.post(f"/v1/sessions/{sid}/video-poker/draw", {}, token).json()
        if doc["status"] == "open":  # a win waits for collect or double-up
            doc = s.post(f"/v1/sessions/{sid}/video-poker/collect", None, token).json()
        assert doc["status"] == "settled"
        staked += doc["staked"]
        paid += doc["payout"]
    s.deliver()
    assert _wallet_moved(s, "bea") == paid - staked == s.croupier_net("bea")
    r = s.http.get(
        f"/v1/seamless/sessions/{sid}/balance", headers={"Authorization": f"Bearer {token}"}
    )
    assert r.json()["balance"] == START + paid - staked


def test_a_retried_bet_answers_the_same_and_is_not_debited_again(s: Seamless) -> None:
    sid, token = s.open("cid", START)
    first = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 500}, token, key="bet-1")
    again = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 500}, token, key="bet-1")
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    debits = [r for r in s.wallet.admin.transactions() if r["player_token"] == "cid"]
    assert len(debits) == 1 and debits[0]["deliveries"] == 1
    other = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 600}, token, key="bet-1")
    assert other.status_code == 409 and other.json()["code"] == "idempotency-conflict"
    assert len([r for r in s.wallet.admin.transactions() if r["player_token"] == "cid"]) == 1


def test_a_stake_the_wallet_refuses_starts_no_round(s: Seamless) -> None:
    sid, token = s.open("dan", 300)
    r = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 500}, token)
    assert r.status_code == 409 and r.json()["code"] == "insufficient-funds"
    assert s.casino.get_session(sid).open_round is None
    assert s.wallet.admin.balance("dan") == 300
    (entry,) = wallet_book(s.casino).listed()
    assert entry.state == "refused" and entry.amount == 500


@pytest.mark.parametrize(
    "fault",
    [
        Fault.ERROR_5XX,
        Fault.TIMEOUT_BEFORE,
        Fault.TIMEOUT_AFTER,
        Fault.BAD_JSON,
        Fault.BAD_SIGNATURE,
        Fault.UNSIGNED,
        Fault.OTHER_CURRENCY,
        Fault.OTHER_AMOUNT,
        Fault.NEGATIVE_BALANCE,
    ],
)
def test_a_debit_without_a_trustworthy_answer_refuses_the_round_and_rolls_back_once(
    s: Seamless, fault: Fault, caplog: pytest.LogCaptureFixture
) -> None:
    sid, token = s.open("eve", START)
    s.wallet.plan(script=[fault], calls=[Call.DEBIT], hang_ms=HANG_MS)
    with caplog.at_level(logging.WARNING, logger="croupier.wallet"):
        r = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 700}, token)
    assert r.status_code == 503 and r.json()["code"] == "wallet-unavailable", r.text
    assert s.casino.get_session(sid).open_round is None
    s.wallet.plan()
    s.deliver()
    s.wallet.wait_until_idle()
    assert s.wallet.admin.balance("eve") == START  # taken (or not) and given back once
    (debit, rollback) = wallet_book(s.casino).listed()
    assert debit.state == "rolled-back" and rollback.state == "rolled-back"
    causes = " ".join(r.getMessage() for r in caplog.records)
    expected = {
        Fault.ERROR_5XX: "HTTP 500",
        Fault.TIMEOUT_BEFORE: "timeout",
        Fault.TIMEOUT_AFTER: "timeout",
        Fault.BAD_JSON: "malformed response",
        Fault.BAD_SIGNATURE: "bad response signature",
        Fault.UNSIGNED: "unsigned response",
        Fault.OTHER_CURRENCY: "answer in",
        Fault.OTHER_AMOUNT: "answer for amount",
        Fault.NEGATIVE_BALANCE: "negative balance",
    }[fault]
    assert expected in causes and debit.transaction_id in causes


@pytest.mark.parametrize(
    "fault", [Fault.BAD_JSON, Fault.BAD_SIGNATURE, Fault.OTHER_CURRENCY, Fault.TIMEOUT_AFTER]
)
def test_a_credit_with_a_bad_answer_is_retried_and_paid_once(
    s: Seamless, fault: Fault, caplog: pytest.LogCaptureFixture
) -> None:
    sid, token = s.open("fay", START)
    paid = staked = 0
    while not paid:  # play until a round wins
        doc = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 100}, token).json()
        if doc["status"] == "open":
            doc = s.post(f"/v1/sessions/{sid}/red-dog/see", None, token).json()
        staked += doc["staked"]
        paid += doc["payout"]
        if not doc["payout"]:
            s.deliver()
    s.wallet.plan(script=[fault], calls=[Call.CREDIT], hang_ms=HANG_MS)
    with caplog.at_level(logging.WARNING, logger="croupier.wallet"):
        s.deliver()
    s.wallet.plan()
    s.wallet.wait_until_idle()
    assert _wallet_moved(s, "fay") == paid - staked == s.croupier_net("fay")
    assert any("retry in" in r.getMessage() for r in caplog.records)
    credits = [r for r in s.wallet.admin.transactions() if r["call"] == "credit"]
    assert len(credits) == 1 and credits[0]["deliveries"] >= 2


def test_with_the_wallet_down_new_rounds_are_refused_and_open_rounds_complete(
    s: Seamless,
) -> None:
    sid, token = s.open("gus", START)
    while True:  # a round left open (a spread: raise or see)
        doc = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 100}, token).json()
        if doc["status"] == "open":
            break
    s.wallet.plan(rates={Fault.ERROR_5XX: 1.0})
    done = s.post(f"/v1/sessions/{sid}/red-dog/see", None, token)
    assert done.status_code == 200 and done.json()["status"] == "settled"
    refused = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 100}, token)
    assert refused.status_code == 503 and refused.json()["code"] == "wallet-unavailable"
    assert s.casino.seamless.outbox.catch_up() >= 1  # the win (if any) and the rollback wait
    s.wallet.plan()
    s.deliver()
    assert _wallet_moved(s, "gus") == s.croupier_net("gus")


def test_a_void_rolls_back_every_debit_of_the_round_once(s: Seamless) -> None:
    sid, token = s.open("hal", START)
    while True:
        doc = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 400}, token).json()
        if doc["status"] != "open":
            continue
        doc = s.post(f"/v1/sessions/{sid}/red-dog/raise", {"amount": 400}, token).json()
        void = {"reason": "malfunction", "incident_id": "I-1"}
        r = s.post(f"/v1/rounds/{doc['code']}/void", void, OPERATOR)
        if doc["payout"]:  # a win credited at the wallet cannot be reversed through it
            assert r.status_code == 422 and "settle it with the operator" in r.json()["message"]
            continue
        assert r.status_code == 200, r.text
        break
    s.deliver()
    rollbacks = [e for e in wallet_book(s.casino).listed() if e.call == "rollback"]
    assert sorted(e.stage.split(":")[0] for e in rollbacks) == ["rollback", "rollback"]
    assert {e.state for e in rollbacks} == {"rolled-back"} and sum(
        e.amount for e in rollbacks
    ) == 800
    assert _wallet_moved(s, "hal") == s.croupier_net("hal")


def test_audit_cli_reconciles_and_verifies_the_balances_of_seamless_sessions(
    s: Seamless, capsys: pytest.CaptureFixture[str]
) -> None:
    sid, token = s.open("jon", START)
    for _ in range(5):
        doc = s.post(f"/v1/sessions/{sid}/red-dog/bet", {"bet": 200}, token).json()
        if doc["status"] == "open":
            s.post(f"/v1/sessions/{sid}/red-dog/see", None, token)
    s.deliver()
    s.casino.seal()
    db = str(s.data_dir / "casino.sqlite")
    capsys.readouterr()
    assert audit_cli(["wallet", "reconcile", "--db", db, "--operator", "op", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    states = {t["state"] for t in doc["transactions"]}
    assert states <= {"accepted", "rolled-back"} and doc["transactions"]
    assert doc["totals"]["players"]["op:jon"]["net"] == _wallet_moved(s, "jon")
    assert (
        audit_cli(
            ["wallet", "reconcile", "--db", db, "--operator", "op", "--json", "--to", "2000-01-01"]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["transactions"] == []  # the range filters
    assert audit_cli(["wallet", "reconcile", "--db", db, "--operator", "op", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("seq,time,transaction_id") and len(lines) == 1 + len(
        states
    ) * 0 + len(doc["transactions"])
    page = s.http.get(
        "/v1/wallet/transactions?limit=2", headers={"Authorization": f"Bearer {OPERATOR}"}
    )
    assert page.status_code == 200 and len(page.json()["transactions"]) == 2
    assert page.json()["next_after"] is not None
    rc = audit_cli(["verify", "--db", db, "--trust-local-keyring", "--balances", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert out["balances"]["wallet:op:jon"] == _wallet_moved(s, "jon")
    assert out["seamless_rounds"]
