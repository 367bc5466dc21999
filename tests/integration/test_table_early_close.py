"""The runner's early close of a window (every connected seat with a choice has made it)
remembers the seats found with no choice left, so it does not replay every seat each
tick; what it decides is still what replaying every seat says: a seat away does not hold
the window up, and one that comes back with a choice does again."""

from __future__ import annotations

from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, table_round_id_for
from tests.conftest import Store
from tests.integration.table_helpers import Live
from tests.integration.test_table_seats import SHOE, tables


def step_of(live: Live) -> tuple[str, int]:
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None
    return rnd.phase, rnd.step


def test_early_close_waits_for_every_connected_seat_with_a_choice(store: Store) -> None:
    live = Live(store, SHOE)
    a, b, c = (live.player(n, 20_000) for n in ("ann", "bob", "cat"))
    live.tick()
    for s in (a, b, c):
        live.bet(s, "main", 1_000)
    live.tick(10_000)
    live.tick(5_000)  # insurance times out: step 1 opens, every seat has a choice
    assert step_of(live) == ("step", 1)
    live.decide(a, 1, "stand")
    assert live.tick() == [] and step_of(live) == ("step", 1)  # bob and cat to decide
    done = list(tables(live).cache.done.values())[-1]  # this window's round version
    assert len(done) == 1  # ann, who stood, is remembered; the rest are looked at again
    live.app.command(live.rid(), tc.Disconnect(b, "T1"))
    assert live.tick() == [] and step_of(live) == ("step", 1)  # cat still to decide
    live.app.command(live.rid(), tc.Connect(b, "T1"))  # bob is back, with his choice
    live.decide(c, 1, "stand")
    assert live.tick() == [] and step_of(live) == ("step", 1)  # bob holds it up again
    live.app.command(live.rid(), tc.Disconnect(b, "T1"))
    assert live.tick() != []  # bob away: nobody connected is left to decide, it closes
    assert step_of(live) != ("step", 1)
