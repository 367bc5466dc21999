"""Seed 002's automatic actions (issue 9, item 5) and refused input that changes nothing."""

from __future__ import annotations

import pytest

from games.blackjack.decisions import Action, AutoReason, Decision, DecisionKind
from games.blackjack.errors import (
    AlreadyDecided,
    InvalidSideBet,
    NotAnOption,
    SeatNotInRound,
    ShoeExhausted,
    ShoeMismatch,
)
from games.blackjack.round import (
    StepClosed,
    can_bet,
    close_step,
    deal,
    open_round,
    place_bets,
)
from games.blackjack.rules import DEFAULT_RULES
from games.blackjack.seat import can_decide, decide
from games.blackjack.shoe import Shoe
from games.errors import ActionOutOfPhase, BetAboveMaximum, BetBelowMinimum, InvalidAmount
from tests.unit.blackjack_support import FAKE_CASHOUT, Table

K = DecisionKind


def _last_step(t: Table) -> StepClosed:
    closed = t.closed[-1]
    assert isinstance(closed, StepClosed)
    return closed


def test_timeout_on_eleven_or_less_hits() -> None:
    t = Table("5c 9h 6d 8s 2c").close()
    assert t.cards() == "5c 6d 2c"
    assert _last_step(t).actions == (("a", Action(1, K.HIT, AutoReason.TIMEOUT)),)
    assert t.seat().actions[-1].automatic


def test_timeout_over_eleven_stands() -> None:
    t = Table("5c 9h 7d 8s 2c").close()
    assert t.cards() == "5c 7d" and t.seat().done
    assert _last_step(t).actions == (("a", Action(1, K.STAND, AutoReason.TIMEOUT)),)


def test_timeout_on_a_soft_total_over_eleven_stands() -> None:
    t = Table("Ac 9h 2d 8s 2c").close()  # soft 13
    assert t.seat().done and _last_step(t).card is None


def test_decisions_taken_are_not_marked_automatic() -> None:
    t = Table("5c 9h 7d 8s 2c").play("hit")
    assert _last_step(t).actions == (("a", Action(1, K.HIT)),)
    assert not t.seat().actions[-1].automatic


def test_unfunded_double_becomes_a_hit() -> None:
    t = Table("5c 9h 6d 8s 2c Th").decide("double", funded=False)
    assert t.seat().staked == 100  # nothing more was staked
    t.close()
    assert t.seat().actions[-1] == Action(1, K.HIT, AutoReason.INSUFFICIENT_BALANCE, K.DOUBLE)
    assert t.cards() == "5c 6d 2c" and not t.seat().hands[0].doubled
    assert "hit" in t.options()  # a hit, not a double: the hand plays on


def test_unfunded_double_on_a_hard_seventeen_stands_since_no_hit_is_allowed() -> None:
    t = Table("Tc 9h 7d 8s").decide("double", funded=False).close()
    assert t.seat().actions[-1].kind is K.STAND and t.seat().done


def test_unfunded_split_on_eleven_or_less_hits() -> None:
    t = Table("4c 9h 4d 8s 5c").decide("split", funded=False).close()
    assert t.seat().actions[-1] == Action(1, K.HIT, AutoReason.INSUFFICIENT_BALANCE, K.SPLIT)
    assert len(t.seat().hands) == 1 and t.cards() == "4c 4d 5c"


def test_unfunded_split_over_eleven_stands() -> None:
    t = Table("8c 9h 8d 8s 5c").decide("split", funded=False).close()
    assert t.seat().actions[-1] == Action(1, K.STAND, AutoReason.INSUFFICIENT_BALANCE, K.SPLIT)
    assert t.seat().done and t.seat().staked == 100


def test_unanswered_insurance_is_no_insurance() -> None:
    t = Table("Tc Ah 9d 7s").close()
    seat = t.seat()
    assert seat.insurance == 0
    assert seat.actions == (Action(0, K.NO_INSURANCE, AutoReason.TIMEOUT),)


def test_unfunded_insurance_is_no_insurance() -> None:
    t = Table("Tc Ah 9d Ks").decide("insure", funded=False).close()
    assert t.seat().insurance == 0 and t.finish()["a"].returned == 0


def test_a_refused_decision_changes_nothing() -> None:
    t = Table("Tc 9h 7d 8s")
    before = t.seat()
    with pytest.raises(NotAnOption) as err:
        decide(t.shared, before, "hit")
    assert err.value.code == "not-an-option" and "stand" in err.value.options
    assert t.seat() == before and not can_decide(t.shared, before, "hit")


def test_second_decision_in_one_step_is_refused() -> None:
    t = Table("5c 9h 6d 8s 2c").decide("hit")
    with pytest.raises(AlreadyDecided):
        decide(t.shared, t.seat(), "stand")


def test_insurance_outside_its_window_is_refused() -> None:
    t = Table("5c 9h 6d 8s 2c")
    with pytest.raises(ActionOutOfPhase):
        decide(t.shared, t.seat(), "insure")
    t2 = Table("Tc Ah 6d 5s 2c")
    with pytest.raises(ActionOutOfPhase):
        decide(t2.shared, t2.seat(), "hit")


def test_unknown_decision_is_refused() -> None:
    t = Table("5c 9h 6d 8s 2c")
    with pytest.raises(ValueError, match="unknown decision"):
        decide(t.shared, t.seat(), "surrender")
    with pytest.raises(ValueError, match="unknown decision"):
        Decision.from_wire(["fold"])


def test_seat_of_another_round_is_refused() -> None:
    t = Table("5c 9h 6d 8s 2c")
    other = Table("4c 5c 5c 9h 6d 8s 2c", start=1)
    with pytest.raises(SeatNotInRound):
        decide(other.shared, t.seat(), "hit")


def test_bets_outside_the_limits_are_refused() -> None:
    shared = open_round(DEFAULT_RULES, 0, FAKE_CASHOUT)
    with pytest.raises(BetBelowMinimum):
        place_bets(shared, "a", 99)
    with pytest.raises(BetAboveMaximum):
        place_bets(shared, "a", DEFAULT_RULES.max_bet + 1)
    with pytest.raises(InvalidAmount):
        place_bets(shared, "a", True)
    with pytest.raises(BetAboveMaximum):
        place_bets(shared, "a", 100, {"21+3": DEFAULT_RULES.side_max_bet + 1})
    with pytest.raises(InvalidSideBet):
        place_bets(shared, "a", 100, {"lucky-ladies": 100})
    assert not can_bet(shared, 100, {"hot-3": 50})
    assert can_bet(shared, 100, {"hot-3": 100, "bust-it": 0})


def test_bets_after_the_deal_are_refused() -> None:
    t = Table("5c 9h 6d 8s 2c")
    with pytest.raises(ActionOutOfPhase):
        place_bets(t.shared, "late", 100)


def test_a_shoe_that_does_not_hold_the_cards_shown_is_refused() -> None:
    t = Table("5c 9h 6d 8s 2c")
    with pytest.raises(ShoeMismatch):
        close_step(t.shared, list(t.seats.values()), Shoe.of("5c 9h 7d 8s 2c"))


def test_a_short_shoe_raises_shoe_exhausted() -> None:
    shared = open_round(DEFAULT_RULES, 0, FAKE_CASHOUT)
    with pytest.raises(ShoeExhausted):
        deal(shared, [place_bets(shared, "a", 100)], Shoe.of("5c 9h 6d"))
    t = Table("5c 9h 6d 8s")
    with pytest.raises(ShoeExhausted):
        t.play("hit")
