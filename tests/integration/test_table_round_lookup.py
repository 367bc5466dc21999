"""The operator's round by game code loads that round's seats once each: not every seat
opened since (later rounds'), and not again per seat for its history."""

from __future__ import annotations

from ledger.tables.aggregates import TableRound, table_round_id_for
from ledger.tables.views import find_round, round_detail, round_seats
from tests.conftest import Store
from tests.integration.table_helpers import Live
from tests.integration.test_table_seats import SHOE
from tests.integration.test_table_statistics import CountingFind


def test_a_round_by_code_loads_only_its_own_seats_once(store: Store) -> None:
    live = Live(store, SHOE)
    first = [live.player(f"a{i}", 20_000) for i in range(3)]
    later = [live.player(f"b{i}", 20_000) for i in range(5)]
    live.tick()
    for s in first:
        live.bet(s, "main", 1_000)
    live.tick(10_000)
    for _ in range(8):
        live.tick(5_000)
    one = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert one is not None and one.phase == "settled"
    for s in [*first, *later]:  # round 2's seats, opened after round 1's
        live.bet(s, "main", 1_000)
    two = live.app.find(TableRound, table_round_id_for("T1", 2))
    assert two is not None and two.phase == "betting"
    assert [s.session_id for s in round_seats(live.app, two)] == [*first, *later]

    counting = CountingFind(live.app)
    live.app.find = counting  # type: ignore[method-assign]
    try:
        doc = round_detail(live.app, one.code)
    finally:
        del live.app.find
    assert [s["session_id"] for s in doc["seat_list"]] == first
    assert all(s["dealt"] and s["status"] == "settled" for s in doc["seat_list"])
    assert all(s["hands"] for s in doc["seat_list"])
    assert counting.seats == len(first), counting.seats
    assert find_round(live.app, one.code).id == one.id
