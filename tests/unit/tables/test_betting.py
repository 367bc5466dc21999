"""Bets at the live table (seed 002 "Puntare"), handler by handler on an in-memory store:
a chip, UNDO (the last chip, or all), REPEAT, 2x, ALL SIDE BETS, and every refusal with
its typed error, changing nothing."""

from __future__ import annotations

import pytest

from games.errors import BetAboveMaximum, BetBelowMinimum
from ledger.errors import InsufficientFunds, InvalidAmount, SessionBusy, SessionNotFound
from ledger.tables import commands as tc
from ledger.tables.errors import (
    BettingClosed,
    NothingToUndo,
    RepeatNotAllowed,
    SideBetWithoutMain,
    TableNotFound,
    TablePaused,
    UnknownBet,
)
from tests.unit.tables.desk import Desk

# ann: T 7 = hard 17 against a 9 up (the dealer's 9 K = 19 beats her when she stands)
SEVENTEEN = "Ts 9h 7d Kc 2c 3c 4c 5c"


@pytest.fixture
def desk() -> Desk:
    d = Desk(SEVENTEEN)
    d.open()
    return d


def test_a_chip_is_staked_from_the_session_and_held_on_the_seat(desk: Desk) -> None:
    ann = desk.player()
    out = desk.bet(ann, "main", 1_000)
    assert out.bets == {"main": 1_000} and out.balance == 19_000
    desk.bet(ann, "main", 500)  # chips add up on a bet type
    desk.bet(ann, "21+3", 100)
    seat = desk.seat(ann)
    assert seat.chips == [["main", 1_000], ["main", 500], ["21+3", 100]]
    assert seat.bets() == {"main": 1_500, "21+3": 100} and seat.debited == 1_600
    session = desk.session(ann)
    assert session.balance == 18_400 and session.open_round == desk.round().code
    # a player's bet never writes the table round (DESIGN §6)
    assert desk.round().version == 1


def test_undo_takes_back_the_last_chip_then_the_others_in_reverse(desk: Desk) -> None:
    ann = desk.player()
    desk.bet(ann, "main", 1_000)
    desk.bet(ann, "main", 200)
    desk.bet(ann, "hot-3", 100)
    out = desk.run(desk.handle, tc.UndoBet(ann, "T1"))
    assert out.bets == {"main": 1_200} and out.balance == 18_800
    desk.run(desk.handle, tc.UndoBet(ann, "T1"))
    assert desk.seat(ann).chips == [["main", 1_000]]
    assert desk.session(ann).open_round is not None


def test_undo_everything_returns_every_chip_and_frees_the_session(desk: Desk) -> None:
    ann = desk.player()
    desk.bet(ann, "main", 1_000)
    desk.bet(ann, "bust-it", 100)
    out = desk.run(desk.handle, tc.UndoBet(ann, "T1", everything=True))
    assert out.bets == {} and out.balance == 20_000
    assert desk.session(ann).open_round is None  # free to play another game
    desk.refused(NothingToUndo, desk.handle, tc.UndoBet(ann, "T1"))


def test_double_bets_doubles_every_bet_or_none(desk: Desk) -> None:
    ann = desk.player(buy_in=3_000)
    desk.bet(ann, "main", 1_000)
    desk.bet(ann, "perfect-pairs", 100)
    out = desk.run(desk.handle, tc.DoubleBets(ann, "T1"))
    assert out.bets == {"main": 2_000, "perfect-pairs": 200} and out.balance == 800
    # again: 2,200 more is beyond the balance (seed 002: only if it covers all of them)
    desk.refused(InsufficientFunds, desk.handle, tc.DoubleBets(ann, "T1"))


def test_double_bets_within_each_limit(desk: Desk) -> None:
    ann = desk.player(buy_in=2_000_000)
    desk.bet(ann, "main", 300_000)
    desk.refused(BetAboveMaximum, desk.handle, tc.DoubleBets(ann, "T1"))


