"""Intake in bulk (issue 28 item 2), through the ledger, both stores: the commands of many
players at one table applied as one batch (:func:`ledger.tables.intake.apply`).

- One transaction for the whole batch; each command gets its own result or typed error;
  a refused command changes nothing (its session's rows are what they were) and fails
  nobody else's.
- A message id twice in one batch, and a resend of an id a batch committed, answer with
  the first answer and write nothing; the same id with another body is refused.
- Every movement the batch made names its own command's request record:
  ``audit-cli verify --pin --balances`` passes on the log, and fails once a record is gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import uuid4

from prometheus_client import REGISTRY

from games.errors import BetAboveMaximum
from ledger import contracts
from ledger.errors import IdempotencyConflict, SessionNotFound
from ledger.tables import commands as tc
from ledger.tables import views
from ledger.tables.aggregates import TableSeat, seat_id_for
from ledger.tables.errors import BettingClosed, SideBetWithoutMain, StepClosed
from ledger.tables.intake import Item, Outcome, apply
from tests.conftest import Store
from tests.helpers import raw_rows
from tests.integration.table_helpers import CONFIG, Live, a_seed_that_stops_at_a_step

PLAYERS = 12


def _bets(sessions: list[str]) -> list[Item]:
    return [Item(f"bet-{i}", tc.PlaceBet(s, "T1", "main", 100 + i)) for i, s in enumerate(sessions)]


def _commits(app: Any) -> list[int]:
    """Counts the store's insert transactions from now on (one per ``save``)."""
    count = [0]
    insert = app.recorder.insert_events

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return insert(*args, **kwargs)

    app.recorder.insert_events = counted
    return count


def _commands(name: str, outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "croupier_commands_total", {"command": name, "outcome": outcome}
    )
    return value or 0.0


def _session_rows(store: Store, session: str) -> list[tuple[Any, ...]]:
    return [r for r in raw_rows(store) if r[1] == session]


def test_a_batch_of_players_is_one_transaction_and_each_gets_its_own_answer(
    store: Store,
) -> None:
    live = Live(store, config=dict(CONFIG))
    sessions = [live.player(f"p{i}") for i in range(PLAYERS)]
    lone = live.player("lone")
    live.tick()
    app = live.app
    lone_before = _session_rows(store, lone)
    commits = _commits(app)
    counted = {o: _commands("blackjack_bet", o) for o in ("ok", "bet-above-maximum")}
    items = [
        *_bets(sessions),
        Item("bad-1", tc.PlaceBet(lone, "T1", "main", 10**9)),  # above the table's limit
        Item("bad-2", tc.PlaceBet(lone, "T1", "hot-3", 100)),  # a side bet before the main
        Item("bad-3", tc.PlaceBet(str(uuid4()), "T1", "main", 100)),  # no such session
        Item("bet-0", tc.PlaceBet(sessions[0], "T1", "main", 100)),  # a twin in the batch
    ]
    outcomes = apply(app, items)
    assert commits[0] == 1  # one transaction for the whole batch
    for i, o in enumerate(outcomes[:PLAYERS]):
        assert o.error is None, o.error
        assert o.unwrap().bets == {"main": 100 + i}
    assert isinstance(outcomes[PLAYERS].error, BetAboveMaximum)
    assert isinstance(outcomes[PLAYERS + 1].error, SideBetWithoutMain)
    assert isinstance(outcomes[PLAYERS + 2].error, SessionNotFound)
    assert outcomes[PLAYERS + 3].unwrap() == outcomes[0].unwrap()  # the first answer
    assert _session_rows(store, lone) == lone_before  # the refused changed nothing
    # the command metrics count each command of the batch by its outcome
    assert _commands("blackjack_bet", "ok") - counted["ok"] == PLAYERS + 1
    assert _commands("blackjack_bet", "bet-above-maximum") - counted["bet-above-maximum"] == 1
    for s, i in zip(sessions, range(PLAYERS), strict=True):
        assert app.get_session(s).balance == 20_000 - (100 + i)

    # resent after the commit: the first answers, nothing written; another body: refused
    before = raw_rows(store)
    again = apply(app, [*_bets(sessions), Item("bet-1", tc.PlaceBet(sessions[1], "T1", "main", 7))])
    assert [o.unwrap() for o in again[:PLAYERS]] == [o.unwrap() for o in outcomes[:PLAYERS]]
    assert isinstance(again[PLAYERS].error, IdempotencyConflict)
    assert raw_rows(store) == before


