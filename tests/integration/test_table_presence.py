"""A seat counts as disconnected only when no connection of its session is left on any
process (seed 002 "Disconnessione", issue 28 item 5): two processes' streams on one store
(each its own :class:`~api.table_stream.TableStreams`, as each worker has), ticked by
hand on fake clocks; the presence is in the log (ledger/presence.py), both stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.table_stream import TableStreams
from ledger import contracts
from ledger.presence import LEASE_SECONDS
from ledger.tables.aggregates import (
    Table,
    TableRound,
    TableSeat,
    seat_id_for,
    table_id_for,
    table_round_id_for,
)
from tests.conftest import Store
from tests.integration.stream_helpers import Streamed, Ticker

GRACE = 5.0
CONFIG = {"betting_ms": 10_000, "insurance_ms": 5_000, "step_ms": 5_000, "grace_ms": 0}


class Wall:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def seat(t: Streamed, session: str) -> TableSeat:
    table = t.app.find(Table, table_id_for("T1"))
    assert table is not None
    rnd = t.app.find(TableRound, table_round_id_for("T1", table.rounds))
    assert rnd is not None
    found = t.app.find(TableSeat, seat_id_for(rnd.id, session))
    assert found is not None
    return found


def other_worker(t: Streamed, ticker: Ticker, wall: Wall) -> TableStreams:
    """A second process's streams; both processes' wall clocks read ``wall`` (the hosts
    keep their clocks in step)."""
    t.streams.wall = t.streams.presence.wall = wall
    settings = t.store.settings(stream_grace_seconds=GRACE)
    return TableStreams(t.app, settings, clock=ticker, submit=lambda fn: fn(), wall=wall)


def test_closing_one_of_two_workers_connections_keeps_the_seat_and_its_bets(
    store: Store,
) -> None:
    t = Streamed(store, CONFIG, stream_grace_seconds=GRACE)
    ticker_b, wall = Ticker(), Wall()
    b = other_worker(t, ticker_b, wall)
    ann = t.player("ann")
    t.step()
    on_a = t.subscribe(ann)
    b.connections.opened(ann, "T1")  # the same session's socket on the other worker
    t.bet(ann, "main", 1_000)
    assert t.app.session_balance(ann) == 19_000
    t.drop(on_a)
    t.ticker.now += GRACE + 1
    t.step(1_000)  # worker A releases its hold: B still holds the seat
    assert seat(t, ann).connected and seat(t, ann).status == "open"
    assert t.app.session_balance(ann) == 19_000  # the bet stands
    b.connections.closed(ann, "T1")
    ticker_b.now += GRACE + 1
    b.tick()  # no connection left anywhere: disconnected before the deadline, refunded
    assert not seat(t, ann).connected and seat(t, ann).status == "cancelled"
    assert t.app.session_balance(ann) == 20_000
    topics = [
        n.topic
        for n in t.app.recorder.select_notifications(
            start=1, limit=10_000, topics=[contracts.TABLE_PRESENCE_RELEASED]
        )
    ]
    assert len(topics) == 2  # each worker's release is in the log


def test_a_killed_workers_hold_lapses_and_the_seat_is_disconnected(store: Store) -> None:
    t = Streamed(store, CONFIG, stream_grace_seconds=GRACE)
    ticker_b, wall = Ticker(), Wall()
    b = other_worker(t, ticker_b, wall)
    ann = t.player("ann")
    t.step()
    t.subscribe(ann)  # on worker A, which is then killed: it never releases, never beats
    t.bet(ann, "main", 1_000)
    b.tick()
    assert seat(t, ann).connected  # within the lease B leaves A's hold alone
    wall.now += timedelta(seconds=LEASE_SECONDS - 1)
    ticker_b.now += 10
    b.tick()
    assert seat(t, ann).connected and t.app.session_balance(ann) == 19_000
    wall.now += timedelta(seconds=2)  # A silent for longer than the lease
    ticker_b.now += 10
    b.tick()
    assert not seat(t, ann).connected
    assert t.app.session_balance(ann) == 20_000  # before the deadline: refunded