def test_all_side_bets_puts_one_chip_on_each_side_bet_after_the_main(desk: Desk) -> None:
    ann = desk.player()
    cmd = tc.AllSideBets(ann, "T1")
    desk.refused(SideBetWithoutMain, desk.handle, cmd)
    desk.bet(ann, "main", 1_000)
    out = desk.run(desk.handle, cmd)
    sides = {"perfect-pairs": 100, "21+3": 100, "hot-3": 100, "bust-it": 100}
    assert out.bets == {"main": 1_000, **sides} and out.balance == 18_600


def _play_round_one(desk: Desk, ann: str) -> None:
    desk.bet(ann, "main", 1_000)
    desk.bet(ann, "21+3", 200)
    desk.later(10_000)
    desk.advance("deal")
    desk.decide(ann, 1, "stand")
    desk.advance("step", 1, early=True)
    desk.advance("dealer")
    desk.advance("settle-batch", 0)
    desk.advance("settle")
    desk.open()


def test_repeat_places_the_last_rounds_bets_at_this_table(desk: Desk) -> None:
    ann = desk.player()
    _play_round_one(desk, ann)
    assert desk.round().number == 2
    out = desk.run(desk.handle, tc.RepeatBets(ann, "T1"))
    assert out.bets == {"main": 1_000, "21+3": 200}
    assert desk.seat(ann).chips == [["main", 1_000], ["21+3", 200]]
    placed = [e for e in desk.events(desk.seat(ann).id) if type(e).__name__ == "BetPlaced"]
    assert [(e.bet, e.amount, e.via) for e in placed] == [
        ("main", 1_000, "repeat"),
        ("21+3", 200, "repeat"),
    ]


def test_repeat_only_before_the_first_chip_and_only_after_a_round_here(desk: Desk) -> None:
    ann = desk.player()
    cmd = tc.RepeatBets(ann, "T1")
    err = desk.refused(RepeatNotAllowed, desk.handle, cmd)
    assert "no previous round" in err.message
    _play_round_one(desk, ann)
    desk.bet(ann, "main", 100)
    err = desk.refused(RepeatNotAllowed, desk.handle, cmd)
    assert "before the first chip" in err.message


@pytest.mark.parametrize(
    ("bet", "amount", "error"),
    [
        ("main", 99, BetBelowMinimum),  # a first chip below the minimum
        ("main", 500_001, BetAboveMaximum),
        ("main", 0, InvalidAmount),
        ("main", -100, InvalidAmount),
        ("insurance", 100, UnknownBet),
        ("21+3", 100, SideBetWithoutMain),
        ("main", 20_001, InsufficientFunds),
    ],
)
def test_a_bet_out_of_the_rules_is_refused_and_changes_nothing(
    desk: Desk, bet: str, amount: int, error: type[Exception]
) -> None:
    ann = desk.player()
    desk.refused(error, desk.handle, tc.PlaceBet(ann, "T1", bet, amount))


def test_a_side_bet_above_its_own_limit_is_refused(desk: Desk) -> None:
    ann = desk.player(buy_in=100_000)
    desk.bet(ann, "main", 1_000)
    desk.bet(ann, "hot-3", 50_000)
    desk.refused(BetAboveMaximum, desk.handle, tc.PlaceBet(ann, "T1", "hot-3", 100))


def test_no_bet_after_the_deadline_nor_at_a_paused_or_unknown_table(desk: Desk) -> None:
    ann, bob = desk.player("ann"), desk.player("bob")
    desk.bet(bob, "main", 1_000)
    desk.later(10_000)  # the deadline: the runner has not dealt yet
    err = desk.refused(BettingClosed, desk.handle, tc.PlaceBet(ann, "T1", "main", 1_000))
    assert err.code == "betting-closed"
    desk.advance("deal")
    desk.refused(BettingClosed, desk.handle, tc.PlaceBet(ann, "T1", "main", 1_000))
    desk.refused(TableNotFound, desk.handle, tc.PlaceBet(ann, "T9", "main", 1_000))


