"""Bad input at a live table: typed errors, and the stored rows stay exactly as they were."""

from __future__ import annotations

from games.blackjack import AlreadyDecided, NotAnOption, Shoe
from games.errors import BetAboveMaximum, BetBelowMinimum
from ledger.errors import InsufficientFunds
from ledger.tables import commands as tc
from ledger.tables.aggregates import TableRound, table_round_id_for
from ledger.tables.errors import (
    BettingClosed,
    NotSeated,
    RepeatNotAllowed,
    SideBetWithoutMain,
    StepClosed,
    TableNotFound,
    UnknownBet,
)
from tests.conftest import Store
from tests.helpers import assert_refused
from tests.integration.table_helpers import Live

# 9-7 against a ten: hit, stand, double, cash-out offered; no split, no insurance.
SHOE = Shoe.of("9c Th 7d 6s 2h 3d 4c 5s 6d 7h 8c 9s Kd Qh")


def test_bets_outside_limits_window_or_balance_are_refused_and_change_nothing(
    store: Store,
) -> None:
    live = Live(store, SHOE)
    ann = live.player("ann", buy_in=5_000)
    live.tick()
    bet = live.bet
    assert_refused(store, BetBelowMinimum, bet, ann, "main", 99)
    assert_refused(store, BetAboveMaximum, bet, ann, "main", 500_001)
    assert_refused(store, SideBetWithoutMain, bet, ann, "perfect-pairs", 100)
    assert_refused(store, UnknownBet, bet, ann, "lucky-ladies", 100)
    assert_refused(store, InsufficientFunds, bet, ann, "main", 5_100)
    assert_refused(
        store, TableNotFound, live.app.command, "x1", tc.PlaceBet(ann, "T9", "main", 100)
    )
    bet(ann, "main", 4_000)
    assert_refused(store, InsufficientFunds, live.app.command, "x2", tc.DoubleBets(ann, "T1"))
    assert_refused(store, RepeatNotAllowed, live.app.command, "x3", tc.RepeatBets(ann, "T1"))
    assert_refused(store, BetAboveMaximum, bet, ann, "bust-it", 50_100)
    live.clock.advance(10_000)  # exactly the deadline: the window is closed
    assert_refused(store, BettingClosed, bet, ann, "main", 100)


def test_decisions_for_a_closed_step_another_seat_or_not_offered_are_refused(
    store: Store,
) -> None:
    live = Live(store, SHOE)
    ann, bob, cat = live.player("ann"), live.player("bob"), live.player("cat")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.bet(bob, "main", 1_000)
    live.tick(10_000)
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "step" and rnd.step == 1
    assert_refused(store, NotSeated, live.decide, cat, 1, "stand")  # never bet
    assert_refused(store, StepClosed, live.decide, ann, 2, "stand")  # not open yet
    assert_refused(store, StepClosed, live.decide, ann, 0, "insure")  # no insurance window
    assert_refused(store, NotAnOption, live.decide, ann, 1, "split")  # 9-7 is no pair
    live.decide(ann, 1, "hit")
    assert_refused(store, AlreadyDecided, live.decide, ann, 1, "stand")
    live.tick(5_000)  # step 1 closes on its deadline (bob: 16 > 11 stands)
    assert_refused(store, StepClosed, live.decide, bob, 1, "hit")  # late
    assert_refused(store, BettingClosed, live.bet, cat, "main", 100)


def test_a_step_closes_early_only_once_every_seat_has_decided(store: Store) -> None:
    live = Live(store, SHOE)
    ann, bob = live.player("ann"), live.player("bob")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.bet(bob, "main", 1_000)
    live.tick(10_000)
    live.decide(ann, 1, "stand")
    assert live.tick() == []  # bob has not decided, the deadline is 5 s away
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "step" and rnd.step == 1
    live.decide(bob, 1, "stand")
    assert live.tick()  # now it closes at once: nobody is left to decide
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "settled" and rnd.automatic["1"] == []


def test_a_step_timeout_hits_eleven_or_less_and_stands_above(store: Store) -> None:
    # 5-6 (11) against a ten: the timeout hits; then 11 + 2 = 13 stands.
    live = Live(store, Shoe.of("5c Th 6d 7s 2h 3d 4c 5s 6d 7h 8c 9s"))
    ann = live.player("ann")
    live.tick()
    live.bet(ann, "main", 1_000)
    live.tick(10_000)
    live.tick(5_000)
    live.tick(5_000)
    rnd = live.app.find(TableRound, table_round_id_for("T1", 1))
    assert rnd is not None and rnd.phase == "settled"
    seat = rnd.seats[0]
    assert rnd.automatic["1"] == [[seat, "hit", "timeout"]]
    assert rnd.automatic["2"] == [[seat, "stand", "timeout"]]
    assert rnd.step_cards == ["2h"]
