"""Blackjack rows in every account history (issue 13 §10): the projection, the HTTP
endpoint, ``audit-cli history`` (raw rows), and the table's own reads; newest first among
the other games' rounds; a void mid-round and one after settlement shown with their
refunds and reversed wins, as the other games' voids."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from audit_cli.rounds import player_history
from audit_cli.table_round import check_table_round
from games.blackjack import Shoe
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, TableSeat, seat_id_for, table_round_id_for
from ledger.tables.views import player_rounds, round_history, seat_history
from tests.conftest import Store
from tests.integration.table_helpers import Live

# 9-7 against a ten: hit, stand, double and cash-out offered; the shoe repeats the pattern.
SHOE = Shoe.of(" ".join(["9c Th 7d 6s 2h 3d 4c 5s 6d 7h 8c 9s Kd Qh 2c 3h 4d 5c"] * 4))
OPERATOR = "operator-token-for-tests-0123456789"
CREDENTIALS = {
    "operator_token": OPERATOR,
    "auditor_token": "auditor-token-for-tests-0123456789",
    "api_secret": "api-secret-for-tests-0123456789abcdef",
}
SHARED = (
    *("code", "game", "started_at", "stakes", "wins"),
    *("refunded", "reversed_win", "net", "outcome"),
)


def round_of(live: Live, number: int) -> TableRound:
    rnd = live.app.find(TableRound, table_round_id_for("T1", number))
    assert rnd is not None
    return rnd


def seat(live: Live, number: int, session: str) -> TableSeat:
    found = live.app.find(TableSeat, seat_id_for(round_of(live, number).id, session))
    assert found is not None
    return found


def finish(live: Live, number: int) -> None:
    for _ in range(10):
        if round_of(live, number).closed:
            return
        live.tick(5_000)
    raise AssertionError(f"round {number} did not finish")


def red_dog_round(live: Live, session: str) -> str:
    out = live.app.red_dog_bet("rd-bet", session, 300)
    if out.status == "open":
        out = live.app.red_dog_see("rd-see", session)
    assert out.status == "settled"
    return str(out.code)


def play(live: Live) -> dict[str, Any]:
    """ann: round 1 (settled, then voided), a Red Dog round, round 2 (voided mid-round
    after her cash-out was paid), round 3 (settled, with a double), round 4 (bets
    cancelled by a disconnection). bob: rounds 1-3 with a main bet only."""
    ann, bob = live.player("ann"), live.player("bob")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.bet(ann, "hot-3", 100)
    live.bet(bob, "main", 1_000)
    live.tick(10_000)
    live.decide(ann, 1, "hit")
    finish(live, 1)
    settled_balance = live.app.session_balance(ann)
    red_dog = red_dog_round(live, ann)
    live.bet(ann, "main", 500)
    live.bet(bob, "main", 700)
    live.tick(10_000)
    live.decide(ann, 1, "cash-out")  # paid at once, then reversed by the void
    cash_out = seat(live, 2, ann).credited
    assert cash_out > 0
    live.app.command("v2", tc.VoidTableRound("T1", round_of(live, 2).code, "jam", "INC-2"))
    live.app.command("v1", tc.VoidTableRound("T1", round_of(live, 1).code, "misdeal", "INC-1"))
    live.tick()
    live.bet(ann, "main", 800)
    live.bet(ann, "perfect-pairs", 100)
    live.bet(bob, "main", 800)
    live.tick(10_000)
    live.decide(ann, 1, "double")
    finish(live, 3)
    live.tick()
    live.bet(ann, "main", 600)
    live.bet(ann, "21+3", 100)
    live.app.command("d4", tc.Disconnect(ann, "T1"))
    return {
        "ann": ann,
        "bob": bob,
        "red_dog": red_dog,
        "codes": [round_of(live, n).code for n in (1, 2, 3, 4)],
        "settled_balance": settled_balance,
        "cash_out": cash_out,
    }


def check_rows(live: Live, played: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    r1, r2, r3, r4 = played["codes"]
    assert [r["code"] for r in rows] == [r4, r3, r2, played["red_dog"], r1]  # newest first
    cancelled, third, mid, _, first = rows
    assert [r["game"] for r in rows] == ["blackjack"] * 3 + ["red-dog", "blackjack"]
    assert first.get("started_at", first.get("date")) == round_of(live, 1).started_at
    # round 1: settled, then voided after settlement: the win reversed, stakes refunded
    one = seat(live, 1, played["ann"])
    assert first["bets"] == {"main": 1_000, "hot-3": 100}
    assert first["outcome"] == "voided" and first["status"] == "voided"
    assert first["stakes"] == 1_100 and first["refunded"] == 1_100 and first["wins"] == 0
    assert first["reversed_win"] == one.result["returned"] and first["net"] == 0
    assert first["void_reason"] == "misdeal" and first["incident_id"] == "INC-1"
    assert first["landed_on"] == "session"
    # round 2: voided mid-round after a cash-out was paid
    assert mid["bets"] == {"main": 500} and mid["outcome"] == "voided"
    assert mid["stakes"] == 500 and mid["refunded"] == 500 and mid["wins"] == 0
    assert mid["reversed_win"] == played["cash_out"] and mid["net"] == 0
    # round 3: settled with a double (the double's stake counts in the stakes)
    three = seat(live, 3, played["ann"])
    assert third["bets"] == {"main": 800, "perfect-pairs": 100}
    assert third["stakes"] == 800 + 800 + 100 == three.result["staked"]
    assert third["wins"] == three.result["returned"] and third["refunded"] == 0
    assert third["net"] == three.result["returned"] - three.result["staked"]
    assert third["outcome"] in ("win", "lose", "push") and third["status"] == "settled"
    # round 4: cancelled by the disconnection before the deal
    assert cancelled["bets"] == {"main": 600, "21+3": 100} and cancelled["outcome"] == "cancelled"
    assert cancelled["stakes"] == cancelled["refunded"] == 700 and cancelled["net"] == 0
    # the rows add up to the balance
    assert sum(r["net"] for r in rows) == live.app.session_balance(played["ann"]) - 20_000


@pytest.fixture
def played(store: Store) -> tuple[Live, dict[str, Any]]:
    live = Live(store, SHOE)
    return live, play(live)


def test_the_projection_and_http_show_blackjack_rows_newest_first_with_voids(
    store: Store, played: tuple[Live, dict[str, Any]]
) -> None:
    live, doc = played
    rows = live.app.history.account_history("ann")
    check_rows(live, doc, rows)
    assert [r["code"] for r in live.app.history.last_games(doc["ann"], 2)] == doc["codes"][3:1:-1]
    assert [r["code"] for r in live.app.history.account_history("bob")] == doc["codes"][2::-1]
    with TestClient(create_app(live.app, live.store.settings(**CREDENTIALS))) as client:
        r = client.get("/v1/accounts/ann/history", headers={"Authorization": f"Bearer {OPERATOR}"})
    assert r.status_code == 200, r.text
    games = r.json()["games"]
    check_rows(live, doc, games)
    assert [{k: g[k] for k in SHARED} for g in games] == [{k: g[k] for k in SHARED} for g in rows]
    assert r.json()["totals"]["net"] == sum(g["net"] for g in rows)


def test_audit_cli_history_reads_the_same_rows_from_the_raw_log(
    store: Store, played: tuple[Live, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    from audit_cli.main import main as audit_cli

    live, doc = played
    raw = list(reversed(player_history(store.db, "ann")))
    check_rows(live, doc, raw)
    projected = live.app.history.account_history("ann")
    keys = (*SHARED, "date", "bets", "table", "landed_on")
    assert [{k: r[k] for k in keys} for r in raw if r["game"] == "blackjack"] == [
        {k: r[k] for k in keys} for r in projected if r["game"] == "blackjack"
    ]
    capsys.readouterr()
    assert audit_cli(["history", "ann", "--db", store.db, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    check_rows(live, doc, printed)
    assert audit_cli(["history", "ann", "--db", store.db, "--wide"]) == 0
    table = capsys.readouterr().out
    assert doc["codes"][0] in table and "hot-3 100" in table


def test_the_table_reads_show_both_voids(store: Store, played: tuple[Live, dict[str, Any]]) -> None:
    live, doc = played
    r1, r2, r3, r4 = doc["codes"]
    rows = player_rounds(live.app, "ann")
    assert [r["code"] for r in rows] == [r4, r3, r2, r1]
    assert [r["status"] for r in rows] == ["cancelled", "settled", "voided", "voided"]
    for code, reason, incident in ((r1, "misdeal", "INC-1"), (r2, "jam", "INC-2")):
        history = round_history(live.app, "T1", code)
        assert history["status"] == "voided"
        assert history["void"] == {"reason": reason, "incident_id": incident}
        mine = seat_history(live.app, "T1", code, doc["ann"])
        assert mine["status"] == "voided"
        audit = check_table_round(store.db, code, store.keyring.public_keys, doc["ann"])
        assert audit.ok and audit.status.startswith("voided"), audit.problems
        assert audit.seat is not None and audit.seat["status"] == "voided"
        void = audit.seat["void"]
        assert (void["reason"], void["incident_id"]) == (reason, incident)
    # round 1 was voided after settlement: its void reversed the settlement's credit
    r1_seat = check_table_round(store.db, r1, None, doc["ann"]).seat
    assert r1_seat is not None and r1_seat["void"]["reversed_win"] == r1_seat["paid"]
    assert r1_seat["void"]["refunded"] == r1_seat["staked"] == 1_100
    r2_seat = check_table_round(store.db, r2, None, doc["ann"]).seat
    assert r2_seat is not None and r2_seat["void"]["refunded"] == 500
    assert r2_seat["void"]["reversed_win"] == doc["cash_out"]