def test_no_bet_while_the_table_is_paused(desk: Desk) -> None:
    ann = desk.player()
    desk.run(desk.handle, tc.PauseTable("T1", "dealer change"))
    desk.refused(TablePaused, desk.handle, tc.PlaceBet(ann, "T1", "main", 1_000))
    desk.refused(TablePaused, desk.handle, tc.UndoBet(ann, "T1"))


def test_no_bet_from_an_unknown_session_or_one_in_another_round(desk: Desk) -> None:
    desk.refused(SessionNotFound, desk.handle, tc.PlaceBet("nobody", "T1", "main", 100))
    ann = desk.player()
    session = desk.store.aggregates[desk.session(ann).id]
    session.round_opened("RD-OTHER")  # type: ignore[attr-defined]
    session.collect_events()
    desk.refused(SessionBusy, desk.handle, tc.PlaceBet(ann, "T1", "main", 1_000))


def test_repeat_needs_the_balance_for_every_bet_it_repeats(desk: Desk) -> None:
    ann = desk.player(buy_in=1_500)
    _play_round_one(desk, ann)  # 1,200 staked and lost: 300 left
    desk.refused(InsufficientFunds, desk.handle, tc.RepeatBets(ann, "T1"))


def test_repeat_within_the_limits_of_the_round_it_is_placed_in(desk: Desk) -> None:
    ann = desk.player()
    _play_round_one(desk, ann)  # main 1,000 and 21+3 200, then round 2 opened
    config = {"limits": {"main": [2_000, 500_000]}, "betting_ms": 10_000, "grace_ms": 0}
    desk.run(desk.handle, tc.ConfigureTable("T1", config))
    desk.later(10_000)
    desk.advance("deal")  # round 2: nobody bet, it waits (with the limits it opened with)
    desk.run(desk.handle, tc.RepeatBets(ann, "T1"))
    assert desk.seat(ann).bets() == {"main": 1_000, "21+3": 200}


def test_a_disconnection_before_the_deadline_returns_the_bets(desk: Desk) -> None:
    """seed 002 "Disconnessione": before the betting time ends, the bets are returned."""
    ann = desk.player()
    desk.bet(ann, "main", 1_000)
    desk.bet(ann, "hot-3", 100)
    out = desk.run(desk.handle, tc.Disconnect(ann, "T1"))
    assert out.seated is False and out.balance == 20_000
    seat = desk.seat(ann)
    assert seat.status == "cancelled" and not seat.connected
    assert desk.session(ann).open_round is None
    again = desk.run(desk.handle, tc.Disconnect(ann, "T1"))
    assert again == tc.SeatChanged(seated=False, balance=20_000)  # nothing more to do


def test_after_the_deadline_a_disconnected_seats_bets_stand(desk: Desk) -> None:
    ann = desk.player()
    desk.bet(ann, "main", 1_000)
    desk.later(10_000)
    desk.advance("deal")
    out = desk.run(desk.handle, tc.Disconnect(ann, "T1"))
    assert out.seated is True and out.balance == 19_000
    assert desk.seat(ann).status == "open" and not desk.seat(ann).connected
    back = desk.run(desk.handle, tc.Connect(ann, "T1"))
    assert back.seated is True and desk.seat(ann).connected


def test_the_desk_catches_a_refusal_that_changed_a_stored_aggregate(desk: Desk) -> None:
    """The harness's own check can fail: a handler that debits the session, then refuses."""
    ann = desk.player()

    def debits_then_refuses(uow: object, cmd: tc.PlaceBet) -> None:
        from ledger.unit_of_work import UnitOfWork

        assert isinstance(uow, UnitOfWork)
        uow.session(cmd.session_id).stake("IBJ-X", 100)
        raise InsufficientFunds("refused after the debit")

    with pytest.raises(AssertionError, match="changed \\['GameSession'\\]"):
        desk.refused(InsufficientFunds, debits_then_refuses, tc.PlaceBet(ann, "T1", "main", 1))
