"""Settlement: cash-out (seed 002 "Incassare"), the ten-up readings, side bets, rounding down."""

from __future__ import annotations

from dataclasses import replace

import pytest

from games.blackjack.rules import Rules, TenUpReading
from games.blackjack.settlement import HandOutcome, settle_seat
from games.errors import ActionOutOfPhase
from tests.unit.blackjack_support import Table

ALL_SIDES = {"perfect-pairs": 100, "21+3": 100, "hot-3": 100, "bust-it": 100}


def test_cash_out_offered_after_the_deal_with_its_amount() -> None:
    t = Table("Tc 9h 6d 8s")
    # the fake table offers 40 + 6 * (16 - 4) = 112 hundredths on a 16
    assert t.option_amount("cash-out") == 112


def test_cash_out_ends_the_hand_and_pays_the_amount_shown() -> None:
    t = Table("Tc 9h 6d 8s 5c").play("cash-out")
    assert t.seat().done and t.seat().cashed_out == 112
    assert t.closed[-1].card is None  # type: ignore[attr-defined]
    result = t.finish()["a"]
    assert result.hands[0].outcome is HandOutcome.CASHED_OUT
    assert result.returned == 112 and result.staked == 100


def test_cash_out_amount_is_rounded_down() -> None:
    t = Table("Tc 9h 6d 8s", bets={"a": 101})
    assert t.option_amount("cash-out") == 113  # 101 x 1.12 = 113.12
    t.play("cash-out")
    assert t.finish()["a"].returned == 113


def test_cash_out_not_offered_before_the_peek_with_an_ace_up() -> None:
    t = Table("Tc Ah 6d 5s")
    assert "cash-out" not in t.options()
    t.close()  # the dealer peeks: no blackjack
    assert "cash-out" in t.options()


def test_cash_out_offered_with_a_ten_up_where_there_is_no_peek() -> None:
    t = Table("9c Kh 6d As")
    assert "cash-out" in t.options()
    t.play("cash-out")
    result = t.finish()["a"]
    assert t.shared.dealer_blackjack and result.returned == 106  # 15: the cash-out stands


def test_cash_out_offered_again_at_a_later_decision_point() -> None:
    t = Table("5c 9h 4d 8s 3c").play("hit")  # 12
    assert t.option_amount("cash-out") == 88


def test_no_cash_out_after_a_double_a_split_a_bust_or_on_twenty_one() -> None:
    assert Table("5c 9h 6d 8s 2c").play("double").options() == []
    assert "cash-out" not in Table("8c 9h 8d 7s 3h").play("split").options()
    bust = Table("Tc 9h 5d 8s Kc").play("hit")
    assert bust.seat().done and bust.options() == []
    assert Table("Ac 9h 5d 8s 5c").play("hit").options() == []
    assert Table("Ac 9h Kd 8s").options() == []  # a blackjack


def test_no_cash_out_where_the_table_makes_no_offer() -> None:
    t = Table("Tc 9h 6d 8s")
    t.shared = replace(t.shared, cashout=_NoOffer())
    assert "cash-out" not in t.options()


class _NoOffer:
    def offer(self, total: int, soft: bool, up: int) -> int | None:
        return None


def test_ten_up_dealer_blackjack_takes_the_original_bet_only_under_original_only() -> None:
    t = Table("5c Kh 6d As 2c", rules=Rules(ten_up=TenUpReading.ORIGINAL_ONLY)).play("double")
    result = t.finish()["a"]
    assert result.staked == 200 and result.returned == 100  # the double comes back


def test_ten_up_dealer_blackjack_takes_every_bet_by_default() -> None:
    t = Table("5c Kh 6d As 2c").play("double")
    assert t.shared.rules.ten_up is TenUpReading.ALL_BETS
    assert t.finish()["a"].returned == 0