def test_a_rounds_first_bets_in_a_batch_read_no_seat_one_by_one(store: Store) -> None:
    """The seats a batch's first bets open are known absent from the round's seat
    openings, read once for the batch: no seat is looked up alone (it was one query per
    seat). A second bet in the same batch finds the seat the first one opened."""
    live = Live(store, config=dict(CONFIG))
    sessions = [live.player(f"p{i}") for i in range(PLAYERS)]
    live.tick()
    app = live.app
    read: list[str] = []
    select = app.recorder.select_events

    def counted(originator_id: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(str(originator_id))
        return select(originator_id, *args, **kwargs)

    app.recorder.select_events = counted
    rnd = views.current_round(app, views.table(app, "T1"))
    assert rnd is not None
    seats = {str(seat_id_for(rnd.id, s)) for s in sessions}
    twice = Item("again-0", tc.PlaceBet(sessions[0], "T1", "main", 100))
    outcomes = apply(app, [*_bets(sessions), twice])
    assert all(o.error is None for o in outcomes), [o.error for o in outcomes]
    assert outcomes[-1].unwrap().bets == {"main": 200}
    assert seats.isdisjoint(read), "a seat was looked up alone"
    assert app.get_session(sessions[0]).balance == 20_000 - 200
    for i, s in enumerate(sessions):  # each seat opened once; the first has both chips
        found = app.find(TableSeat, seat_id_for(rnd.id, s))
        assert found is not None
        assert found.chips == ([["main", 100]] * 2 if i == 0 else [["main", 100 + i]])


def test_a_batch_resent_to_a_restarted_application_changes_nothing(store: Store) -> None:
    live = Live(store, config=dict(CONFIG))
    sessions = [live.player(f"p{i}") for i in range(PLAYERS)]
    live.tick()
    first = apply(live.app, _bets(sessions))
    live.app.close()
    fresh = live.open()  # nothing cached: the log alone
    before = raw_rows(store)
    again = apply(
        fresh, [*_bets(sessions), Item("new", tc.PlaceBet(sessions[0], "T1", "hot-3", 100))]
    )
    assert [o.unwrap() for o in again[:PLAYERS]] == [o.unwrap() for o in first]
    assert again[PLAYERS].unwrap().bets == {"main": 100, "hot-3": 100}  # the new one lands
    after = raw_rows(store)
    assert after[: len(before)] == before
    new = after[len(before) :]
    # the new bet's three rows (and any checkpoint the sealer wrote): no resend wrote one
    written = [r[3] for r in new if not r[3].startswith("croupier/checkpoint/")]
    assert sorted(written) == sorted(
        [contracts.SEAT_BET_PLACED, contracts.REQUEST_ACCEPTED, contracts.SESSION_STAKE_DEBITED]
    ), written


def test_decisions_in_bulk_and_late_ones_refused_alone(store: Store) -> None:
    # a shoe whose deal stops at step 1 (a random one sometimes deals a blackjack that
    # settles the round at once, and then no step is open: CI saw that)
    live = Live(store, config=dict(CONFIG), seeds=(a_seed_that_stops_at_a_step(CONFIG),))
    sessions = [live.player(f"p{i}") for i in range(PLAYERS)]
    live.tick()
    assert all(o.error is None for o in apply(live.app, _bets(sessions)))
    live.tick(CONFIG["betting_ms"])  # dealt
    rnd = views.current_round(live.app, views.table(live.app, "T1"))
    assert rnd is not None and rnd.phase.value == "step" and rnd.step == 1
    step, decision = 1, "stand"
    items = [
        Item(f"d-{i}", tc.TableDecide(s, "T1", step, decision)) for i, s in enumerate(sessions)
    ]
    items.append(Item("late", tc.TableDecide(sessions[0], "T1", step + 5, "stand")))
    outcomes = apply(live.app, items)
    for o in outcomes[:PLAYERS]:
        result = o.unwrap()
        assert isinstance(result, tc.SeatDecided)
        assert result.decisions[str(step)][0] == decision
    assert isinstance(outcomes[PLAYERS].error, StepClosed)


def test_bets_after_the_window_are_refused_each_and_the_books_verify(
    store: Store, tmp_path: Path
) -> None:
    live = Live(store, config=dict(CONFIG))
    sessions = [live.player(f"p{i}") for i in range(PLAYERS)]
    live.tick()
    outcomes: list[Outcome] = apply(live.app, _bets(sessions))
    assert all(o.error is None for o in outcomes)
    live.tick(CONFIG["betting_ms"])
    late = apply(
        live.app,
        [Item(f"late-{i}", tc.PlaceBet(s, "T1", "hot-3", 100)) for i, s in enumerate(sessions)],
    )
    assert all(isinstance(o.error, BettingClosed | SideBetWithoutMain) for o in late)
    for _ in range(12):  # every window to its deadline: automatic actions, settled
        live.tick(10_000)
    assert live.verify() == 0


def _collisions(read_from: str) -> float:
    value = REGISTRY.get_sample_value(
        "croupier_group_commit_collisions_total", {"read_from": read_from}
    )
    return value or 0.0


def test_a_batch_on_a_stale_cache_runs_again_as_one_batch_from_the_store(
    store: Store,
) -> None:
    """Another writer changed the table after this process cached it: the batch that read
    the stale table collides, and runs once more as one batch on state read from the
    store (one transaction), not command by command."""
    live = Live(store, config=dict(CONFIG))
    sessions = [live.player(f"p{i}") for i in range(PLAYERS)]
    live.tick()
    app = live.app
    other = live.open()  # a second writer on the same store (another worker)
    other.command("cfg-1", tc.ConfigureTable("T1", {"chip": 200}))  # the table: newer
    careful: list[str] = []
    run_carefully = app.run_carefully

    def counted(p: Any) -> None:
        careful.append(p.request_id)
        run_carefully(p)

    app.run_carefully = counted  # type: ignore[method-assign]
    commits = _commits(app)
    before = {k: _collisions(k) for k in ("cache", "store")}
    outcomes = apply(app, _bets(sessions))
    for i, o in enumerate(outcomes):
        assert o.unwrap().bets == {"main": 100 + i}
    assert careful == []  # no command took the careful path
    assert commits[0] == 1  # the second run's one transaction (the first never saved)
    assert _collisions("cache") - before["cache"] == 1
    assert _collisions("store") - before["store"] == 0
    for s, i in zip(sessions, range(PLAYERS), strict=True):
        assert app.get_session(s).balance == 20_000 - (100 + i)
