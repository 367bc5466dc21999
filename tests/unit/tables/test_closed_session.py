"""A closed session does nothing at a table: every player's command (a chip, UNDO, UNDO
ALL, REPEAT, 2x, ALL SIDE BETS, insurance, a decision, join, leave) is refused with
``session-closed`` before anything about the table is looked at, whatever the table's
state (no round, a betting window open or past its deadline, a step open, an unknown
table), and changes nothing (:meth:`Desk.refused`). So the order of the checks cannot
answer a closed session with a misleading code (``nothing-to-undo`` for a 2x,
``betting-closed`` for a late chip) or accept a join or leave from it."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.errors import SessionClosed
from ledger.tables import commands as tc
from tests.unit.tables.desk import Desk
from tests.unit.tables.test_decisions import SEVENTEEN, finish


def commands(session: str, table: str = "T1") -> list[tc.TableCommand[Any]]:
    return [
        tc.PlaceBet(session, table, "main", 1_000),
        tc.PlaceBet(session, table, "hot-3", 100),
        tc.UndoBet(session, table),
        tc.UndoBet(session, table, everything=True),
        tc.RepeatBets(session, table),
        tc.DoubleBets(session, table),
        tc.AllSideBets(session, table),
        tc.TableDecide(session, table, 0, "insure"),
        tc.TableDecide(session, table, 1, "stand"),
        tc.Connect(session, table),
        tc.Disconnect(session, table),
    ]


def closed_after_a_round(desk: Desk, name: str = "ann") -> str:
    """A session that played round 1 at T1 (so REPEAT would have bets to repeat), then
    closed."""
    ann = desk.player(name)
    desk.bet(ann, "main", 1_000)
    desk.later(10_000)
    desk.advance("deal")
    finish(desk)
    stored = desk.store.aggregates[desk.session(ann).id]
    stored.close()  # type: ignore[attr-defined]
    stored.collect_events()
    assert desk.session(ann).closed
    return ann


def refused_everything(desk: Desk, session: str, table: str = "T1") -> None:
    for cmd in commands(session, table):
        err = desk.refused(SessionClosed, desk.handle, cmd)
        assert err.code == "session-closed", cmd


@pytest.fixture
def desk() -> Desk:
    d = Desk(" ".join([SEVENTEEN] * 3))
    d.open()
    return d


def test_in_an_open_betting_window(desk: Desk) -> None:
    ann = closed_after_a_round(desk)
    desk.open()
    assert desk.round().phase == "betting"
    refused_everything(desk, ann)


def test_after_the_betting_deadline_and_during_a_step(desk: Desk) -> None:
    ann = closed_after_a_round(desk)
    desk.open()
    bob = desk.player("bob")
    desk.bet(bob, "main", 1_000)
    desk.later(10_000)  # the deadline passed, the runner has not dealt yet
    refused_everything(desk, ann)
    desk.advance("deal")
    assert desk.round().phase == "step"
    refused_everything(desk, ann)


def test_with_no_round_open_and_at_an_unknown_table(desk: Desk) -> None:
    ann = closed_after_a_round(desk)
    assert desk.round().phase == "settled"  # the next round is not open yet
    refused_everything(desk, ann)
    refused_everything(desk, ann, "T9")


def test_an_open_sessions_commands_are_answered_as_before(desk: Desk) -> None:
    """The check refuses only closed sessions: an open one joins and leaves with no seat,
    and its 2x with no bet is ``nothing-to-double``."""
    from ledger.tables.errors import NothingToDouble

    ann = desk.player()
    assert desk.run(desk.handle, tc.Connect(ann, "T1")).seated is False
    assert desk.run(desk.handle, tc.Disconnect(ann, "T1")).seated is False
    desk.refused(NothingToDouble, desk.handle, tc.DoubleBets(ann, "T1"))
