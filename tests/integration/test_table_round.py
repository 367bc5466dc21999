"""A live table round against the pure engine's replay, card by card and payout by payout."""

from __future__ import annotations

from uuid import UUID

from games.blackjack import SeatPlan, Shoe, play_round
from ledger.tables.aggregates import Table, TableRound, TableSeat, table_id_for
from ledger.tables.config import rules_of
from ledger.tables.context import shared_of
from tests.conftest import Store
from tests.integration.table_helpers import Live


def current(live: Live) -> TableRound:
    table = live.app.find(Table, table_id_for("T1"))
    assert table is not None and table.round_id is not None
    rnd = live.app.find(TableRound, UUID(table.round_id))
    assert rnd is not None
    return rnd


def test_one_seat_standing_settles_as_the_engine_replays(store: Store) -> None:
    shoe = Shoe.of("Tc 9h 8d 7s 5c Kd 4h 3c 2d 6s 7h 8c")
    live = Live(store, shoe)
    ann = live.player("ann")
    live.tick()
    live.bet(ann, "main", 1_000)
    assert live.tick(10_000)  # the deal
    rnd = current(live)
    assert rnd.phase == "step" and rnd.player_cards == ["Tc", "8d"] and rnd.up == "9h"
    live.decide(ann, 1, "stand")
    live.tick()  # every seat decided: the step closes early, the dealer plays, settles
    rnd = live.app.find(TableRound, rnd.id)
    assert rnd is not None and rnd.phase == "settled"
    record = play_round(
        rules_of(rnd.config), shoe, 0, [SeatPlan("a", 1_000, decisions={1: "stand"})]
    )
    assert [str(c) for c in record.shared.dealer_cards] == [rnd.up, rnd.hole, *rnd.dealer_draws]
    assert shared_of(rnd, rules_of(rnd.config)).dealer_cards == record.shared.dealer_cards
    seat = live.app.find(TableSeat, UUID(rnd.seats[0]))
    assert seat is not None and seat.result["returned"] == record.settlements[0].returned
    assert live.app.session_balance(ann) == 20_000 - 1_000 + record.settlements[0].returned
