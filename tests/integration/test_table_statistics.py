"""The decision statistics a table state serves come from counts kept per round (moved on
from the log as seats decide), not from replaying every seat on every request: they equal
a fresh replay's at every point, and a thousand players asking cost a number of seat
loads that grows with the players, not with their square."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from ledger.tables.aggregates import TableRound, TableSeat, table_round_id_for
from ledger.tables.views import (
    LiveStatistics,
    decision_statistics,
    live_statistics,
    replayed_statistics,
    session_view,
)
from tests.conftest import Store
from tests.integration.table_helpers import Live
from tests.integration.test_table_seats import PLANS, SHOE, first_round, offered


def assert_same(live: Live, step: int) -> None:
    """The kept counts of round 1's ``step`` equal a replay of every seat now."""
    kept = decision_statistics(live.app, "T1", 1, step)
    fresh = replayed_statistics(live.app, "T1", 1, step)
    assert kept == fresh
    # and a new application object (nothing kept) agrees
    rnd = first_round(live)
    assert LiveStatistics(live.app).counts(rnd, step) == live_statistics(live.app).counts(rnd, step)


def test_kept_statistics_equal_a_fresh_replay_after_every_decision(store: Store) -> None:
    live = Live(store, SHOE)
    sessions = {name: live.player(name, p["buy_in"]) for name, p in PLANS.items()}
    live.tick()
    for name, p in PLANS.items():
        live.bet(sessions[name], "main", p["main"])
    live.tick(10_000)
    assert first_round(live).phase == "insurance"
    assert_same(live, 0)  # nobody has decided: empty, and kept so
    assert decision_statistics(live.app, "T1", 1, 0) == []
    for name, p in PLANS.items():
        if p["insurance"] is not None:
            live.decide(sessions[name], 0, "insure" if p["insurance"] else "no-insurance")
            assert_same(live, 0)
    assert decision_statistics(live.app, "T1", 1, 0) != []
    live.tick(5_000)
    rnd = first_round(live)
    assert rnd.phase == "step"
    assert_same(live, 0)  # a new round version: rebuilt, the same
    seen_steps = 0
    while rnd.phase == "step":
        k = rnd.step
        seen_steps += 1
        for name, p in PLANS.items():
            wanted = p["steps"].get(k)
            if wanted is not None and wanted in offered(live, sessions[name]):
                live.decide(sessions[name], k, wanted)
                assert_same(live, k)
        live.tick(5_000)
        rnd = first_round(live)
        assert_same(live, k)  # the step closed (automatic actions): still the replay's
    assert seen_steps >= 2
    # after the round, from the kept counts and from a replay of the history alike
    for k in range(0, 4):
        assert_same(live, k)


class CountingFind:
    """The application's ``find``, counting the seat aggregates it loads."""

    def __init__(self, app: Any) -> None:
        self.inner = app.find
        self.seats = 0

    def __call__(self, cls: type[Any], aggregate_id: UUID) -> Any:
        if cls is TableSeat:
            self.seats += 1
        return self.inner(cls, aggregate_id)


def test_seat_loads_per_request_do_not_grow_with_the_players(store: Store) -> None:
    """N players each decide and ask for the table state: the seat loads stay within a
    few per player (the replaying code loaded every seat per request: N * N)."""
    n = 12
    live = Live(store, SHOE)
    sessions = [live.player(f"p{i:02d}", 20_000) for i in range(n)]
    live.tick()
    for s in sessions:
        live.bet(s, "main", 1_000)
    live.tick(10_000)
    live.tick(5_000)  # nobody answers insurance: step 1 opens
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "step" and len(rnd.seats) == n
    counting = CountingFind(live.app)
    live.app.find = counting  # type: ignore[method-assign]
    try:
        for i, s in enumerate(sessions):
            view = session_view(live.app, "T1", s)
            assert view["statistics"], view  # the state carries the statistics
            # what the players before this one chose, in this situation
            assert sum(int(r["players"]) for r in view["statistics"]) == i
            live.decide(s, 1, "hit" if i % 2 else "stand")
        loads = counting.seats
    finally:
        del live.app.find
    # one replay of the round's seats at the first request, then per request the
    # player's own seat and the seats that decided since: about 3 per player
    assert loads <= 4 * n, loads
    assert decision_statistics(live.app, "T1", 1, 1) == replayed_statistics(live.app, "T1", 1, 1)
