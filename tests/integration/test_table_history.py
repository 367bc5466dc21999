"""Histories of a live table: account rows newest first, the round's phases, a seat's view."""

from __future__ import annotations

from games.blackjack import Shoe
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, table_round_id_for
from ledger.tables.views import player_rounds, round_history, seat_history
from tests.conftest import Store
from tests.integration.table_helpers import Live

SHOE = Shoe.of("9c Th 7d 6s 2h 3d 4c 5s 6d 7h 8c 9s Kd Qh 2c 3h 4d 5c 6h 7c 8d 9h Tc Jd Qs")


def test_histories_show_settled_and_voided_rounds_newest_first(store: Store) -> None:
    live = Live(store, SHOE)
    ann, bob = live.player("ann"), live.player("bob")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.bet(ann, "hot-3", 100)
    live.bet(bob, "main", 1_000)
    live.tick(10_000)
    live.decide(ann, 1, "hit")  # bob lets the timer run: 16 stands
    live.tick(5_000)
    live.tick(5_000)
    first = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert first is not None and first.phase == "settled"
    live.bet(ann, "main", 500)
    live.tick(10_000)
    second = live.app.find(TableRound, table_round_id_for("T1", 2))
    assert second is not None
    live.app.command("v", tc.VoidTableRound("T1", second.code, "shoe jam", "INC-9"))

    rows = player_rounds(live.app, "ann")
    assert [r["code"] for r in rows] == [second.code, first.code]  # newest first
    assert rows[0]["status"] == "voided" and rows[0]["wins"] == 0
    assert rows[1]["bets"] == {"main": 1_000, "hot-3": 100} and rows[1]["game"] == "blackjack"
    assert rows[1]["wins"] == first.totals["returned"] - _bob_returned(live, first, bob)

    history = round_history(live.app, "T1", first.code)
    assert [p[0] for p in history["phases"]] == [
        "betting",
        "step-1",
        "step-2",
        "dealer",
        "settling",
        "settled",
    ]
    assert history["seats"] == 2 and history["player_cards"] == ["9c", "7d"]
    assert history["dealer_cards"][0] == "Th" and history["step_cards"] == ["2h"]
    assert round_history(live.app, "T1", second.code)["void"] == {
        "reason": "shoe jam",
        "incident_id": "INC-9",
    }

    mine = seat_history(live.app, "T1", first.code, ann)
    assert mine["decisions"]["1"] == {"decision": "hit", "requested": None, "automatic": None}
    assert mine["hands"][0]["cards"] == ["9c", "7d", "2h"]
    theirs = seat_history(live.app, "T1", first.code, bob)
    assert theirs["decisions"]["1"]["automatic"] == "timeout"


def _bob_returned(live: Live, rnd: TableRound, bob: str) -> int:
    return int(seat_history(live.app, "T1", rnd.code, bob)["result"]["returned"])
