"""A table command is judged by when it arrived (:mod:`ledger.tables.arrivals`), both
stores: a bet or a decision that arrived before its window's deadline and ran after it is
taken; one that arrived at or after the deadline is refused and changes nothing; the
runner holds a window past its deadline while such a command waits in the process's
intake, for at most ``MAX_HOLD``; the intake of the edge stamps every command and forgets
it once answered."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import psycopg
import pytest

from api.table_intake import TableQueue
from api.table_runners import TableRunners
from ledger.casino import Casino
from ledger.tables import commands as tc
from ledger.tables import intake, views
from ledger.tables.arrivals import MAX_HOLD, Arrivals
from ledger.tables.context import parse_time
from ledger.tables.errors import BettingClosed, StepClosed
from ledger.tables.intake import Item, apply
from tests.conftest import PG_URL, Store
from tests.helpers import raw_rows
from tests.integration.table_helpers import CONFIG, T0, Live, a_seed_that_stops_at_a_step

MS = timedelta(milliseconds=1)


def _deadline(live: Live) -> datetime:
    rnd = views.current_round(live.app, views.table(live.app, "T1"))
    assert rnd is not None and rnd.deadline is not None
    return parse_time(rnd.deadline)


def _phase(live: Live) -> str:
    rnd = views.current_round(live.app, views.table(live.app, "T1"))
    assert rnd is not None
    return rnd.phase.value


def _two_workers(store: Store) -> tuple[Live, str, Casino] | None:
    """A table with one player (its session) and its round open, and a second application
    on the same log (a second worker: same log, same clock); None on SQLite, where there
    is one process and nothing to share (checked here)."""
    live = Live(store, config=dict(CONFIG), seeds=(a_seed_that_stops_at_a_step(CONFIG),))
    if store.kind == "sqlite":
        assert live.app.table_holds is None
        return None
    player = live.player("p")
    live.tick()
    other = live.open()
    assert other.table_holds is not None and other.table_arrivals is not None
    return live, player, other


def test_a_bet_is_judged_by_its_arrival_not_by_when_it_ran(store: Store) -> None:
    live = Live(store, config=dict(CONFIG))
    on_time, late, unstamped = live.player("on-time"), live.player("late"), live.player("none")
    live.tick()
    deadline = _deadline(live)
    live.clock.advance(CONFIG["betting_ms"] + 2_000)  # the batch runs 2 s after the deadline
    before = raw_rows(store)
    outcomes = apply(
        live.app,
        [
            Item("a", tc.PlaceBet(on_time, "T1", "main", 100), arrived=deadline - MS),
            Item("b", tc.PlaceBet(late, "T1", "main", 100), arrived=deadline),
            Item("c", tc.PlaceBet(unstamped, "T1", "main", 100)),  # judged as it runs
        ],
    )
    assert outcomes[0].unwrap().bets == {"main": 100}
    assert isinstance(outcomes[1].error, BettingClosed)
    assert isinstance(outcomes[2].error, BettingClosed)
    after = raw_rows(store)
    assert after[: len(before)] == before
    touched = {r[1] for r in after[len(before) :]}
    for refused in (late, unstamped):  # nothing of the refused sessions was written
        assert refused not in touched
    for _ in range(12):  # the round dealt and played out by its timers: the books verify
        live.tick(10_000)
    assert live.verify() == 0


def test_a_decision_is_judged_by_its_arrival_and_only_in_its_open_step(store: Store) -> None:
    live = Live(store, config=dict(CONFIG), seeds=(a_seed_that_stops_at_a_step(CONFIG),))
    a, b, c = live.player("a"), live.player("b"), live.player("c")
    live.tick()
    for s in (a, b, c):
        live.bet(s, "main", 100)
    live.tick(CONFIG["betting_ms"])  # dealt: step 1 open
    assert _phase(live) == "step"
    deadline = _deadline(live)
    live.clock.advance(CONFIG["step_ms"] + 1_000)
    outcomes = apply(
        live.app,
        [
            Item("da", tc.TableDecide(a, "T1", 1, "stand"), arrived=deadline - MS),
            Item("db", tc.TableDecide(b, "T1", 1, "stand"), arrived=deadline),
            Item("dc", tc.TableDecide(c, "T1", 1, "stand")),
        ],
    )
    assert outcomes[0].unwrap().decisions["1"][0] == "stand"
    assert isinstance(outcomes[1].error, StepClosed)
    assert isinstance(outcomes[2].error, StepClosed)
    live.tick()  # the step closes: b and c get the automatic action
    rnd = views.current_round(live.app, views.table(live.app, "T1"))
    assert rnd is not None and (rnd.phase.value != "step" or rnd.step != 1)
    # once the runner has closed the step, a stamp before its deadline does not reopen it
    again = apply(live.app, [Item("db2", tc.TableDecide(b, "T1", 1, "hit"), arrived=deadline - MS)])
    assert isinstance(again[0].error, StepClosed)


def test_the_runner_holds_a_window_for_a_command_that_arrived_in_time(store: Store) -> None:
    live = Live(store, config=dict(CONFIG), seeds=(a_seed_that_stops_at_a_step(CONFIG),))
    player = live.player("p")
    live.tick()
    arrivals = live.app.table_arrivals
    assert isinstance(arrivals, Arrivals)
    deadline = _deadline(live)
    live.clock.now = deadline - MS
    stamp = arrivals.enter("T1")  # arrived 1 ms before the deadline, not yet run
    assert live.tick(CONFIG["betting_ms"]) == []  # past the deadline: held, nothing dealt
    assert _phase(live) == "betting"
    bet = apply(live.app, [Item("held", tc.PlaceBet(player, "T1", "main", 100), arrived=stamp)])
    assert bet[0].unwrap().bets == {"main": 100}
    arrivals.leave("T1", stamp)
    assert live.tick() != []  # answered: the runner deals (a shoe that stops at a step)
    assert _phase(live) == "step"


def test_the_hold_ends_after_max_hold(store: Store) -> None:
    live = Live(store, config=dict(CONFIG))
    live.player("p")
    live.tick()
    arrivals = live.app.table_arrivals
    assert arrivals is not None
    deadline = _deadline(live)
    live.clock.now = deadline - MS
    arrivals.enter("T1")  # a command stuck in the intake, never answered
    live.clock.now = deadline + MAX_HOLD - MS  # grace is 0 in CONFIG
    assert live.tick() == []
    live.clock.now = deadline + MAX_HOLD
    assert live.tick() != []  # the hold is over: the window closes (no bet: it waits)
    assert _phase(live) == "betting"
    rnd = views.current_round(live.app, views.table(live.app, "T1"))
    assert rnd is not None and rnd.deadline is None


def test_a_command_that_arrived_after_the_deadline_does_not_hold_the_window(store: Store) -> None:
    live = Live(store, config=dict(CONFIG))
    live.player("p")
    live.tick()
    arrivals = live.app.table_arrivals
    assert arrivals is not None
    deadline = _deadline(live)
    live.clock.now = deadline
    arrivals.enter("T1")
    assert live.tick() != []  # closed at once: no command that arrived in time waits


def test_the_edge_intake_stamps_each_command_and_forgets_it_once_answered(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = Live(store, config=dict(CONFIG))
    players = [live.player(f"p{i}") for i in range(3)]
    live.tick()
    arrivals = live.app.table_arrivals
    assert arrivals is not None
    seen: list[tuple[int, list[object]]] = []

    def watched(app: object, items: list[Item]) -> object:
        seen.append((arrivals.waiting("T1"), [item.arrived for item in items]))
        return apply(live.app, items)

    monkeypatch.setattr(intake, "apply", watched)
    queue = TableQueue(live.app)

    async def play() -> list[tc.SeatChanged]:
        return await asyncio.gather(
            *(
                queue.submit(Item(f"e{i}", tc.PlaceBet(s, "T1", "main", 100)))
                for i, s in enumerate(players)
            )
        )

    results = asyncio.run(play())
    assert [r.bets for r in results] == [{"main": 100}] * 3
    assert seen and all(stamp == T0 for _, stamps in seen for stamp in stamps)
    assert all(waiting >= len(stamps) for waiting, stamps in seen)  # a batch waits while it runs
    assert arrivals.waiting("T1") == 0  # every one answered: nothing holds the window


def test_arrivals_count_each_stamp_and_the_oldest_decides() -> None:
    clock_times = [T0, T0, T0 + MS]
    arrivals = Arrivals(lambda: clock_times.pop(0))
    first, second, third = arrivals.enter("T"), arrivals.enter("T"), arrivals.enter("T")
    assert first == second == T0 and arrivals.waiting("T") == 3
    assert arrivals.waiting_before("T", T0 + MS) and not arrivals.waiting_before("T", T0)
    arrivals.leave("T", first)
    assert arrivals.waiting_before("T", T0 + MS)  # the second stamp at T0 still waits
    arrivals.leave("T", second)
    assert not arrivals.waiting_before("T", T0 + MS)
    arrivals.leave("T", third)
    arrivals.leave("T", third)  # an extra leave is ignored
    assert arrivals.waiting("T") == 0 and not arrivals.waiting_before("T", T0 + MS * 10)
    assert not arrivals.waiting_before("other", T0 + MS)


def test_a_command_sent_alone_is_judged_when_it_runs(store: Store) -> None:
    live = Live(store, config=dict(CONFIG))
    player = live.player("p")
    live.tick()
    live.clock.advance(CONFIG["betting_ms"])
    with pytest.raises(BettingClosed):
        live.bet(player, "main", 100)


def test_the_runner_holds_a_window_for_a_command_waiting_in_another_worker(
    store: Store,
) -> None:
    """Two applications on one log (two workers): the runner of the first holds the
    betting window while the second's intake holds a bet that arrived in time, and deals
    once it is answered; on SQLite (one process) there is nothing to share."""
    workers = _two_workers(store)
    if workers is None:
        return
    live, player, other = workers
    assert other.table_holds is not None and other.table_arrivals is not None
    deadline = _deadline(live)
    live.clock.now = deadline - MS
    stamp = other.table_arrivals.enter("T1")
    TableRunners(other).share_holds()  # the tables' thread does it every interval
    assert other.table_holds.held
    live.clock.now = deadline + timedelta(seconds=2)  # past the grace: the runner looks
    assert live.runner.tick(live.clock.now) == []
    assert _phase(live) == "betting"
    bet = apply(other, [Item("w2", tc.PlaceBet(player, "T1", "main", 100), arrived=stamp)])
    assert bet[0].unwrap().bets == {"main": 100}
    other.table_arrivals.leave("T1", stamp)
    other.table_holds.sync()  # the lock goes with the last waiting command
    assert not other.table_holds.held
    assert live.runner.tick(live.clock.now) != []
    assert _phase(live) == "step"  # dealt (a shoe that stops at a step)


def test_another_workers_hold_ends_with_max_hold_and_with_its_connection(store: Store) -> None:
    workers = _two_workers(store)
    if workers is None:
        return
    live, _, other = workers
    assert other.table_holds is not None and other.table_arrivals is not None
    deadline = _deadline(live)
    live.clock.now = deadline - MS
    other.table_arrivals.enter("T1")  # stuck: never answered
    other.table_holds.sync()
    live.clock.now = deadline + MAX_HOLD - MS
    assert live.runner.tick(live.clock.now) == []
    # the worker dies: its connection, and the locks with it
    kept = other.table_holds._kept
    assert kept is not None
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (kept[1].info.backend_pid,))
    assert live.runner.tick(live.clock.now) != []  # closed before MAX_HOLD: nobody holds


def test_a_late_command_elsewhere_holds_only_within_its_second(store: Store) -> None:
    """A command that arrived after the deadline, in a later second, holds nothing."""
    workers = _two_workers(store)
    if workers is None:
        return
    live, _, other = workers
    assert other.table_holds is not None and other.table_arrivals is not None
    deadline = _deadline(live)
    live.clock.now = deadline + timedelta(seconds=1)
    other.table_arrivals.enter("T1")
    other.table_holds.sync()
    assert other.table_holds.held
    assert live.runner.tick(live.clock.now) != []
