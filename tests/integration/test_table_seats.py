"""Many seats of one live round, each deciding differently, against the engine's replay."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from audit_cli.rows import read_rows
from audit_cli.verify import verify
from games.blackjack import SeatPlan, Shoe, play_round
from ledger.tables import commands as tc
from ledger.tables.aggregates import (
    Table,
    TableRound,
    TableSeat,
    seat_id_for,
    table_id_for,
    table_round_id_for,
)
from ledger.tables.config import rules_of
from ledger.tables.players import Players
from ledger.tables.views import decision_statistics
from tests.conftest import Store
from tests.integration.table_helpers import Live

# 8-8 against an ace: insurance, then hit / stand / double / split / cash-out all offered.
SHOE = Shoe.of("8c Ah 8d 7s 3h Td 2c 9s 4d 5h 6c Kd 3s 2h 4c 5d 9c Th")


def tables(live: Live) -> Players:
    handler: Any = live.app.handlers[tc.PlaceBet]
    found = handler.__self__
    assert isinstance(found, Players)
    return found


def current(live: Live) -> TableRound:
    table = live.app.find(Table, table_id_for("T1"))
    assert table is not None and table.round_id is not None
    rnd = live.app.find(TableRound, UUID(table.round_id))
    assert rnd is not None
    return rnd


def first_round(live: Live) -> TableRound:
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None
    return rnd


def offered(live: Live, session: str) -> list[str]:
    from ledger.unit_of_work import UnitOfWork

    uow = UnitOfWork(live.app.find, {})
    return [o[0] for o in tables(live).offered(uow, "T1", session)]


PLANS: dict[str, dict[str, Any]] = {
    # name: buy-in, main bet, sides, insurance answer, decisions per step
    "ann": {
        "buy_in": 20_000,
        "main": 1_000,
        "sides": {"perfect-pairs": 100},
        "insurance": True,
        "steps": {1: "split", 2: "stand", 3: "hit"},
    },
    "bob": {
        "buy_in": 20_000,
        "main": 1_000,
        "sides": {},
        "insurance": False,
        "steps": {1: "double"},
    },
    "cat": {
        "buy_in": 20_000,
        "main": 1_000,
        "sides": {"21+3": 200},
        "insurance": None,
        "steps": {1: "hit", 2: "stand"},
    },
    "dan": {
        "buy_in": 20_000,
        "main": 1_000,
        "sides": {},
        "insurance": False,
        "steps": {1: "cash-out"},
    },
    "eve": {
        "buy_in": 20_000,
        "main": 1_000,
        "sides": {"bust-it": 100},
        "insurance": None,
        "steps": {},
    },
    "gus": {"buy_in": 1_000, "main": 1_000, "sides": {}, "insurance": None, "steps": {1: "split"}},
    "hal": {"buy_in": 1_400, "main": 1_000, "sides": {}, "insurance": True, "steps": {1: "double"}},
}


def assert_step_one_statistics(rows: list[dict[str, Any]]) -> None:
    eights = [r for r in rows if r["situation"]["cards"] == [8, 8]]
    assert len(eights) == 1
    assert eights[0]["situation"] == {
        "window": "step",
        "cards": [8, 8],
        "total": 16,
        "soft": False,
        "pair": True,
        "n_cards": 2,
        "up": 11,
        "options": ["hit", "stand", "double", "split", "cash-out"],
    }
    # ann and gus split, bob and hal double (gus and hal unfunded: asked, then replaced),
    # cat hits, dan cashes out; eve let the timer run (not a choice)
    assert eights[0]["counts"] == {"split": 2, "double": 2, "hit": 1, "cash-out": 1}


def test_seats_deciding_differently_match_the_engine_card_by_card(store: Store) -> None:
    live = Live(store, SHOE)
    sessions = {name: live.player(name, p["buy_in"]) for name, p in PLANS.items()}
    live.tick()
    for name, p in PLANS.items():
        live.bet(sessions[name], "main", p["main"])
        for bet, amount in p["sides"].items():
            live.bet(sessions[name], bet, amount)
    live.tick(10_000)
    rnd = current(live)
    assert rnd.phase == "insurance" and rnd.up == "Ah"
    sent: dict[str, dict[int, str]] = {name: {} for name in PLANS}
    unfunded: dict[str, set[int]] = {name: set() for name in PLANS}
    for name, p in PLANS.items():
        if p["insurance"] is not None:
            answer = "insure" if p["insurance"] else "no-insurance"
            out = live.decide(sessions[name], 0, answer)
            if out.automatic:
                unfunded[name].add(0)
    live.tick(5_000)
    rnd = current(live)
    assert rnd.phase == "step"
    while rnd.phase == "step":
        k = rnd.step
        for name, p in PLANS.items():
            wanted = p["steps"].get(k)
            if wanted is not None and wanted in offered(live, sessions[name]):
                out = live.decide(sessions[name], k, wanted)
                sent[name][k] = wanted
                if out.automatic:
                    unfunded[name].add(k)
        if k == 1:  # live, within the open step: what the others chose in this situation
            assert_step_one_statistics(decision_statistics(live.app, "T1", 1, 1))
        live.tick(5_000)
        rnd = first_round(live)
    played = first_round(live)
    assert played.phase == "settled"
    assert current(live).number == 2  # the next round opened at once
    plans = [
        SeatPlan(
            name,
            p["main"],
            p["sides"],
            insurance=p["insurance"],
            decisions=sent[name],
            unfunded=frozenset(unfunded[name]),
        )
        for name, p in PLANS.items()
    ]
    record = play_round(rules_of(played.config), SHOE, 0, plans)
    # card by card: the step cards shown and the dealer's hand
    assert played.step_cards == [str(s.card) for s in record.steps if s.card is not None]
    assert [played.up, played.hole, *played.dealer_draws] == [
        str(c) for c in record.shared.dealer_cards
    ]
    # payout by payout, and every session's balance
    for (name, p), settlement in zip(PLANS.items(), record.settlements, strict=True):
        seat = live.app.find(TableSeat, seat_id_for(played.id, sessions[name]))
        assert seat is not None and seat.status == "settled"
        assert seat.result["returned"] == settlement.returned, name
        assert seat.result["staked"] == settlement.staked, name
        assert [h[0] for h in seat.result["hands"]] == [h.outcome.value for h in settlement.hands]
        assert live.app.session_balance(sessions[name]) == (
            p["buy_in"] - settlement.staked + settlement.returned
        ), name
    # the rule cases this round is meant to show did happen
    assert sent["ann"][1] == "split" and len(record.seats[0].hands) == 2
    assert sent["dan"][1] == "cash-out" and record.seats[3].cashed_out is not None
    assert 1 in unfunded["gus"] and record.seats[5].actions[-1].reason is not None
    assert 1 in unfunded["hal"] and 0 in unfunded["hal"]
    eve = str(seat_id_for(played.id, sessions["eve"]))
    assert [eve, "no-insurance", "timeout"] in played.automatic["0"]
    assert [eve, "stand", "timeout"] in played.automatic["1"]  # 16 > 11: stand (seed 002)
    assert_step_one_statistics(decision_statistics(live.app, "T1", step=1))  # history
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert report.ok, report.findings
