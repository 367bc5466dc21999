"""Seed 002's hand rules (issue 9, item 2), one test per rule. Shoes read P1 UP P2 HOLE, then
the step cards, then the dealer's draws."""

from __future__ import annotations

import pytest

from games.blackjack.hand import Hand, total_of
from games.blackjack.rules import Rules
from games.blackjack.settlement import HandOutcome
from games.blackjack.shared import Phase
from games.cards import parse_cards
from tests.unit.blackjack_support import Table


def test_number_cards_count_their_number_and_faces_count_ten() -> None:
    assert total_of(parse_cards("2c 9d")) == (11, False)
    assert total_of(parse_cards("Jc Qd")) == (20, False)
    assert total_of(parse_cards("Kc 5d")) == (15, False)


def test_ace_counts_eleven_unless_that_busts_and_then_one() -> None:
    assert total_of(parse_cards("Ah 6c")) == (17, True)  # soft: the ace counts 11
    assert total_of(parse_cards("Ah 6c Kd")) == (17, False)  # hard: it counts 1
    assert total_of(parse_cards("Ah Ad")) == (12, True)  # only one ace can count 11
    assert total_of(parse_cards("Ah Ad 9c")) == (21, True)


def test_blackjack_is_twenty_one_with_the_first_two_cards_only() -> None:
    assert Hand(parse_cards("As Kd"), 100).blackjack
    assert not Hand(parse_cards("7s 4d Kc"), 100).blackjack


def test_blackjack_pays_three_to_two() -> None:
    t = Table("Ah 9c Kd 8s", bets={"a": 100})
    assert t.seat().done and t.options() == []
    result = t.finish()["a"]
    assert result.hands[0].outcome is HandOutcome.BLACKJACK
    assert result.returned == 250


def test_blackjack_beats_a_dealer_twenty_one_of_three_cards() -> None:
    t = Table("Ah 9c Kd 2s Th")
    result = t.finish()["a"]
    assert t.dealer() == "9c 2s Th"
    assert result.returned == 250


def test_split_twenty_one_is_not_a_blackjack() -> None:
    t = Table("Ah 9c As 8s Kd Qh").play("split")
    result = t.finish()["a"]
    assert [h.outcome for h in result.hands] == [HandOutcome.WIN, HandOutcome.WIN]
    assert [h.payout for h in result.hands] == [200, 200]  # 1:1, not 3:2


def test_dealer_stands_on_soft_seventeen() -> None:
    t = Table("Tc 6h 8d As 9c")
    result = t.finish()["a"]
    assert t.dealer() == "6h As"
    assert result.returned == 200  # 18 beats the dealer's soft 17


def test_dealer_draws_on_sixteen() -> None:
    t = Table("Tc 6h 8d Ts 5c")
    result = t.finish()["a"]
    assert t.dealer() == "6h Ts 5c"
    assert result.returned == 0


def test_dealer_draws_after_the_last_step_from_the_next_card() -> None:
    t = Table("5c 9h 6d 7s 2c 3h Th").play("hit", "stand")
    t.finish()
    assert t.cards() == "5c 6d 2c"
    assert t.dealer() == "9h 7s 3h"  # step 1 took 2c; step 2 drew nothing; dealer from 3h


def test_double_on_two_initial_cards_takes_one_card_then_the_hand_is_done() -> None:
    t = Table("5c 9h 6d 7s 2c Th")
    assert "double" in t.options()
    t.play("double")
    assert t.cards() == "5c 6d 2c" and t.seat().done
    assert t.seat().staked == 200
    result = t.finish()["a"]
    assert t.dealer() == "9h 7s Th"
    assert result.returned == 400


def test_double_on_any_two_cards_includes_hard_seventeen_to_twenty() -> None:
    # seed 002: "Se il valore della tua mano iniziale è diverso da 21, puoi raddoppiare"
    assert "double" in Table("Tc 9h 7d 8s").options()
    assert "double" in Table("Tc 9h Qd 8s").options()
    assert "double" not in Table("Tc 9h 7d 8s", rules=Rules(double_on_hard_17=False)).options()


def test_split_two_initial_cards_of_equal_value_ten_and_jack_split() -> None:
    assert "split" in Table("Tc 9h Jd 8s").options()
    assert "split" in Table("8c 9h 8d 7s").options()
    assert "split" not in Table("9c 9h Td 8s").options()


def test_split_makes_two_hands_each_staked_the_main_bet() -> None:
    t = Table("8c 9h 8d 7s 3h").play("split")
    seat = t.seat()
    assert [h.stake for h in seat.hands] == [100, 100]
    assert seat.staked == 200
    assert t.cards(hand=0) == "8c 3h" and t.cards(hand=1) == "8d"


def test_only_one_split_per_hand() -> None:
    t = Table("8c 9h 8d 7s 8h").play("split")
    assert t.cards(hand=0) == "8c 8h"
    assert "split" not in t.options()


def test_no_double_after_split() -> None:
    t = Table("8c 9h 8d 7s 3h").play("split")
    assert t.cards(hand=0) == "8c 3h"  # 11: a double would be tempting
    assert t.options() == ["hit", "stand"]


def test_split_aces_take_one_card_each() -> None:
    t = Table("Ac 9h Ad 8s 5c 6d 9c").play("split")
    assert t.cards(hand=0) == "Ac 5c" and t.options() == []  # no decision on a split ace
    t.close()  # step 2: the second ace takes its card without a decision
    assert t.cards(hand=1) == "Ad 6d" and t.seat().done
    result = t.finish()["a"]
    assert [h.outcome for h in result.hands] == [HandOutcome.LOSE, HandOutcome.PUSH]