def test_ten_up_dealer_blackjack_takes_the_main_bet_once_from_split_hands() -> None:
    t = Table("8c Kh 8d As 2c 3h", rules=Rules(ten_up=TenUpReading.ORIGINAL_ONLY))
    t.play("split", "stand", "stand")
    assert t.cards(hand=0) == "8c 2c" and t.cards(hand=1) == "8d 3h"
    result = t.finish()["a"]
    assert [h.payout for h in result.hands] == [0, 100]
    all_bets = Table("8c Kh 8d As 2c 3h", rules=Rules(ten_up=TenUpReading.ALL_BETS))
    all_bets.play("split", "stand", "stand")
    assert all_bets.finish()["a"].returned == 0


def test_ten_up_dealer_blackjack_after_a_bust_first_hand_takes_the_main_from_the_second() -> None:
    t = Table("8c Kh 8d As 5c Tc Th").play("split", "hit")
    assert t.seat().hands[0].bust
    t.close()  # the second hand takes its second card, then stands on 18 (timeout)
    result = t.finish()["a"]
    assert [h.outcome for h in result.hands] == [HandOutcome.BUST, HandOutcome.DEALER_BLACKJACK]
    assert result.returned == 0


def test_a_double_win_pays_even_money_on_the_doubled_stake() -> None:
    t = Table("5c 9h 6d 7s Tc Th").play("double")
    assert t.finish()["a"].returned == 400


def test_blackjack_three_to_two_on_an_odd_bet_is_rounded_down() -> None:
    result = Table("Ah 9c Kd 8s", bets={"a": 101}).finish()["a"]
    assert result.returned == 101 + 151  # 151.5 rounded down


def test_insurance_stake_on_an_odd_bet_is_rounded_down() -> None:
    t = Table("Tc Ah 9d Ks", bets={"a": 101})
    assert t.option_amount("insure") == 50
    t.decide("insure").close()
    result = t.finish()["a"]
    assert result.staked == 151 and result.insurance == 150


def test_every_side_bet_wins_or_loses_on_its_own() -> None:
    # 7h 7h and a 7 up: perfect pair, suited trips? no (7c up); trips; 777 on Hot 3
    t = Table("7h 7c 7h 9s Th", sides={"a": ALL_SIDES})
    result = t.finish()["a"]
    assert t.dealer() == "7c 9s Th"  # the dealer busts with 3 cards
    by_bet = {s.bet.value: (s.outcome, s.payout) for s in result.sides}
    assert by_bet == {
        "perfect-pairs": ("perfect", 2600),
        "21+3": ("trips", 3100),
        "hot-3": ("777", 10100),
        "bust-it": ("3", 200),
    }
    assert result.hands[0].outcome is HandOutcome.WIN  # 14 stands on a timeout, dealer busts
    assert result.staked == 500 and result.returned == 200 + 2600 + 3100 + 10100 + 200


def test_side_bets_lose_on_no_outcome() -> None:
    t = Table("2h 5c Kd 8s 4d", sides={"a": ALL_SIDES})
    result = t.finish()["a"]
    assert [s.payout for s in result.sides] == [0, 0, 0, 0]


def test_bust_it_pushes_when_the_player_has_blackjack() -> None:
    t = Table("Ah 6c Kd Ts 8h", sides={"a": {"bust-it": 100}})
    result = t.finish()["a"]
    assert t.dealer() == "6c Ts 8h"  # the dealer busts, but the bet is returned
    assert result.sides[0].outcome == "push" and result.sides[0].payout == 100


def test_bust_it_loses_on_a_dealer_blackjack_found_at_the_peek() -> None:
    t = Table("9h Ac 8d Ks", sides={"a": {"bust-it": 100}}).close()
    assert t.finish()["a"].sides[0].payout == 0


def test_bust_it_pays_by_the_number_of_dealer_cards() -> None:
    t = Table("Th 2c 9d 2s 2h 3d 4c Kh", sides={"a": {"bust-it": 100}})
    result = t.finish()["a"]
    assert t.dealer() == "2c 2s 2h 3d 4c Kh"
    assert result.sides[0].outcome == "6" and result.sides[0].payout == 5100


def test_settling_an_open_round_is_refused() -> None:
    t = Table("Tc 9h 6d 8s")
    with pytest.raises(ActionOutOfPhase):
        settle_seat(t.shared, t.seat())
