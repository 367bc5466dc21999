"""``audit-cli round IBJ-… --session ID``: one player's bets, decisions per step (automatic
ones marked), hands and payouts, from raw rows, checked against the engine's replay."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from audit_cli.main import main as audit_cli
from audit_cli.table_round import check_table_round
from games.blackjack import SeatPlan, play_round
from ledger import contracts
from ledger.tables.aggregates import TableRound, seat_id_for, table_round_id_for
from ledger.tables.config import rules_of
from tests.conftest import Store
from tests.integration.table_helpers import Live
from tests.integration.test_table_seats import PLANS, SHOE, offered
from tests.integration.test_table_shoe import ONE_DECK, POLICY, play_a_round


def first_round(live: Live) -> TableRound:
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None
    return rnd


def play_plans(live: Live) -> tuple[dict[str, str], dict[str, dict[int, str]], dict[str, set[int]]]:
    """Round 1 with every seat of PLANS deciding as planned; what was sent, and where
    seed 002's fallback replaced an unfunded choice."""
    sessions = {name: live.player(name, p["buy_in"]) for name, p in PLANS.items()}
    live.tick()
    for name, p in PLANS.items():
        live.bet(sessions[name], "main", p["main"])
        for bet, amount in p["sides"].items():
            live.bet(sessions[name], bet, amount)
    live.tick(10_000)
    sent: dict[str, dict[int, str]] = {name: {} for name in PLANS}
    unfunded: dict[str, set[int]] = {name: set() for name in PLANS}
    for name, p in PLANS.items():
        if p["insurance"] is not None:
            out = live.decide(sessions[name], 0, "insure" if p["insurance"] else "no-insurance")
            if out.automatic:
                unfunded[name].add(0)
    live.tick(5_000)
    while first_round(live).phase == "step":
        k = first_round(live).step
        for name, p in PLANS.items():
            wanted = p["steps"].get(k)
            if wanted is not None and wanted in offered(live, sessions[name]):
                out = live.decide(sessions[name], k, wanted)
                sent[name][k] = wanted
                if out.automatic:
                    unfunded[name].add(k)
        live.tick(5_000)
    assert first_round(live).phase == "settled"
    return sessions, sent, unfunded


def test_each_players_view_of_a_settled_round_matches_the_engine(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    live = Live(store, SHOE)
    sessions, sent, unfunded = play_plans(live)
    rnd = first_round(live)
    plans = [
        SeatPlan(n, p["main"], p["sides"], p["insurance"], sent[n], frozenset(unfunded[n]))
        for n, p in PLANS.items()
    ]
    engine = play_round(rules_of(rnd.config), SHOE, 0, plans)
    keys = store.keyring.public_keys
    for i, (name, p) in enumerate(PLANS.items()):
        report = check_table_round(store.db, rnd.code, keys, sessions[name])
        assert report.ok, report.problems
        assert report.signatures_checked and not report.rederived  # the shoe is still live
        seat = report.seat
        assert seat is not None and seat["status"] == "settled"
        assert seat["seat_id"] == str(seat_id_for(rnd.id, sessions[name]))
        assert seat["bets"] == {"main": p["main"], **p["sides"]}
        hands, settlement = engine.seats[i].hands, engine.settlements[i]
        assert [h["cards"] for h in seat["hands"]] == [[str(c) for c in h.cards] for h in hands]
        assert [(h["outcome"], h["payout"]) for h in seat["hands"]] == [
            (h.outcome.value, h.payout) for h in settlement.hands
        ]
        assert seat["result"]["returned"] == settlement.returned == seat["engine"]["returned"]
        assert seat["staked"] == settlement.staked and seat["paid"] == settlement.returned
        for k, wanted in sent[name].items():
            d = seat["decisions"][str(k)]
            assert (d["requested"] or d["decision"]) == wanted, (name, k, d)
            assert (d["automatic"] is not None) == (k in unfunded[name]), (name, k, d)
    eve = check_table_round(store.db, rnd.code, keys, sessions["eve"]).seat
    assert eve is not None
    assert eve["decisions"]["0"] == {
        "decision": "no-insurance",
        "requested": None,
        "automatic": "timeout",
    }
    assert eve["decisions"]["1"]["automatic"] == "timeout"
    gus = check_table_round(store.db, rnd.code, keys, sessions["gus"]).seat
    assert gus is not None and gus["decisions"]["1"]["requested"] == "split"
    assert gus["decisions"]["1"]["decision"] != "split"  # seed 002's fallback applied
    capsys.readouterr()
    assert (
        audit_cli(["round", rnd.code, "--db", store.db, "--session", sessions["ann"], "--json"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["seat"]["bets"] == {"main": 1_000, "perfect-pairs": 100}
    assert len(doc["seat"]["hands"]) == 2  # ann split
    assert (
        audit_cli(["round", rnd.code, "--db", store.db, "--session", sessions["dan"], "--wide"])
        == 0
    )
    text = capsys.readouterr().out
    assert "cash-out" in text and "decisions per step" in text
    # a session with no seat in the round is a finding (exit 1)
    assert audit_cli(["round", rnd.code, "--db", store.db, "--session", "nobody", "--json"]) == 1


def test_a_changed_payout_is_caught_from_the_shown_cards_while_the_shoe_is_live(
    sqlite_store: Store,
) -> None:
    store = sqlite_store
    live = Live(store, SHOE)
    sessions, _, _ = play_plans(live)
    rnd = first_round(live)
    assert check_table_round(store.db, rnd.code, None, sessions["bob"]).ok
    conn = store.connect()
    try:
        rows = conn.execute(
            "SELECT rowid, state FROM stored_events WHERE topic = ?", (contracts.SEAT_SETTLED,)
        ).fetchall()
        target = next((rid, bytes(st)) for rid, st in rows if b'"returned": 0' not in bytes(st))
        forged = re.sub(rb'"returned": ?(\d+)', rb'"returned": 1\1', target[1], count=1)
        assert forged != target[1]
        conn.execute("DROP TRIGGER IF EXISTS stored_events_no_update")  # the insider's power
        conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (forged, target[0]))
    finally:
        conn.close()
    # without keys (signatures unchecked) the replay of the shown cards still catches it
    findings = [
        f
        for name in PLANS
        for f in check_table_round(store.db, rnd.code, None, sessions[name]).findings
    ]
    assert any(f.field.startswith("payout") for f in findings), findings
    keyed = check_table_round(store.db, rnd.code, store.keyring.public_keys)
    assert any(f.field == "signature" for f in keyed.findings), keyed.findings


def test_every_players_view_of_every_round_of_a_revealed_shoe_rederives(
    sqlite_store: Store,
) -> None:
    store = sqlite_store
    live = Live(store, config=ONE_DECK)
    sessions = {name: live.player(name, 50_000) for name in POLICY}
    live.tick()
    rounds: list[TableRound] = []
    while not rounds or rounds[-1].next_start is not None:
        rounds.append(play_a_round(live, sessions, len(rounds) + 1))
        assert len(rounds) < 30
    keys = store.keyring.public_keys
    seen: dict[str, Any] = {}
    for rnd in rounds:
        for name, session in sessions.items():
            report = check_table_round(store.db, rnd.code, keys, session)
            assert report.ok and report.rederived, report.problems
            assert report.seat is not None and report.seat["hands"], (rnd.code, name)
            seen[f"{rnd.code}/{name}"] = report.seat["result"]["returned"]
    assert len(seen) == len(rounds) * len(sessions) and len(rounds) >= 3
