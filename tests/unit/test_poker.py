"""Jacks or Better hand ranks (seed 000 rules, seed 004 ace-low straight)."""

from __future__ import annotations

import pytest

from games.cards import parse_cards
from games.poker import (
    HAND_RANKS,
    PAYING_RANKS,
    HandRank,
    InvalidHand,
    evaluate,
    evaluate_ids,
    rank_code,
)


def rank_of(text: str) -> HandRank:
    return evaluate(parse_cards(text))


def test_ace_low_straight_is_a_straight() -> None:
    assert rank_of("Ah 2c 3d 4s 5h") is HandRank.STRAIGHT


def test_ace_high_straight_is_a_straight() -> None:
    assert rank_of("Th Jc Qd Ks Ah") is HandRank.STRAIGHT


def test_straights_do_not_wrap_around_the_ace() -> None:
    assert rank_of("Qh Kc Ad 2s 3h") is HandRank.NOTHING


def test_wheel_straight_flush() -> None:
    assert rank_of("Ad 2d 3d 4d 5d") is HandRank.STRAIGHT_FLUSH


def test_king_high_straight_flush_is_not_royal() -> None:
    assert rank_of("9s Ts Js Qs Ks") is HandRank.STRAIGHT_FLUSH


def test_royal_flush_is_ace_to_ten_of_one_suit() -> None:
    assert rank_of("As Ks Qs Js Ts") is HandRank.ROYAL_FLUSH


def test_pair_of_tens_pays_nothing() -> None:
    assert rank_of("Tc Td 2h 5s 9c") is HandRank.NOTHING


@pytest.mark.parametrize("pair", ["J", "Q", "K", "A"])
def test_pair_of_jacks_queens_kings_or_aces_is_jacks_or_better(pair: str) -> None:
    assert rank_of(f"{pair}c {pair}d 2h 5s 9c") is HandRank.JACKS_OR_BETTER


def test_low_two_pair_still_pays_two_pair() -> None:
    assert rank_of("2c 2d 3h 3s 9c") is HandRank.TWO_PAIR


def test_three_of_a_kind_of_deuces() -> None:
    assert rank_of("2c 2d 2h 5s 9c") is HandRank.THREE_OF_A_KIND


def test_flush_without_a_run() -> None:
    assert rank_of("2h 7h 9h Jh Kh") is HandRank.FLUSH


def test_full_house_either_way_round() -> None:
    assert rank_of("Qs Qd 7c 7h Qh") is HandRank.FULL_HOUSE
    assert rank_of("Qs Qd 7c 7h 7d") is HandRank.FULL_HOUSE


def test_four_of_a_kind_with_any_kicker() -> None:
    assert rank_of("5c 5d 5h 5s Ac") is HandRank.FOUR_OF_A_KIND
    assert rank_of("Ac 5d 5h 5s 5c") is HandRank.FOUR_OF_A_KIND


def test_card_order_does_not_matter() -> None:
    assert rank_of("5h 4s 3d Ah 2c") is HandRank.STRAIGHT


def test_fewer_or_more_than_five_cards_is_refused() -> None:
    with pytest.raises(InvalidHand, match="exactly 5"):
        evaluate(parse_cards("Ah Kh Qh Jh"))
    with pytest.raises(InvalidHand, match="exactly 5"):
        evaluate(parse_cards("Ah Kh Qh Jh Th 9h"))


def test_repeated_card_is_refused() -> None:
    with pytest.raises(InvalidHand, match="distinct"):
        evaluate(parse_cards("Ah Ah Qh Jh Th"))


def test_invalid_hand_is_a_value_error() -> None:
    assert issubclass(InvalidHand, ValueError)


def test_id_fast_path_agrees_with_cards() -> None:
    hand = parse_cards("Qs Qd 7c 7h Qh")
    ids = [card.id for card in hand]
    assert evaluate_ids(ids) is evaluate(hand)
    assert HAND_RANKS[rank_code(*ids)] is evaluate(hand)


def test_wire_values_are_stable_and_lowest_first() -> None:
    assert [r.value for r in HAND_RANKS] == [
        "nothing",
        "jacks-or-better",
        "two-pair",
        "three-of-a-kind",
        "straight",
        "flush",
        "full-house",
        "four-of-a-kind",
        "straight-flush",
        "royal-flush",
    ]
    assert [r.order for r in HAND_RANKS] == list(range(10))
    assert HAND_RANKS[1:] == PAYING_RANKS
