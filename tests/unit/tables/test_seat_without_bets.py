"""A seat whose every chip was taken back (UNDO one by one, or UNDO ALL) before the deal
has no bet: seed 002 deals only the players who bet, so it is not part of the round,
exactly as a session that never bet. Its status is ``no-bet`` from that undo on (not
``open`` for ever), it is not dealt in, the runner's settlement and finish and an
operator's void leave it alone (no event on it), and join and leave answer it as they
answer a session with no seat. A chip placed again in the window opens it again."""

from __future__ import annotations

from ledger.tables import commands as tc
from ledger.tables.aggregates import SeatStatus
from ledger.tables.errors import NothingToDouble, NothingToUndo
from tests.unit.tables.desk import Desk
from tests.unit.tables.test_decisions import SEVENTEEN, finish


def emptied(desk: Desk, name: str, everything: bool) -> str:
    """A session that bet main and hot-3 in the open window, then took both back."""
    sid = desk.player(name)
    desk.bet(sid, "main", 1_000)
    desk.bet(sid, "hot-3", 100)
    if everything:
        out = desk.run(desk.handle, tc.UndoBet(sid, "T1", everything=True))
    else:
        desk.run(desk.handle, tc.UndoBet(sid, "T1"))
        out = desk.run(desk.handle, tc.UndoBet(sid, "T1"))
    assert out.bets == {} and out.balance == 20_000
    assert out.status == "no-bet" and out.seated is False  # as a session with no seat
    return sid


def test_a_seat_emptied_by_undo_is_not_part_of_the_round_to_its_end() -> None:
    desk = Desk(SEVENTEEN)
    desk.open()
    ann, bea = emptied(desk, "ann", True), emptied(desk, "bea", False)
    bob, carl = desk.player("bob"), desk.player("carl")  # carl never bets
    desk.bet(bob, "main", 1_000)
    for sid in (ann, bea):
        assert desk.seat(sid).status is SeatStatus.NO_BET
        assert desk.session(sid).open_round is None  # free for another game
    desk.later(10_000)
    desk.advance("deal")
    assert desk.round().seats == [str(desk.seat(bob).id)]
    written = {sid: len(desk.events(desk.seat(sid).id)) for sid in (ann, bea)}
    finish(desk)
    rnd = desk.round()
    assert rnd.phase == "settled" and rnd.totals == {"staked": 1_000, "returned": 0}
    assert desk.seat(bob).status == "settled"
    for sid in (ann, bea):
        seat = desk.seat(sid)
        assert seat.status == "no-bet" and seat.result == {} and seat.debited == 0
        assert len(desk.events(seat.id)) == written[sid]  # the runner wrote nothing on it
        assert desk.balance(sid) == 20_000
    # join and leave answer the emptied seats as the session that never bet
    for cmd in (tc.Connect, tc.Disconnect):
        never = desk.run(desk.handle, cmd(carl, "T1"))
        assert never == tc.SeatChanged(seated=False, balance=20_000)
        for sid in (ann, bea):
            assert desk.run(desk.handle, cmd(sid, "T1")) == never


def test_an_operators_void_leaves_an_emptied_seat_alone() -> None:
    desk = Desk(SEVENTEEN)
    desk.open()
    ann = emptied(desk, "ann", True)
    bob = desk.player("bob")
    desk.bet(bob, "main", 1_000)
    desk.later(10_000)
    desk.advance("deal")
    before = len(desk.events(desk.seat(ann).id))
    out = desk.run(desk.handle, tc.VoidTableRound("T1", desk.round().code, "fault", "INC-1"))
    assert out.refunded == 1_000
    assert desk.seat(bob).status == "voided"
    assert desk.seat(ann).status == "no-bet" and len(desk.events(desk.seat(ann).id)) == before


def test_a_chip_placed_again_opens_the_emptied_seat_and_it_plays() -> None:
    desk = Desk(SEVENTEEN)
    desk.open()
    ann = emptied(desk, "ann", True)
    desk.refused(NothingToUndo, desk.handle, tc.UndoBet(ann, "T1"))
    desk.refused(NothingToDouble, desk.handle, tc.DoubleBets(ann, "T1"))
    out = desk.bet(ann, "main", 500)
    assert out.status == "open" and out.seated is True and out.bets == {"main": 500}
    desk.later(10_000)
    desk.advance("deal")
    assert desk.round().seats == [str(desk.seat(ann).id)]
    finish(desk)
    assert desk.seat(ann).status == "settled" and desk.balance(ann) == 19_500