def test_six_card_charlie_wins_at_once() -> None:
    t = Table("2c 9h 2d 7s 2h 2s 3c 4d 5h").play("hit", "hit", "hit", "hit")
    assert t.cards() == "2c 2d 2h 2s 3c 4d" and t.seat().done
    result = t.finish()["a"]
    assert t.dealer() == "9h 7s 5h"  # 21 would beat a plain 15
    assert result.hands[0].outcome is HandOutcome.CHARLIE
    assert result.returned == 200


def test_six_card_charlie_beats_dealer_blackjack() -> None:
    t = Table("2c Th 2d Ah 2h 2s 3c 4d").play("hit", "hit", "hit", "hit")
    result = t.finish()["a"]
    assert t.shared.dealer_blackjack
    assert result.hands[0].outcome is HandOutcome.CHARLIE
    assert result.returned == 200


def test_six_card_charlie_counts_each_split_hand_alone() -> None:
    t = Table("2c 9h 2d 7s 2h 2s 3c 4d Ac Tc 5h")
    t.play("split", "hit", "hit", "hit", "hit")
    assert t.cards(hand=0) == "2c 2h 2s 3c 4d Ac"
    t.close()  # the second hand takes its second card
    assert t.cards(hand=1) == "2d Tc"
    result = t.finish()["a"]
    assert [h.outcome for h in result.hands] == [HandOutcome.CHARLIE, HandOutcome.LOSE]
    assert result.returned == 200


def test_no_hit_on_hard_seventeen() -> None:
    assert "hit" not in Table("Tc 9h 7d 8s").options()
    t = Table("5c 9h 2d 8s Tc").play("hit")  # 7 + 10: a hard 17 of three cards
    assert t.options() == ["stand", "cash-out"]


def test_hit_allowed_on_soft_seventeen() -> None:
    assert "hit" in Table("Ac 9h 6d 8s").options()


def test_no_decision_on_soft_twenty_one() -> None:
    t = Table("Ac 9h 5d 8s 5c").play("hit")
    assert total_of(t.seat().hands[0].cards) == (21, True)
    assert t.options() == [] and t.seat().done


def test_ties_push() -> None:
    t = Table("Tc 9h 7d 8s")
    result = t.finish()["a"]
    assert result.hands[0].outcome is HandOutcome.PUSH and result.returned == 100


def test_insurance_offered_when_the_dealer_shows_an_ace_even_to_a_blackjack() -> None:
    t = Table("Ac Ah Kd 7s")
    assert t.phase is Phase.INSURANCE
    assert t.options() == ["insure", "no-insurance"]
    t.decide("insure").close()
    result = t.finish()["a"]
    assert result.hands[0].outcome is HandOutcome.BLACKJACK
    assert result.insurance == 0 and result.returned == 250 and result.staked == 150


def test_insurance_costs_half_the_main_bet_and_pays_two_to_one() -> None:
    t = Table("Tc Ah 9d Ks", bets={"a": 100})
    assert t.option_amount("insure") == 50
    t.decide("insure").close()
    result = t.finish()["a"]
    assert result.insurance == 150 and result.returned == 150 and result.staked == 150


def test_dealer_peeks_with_an_ace_up_and_a_blackjack_ends_the_round() -> None:
    t = Table("Tc Ah 9d Ks", bets={"a": 100, "b": 100})
    t.close()
    assert t.phase is Phase.SETTLED and t.dealer() == "Ah Ks"
    result = t.finish()["a"]
    assert result.hands[0].outcome is HandOutcome.DEALER_BLACKJACK and result.returned == 0


def test_player_blackjack_pushes_against_a_dealer_blackjack() -> None:
    t = Table("Ac Ah Kd Ks").close()
    result = t.finish()["a"]
    assert result.hands[0].outcome is HandOutcome.PUSH and result.returned == 100


def test_dealer_without_blackjack_after_the_peek_plays_on() -> None:
    t = Table("Tc Ah 6d 5s 2c").close()
    assert t.phase is Phase.STEP and t.shared.hole is None  # the hole stays face down
    assert "hit" in t.options()


def test_no_insurance_and_no_peek_with_a_ten_up() -> None:
    t = Table("9c Kh 8d As")
    assert t.phase is Phase.STEP and t.shared.hole is None
    assert "insure" not in t.options()
    result = t.finish()["a"]
    assert t.shared.dealer_blackjack  # found only at the end
    assert result.hands[0].outcome is HandOutcome.DEALER_BLACKJACK


@pytest.mark.parametrize(
    ("cards", "total"), [("Ah Kd", 21), ("5c 5d Ah", 21), ("Kc Qd 5h", 25), ("Ac Ad Ah Ac", 14)]
)
def test_totals_of_hands(cards: str, total: int) -> None:
    assert total_of(parse_cards(cards))[0] == total


def test_a_split_hand_on_a_hard_seventeen_or_more_stands_without_a_decision() -> None:
    # no hit (hard 17+), no double and no cash-out after a split: nothing is left to decide
    t = Table("8c 9h 8d 7s Tc 3h 9c").play("split")
    assert t.cards(hand=0) == "8c Tc" and t.options() == []
    t.close()  # the second hand takes the step-2 card, as if hand 1 had stood in step 2
    assert t.cards(hand=1) == "8d 3h"
