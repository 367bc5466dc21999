"""Exact full-cycle return of Jacks or Better 9/6 (seed 000's paytable).

Published reference (Wizard of Odds, "Jacks or Better", 9-6 table, optimal play, 800
per coin for a royal): return 0.995439; final-hand probabilities royal 0.000025,
straight flush 0.000109, four of a kind 0.002363, full house 0.011512, flush 0.011015,
straight 0.011229, three of a kind 0.074449, two pair 0.129279, jacks or better
0.214585, nothing 0.545435. Seed 000 publishes "99,54 (da 1 a 4 fiche); 98,37 (5 fiche)":
the computation shows the two figures belong the other way round.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from games.cards import Card
from games.poker import HAND_RANKS, HandRank
from games.video_poker.math import (
    DEAL_CLASSES,
    DEALS,
    CycleAnalysis,
    Play,
    analyse,
    analyse_all_columns,
    deal_classes,
    to_decimal,
)
from games.video_poker.paytable import JACKS_OR_BETTER_9_6 as JB
from games.video_poker.strategy import (
    SCALE,
    choose_batch,
    colex_columns,
    final_counts_batch,
    scale_counts,
    winning_cards_hold,
)

pytestmark = pytest.mark.slow

PUBLISHED_5_COINS = {
    HandRank.ROYAL_FLUSH: "0.000025",
    HandRank.STRAIGHT_FLUSH: "0.000109",
    HandRank.FOUR_OF_A_KIND: "0.002363",
    HandRank.FULL_HOUSE: "0.011512",
    HandRank.FLUSH: "0.011015",
    HandRank.STRAIGHT: "0.011229",
    HandRank.THREE_OF_A_KIND: "0.074449",
    HandRank.TWO_PAIR: "0.129279",
    HandRank.JACKS_OR_BETTER: "0.214585",
    HandRank.NOTHING: "0.545435",
}


@pytest.fixture(scope="module")
def optimal() -> dict[int, CycleAnalysis]:
    return analyse_all_columns(JB)


@pytest.fixture(scope="module")
def winning_cards() -> dict[int, CycleAnalysis]:
    return analyse_all_columns(JB, Play.WINNING_CARDS)


def test_five_coins_reproduce_the_published_return_and_hand_probabilities(
    optimal: dict[int, CycleAnalysis],
) -> None:
    five = optimal[5]
    assert to_decimal(five.rtp, 6) == Decimal("0.995439")
    assert {r: str(to_decimal(p, 6)) for r, p in five.probabilities.items()} == PUBLISHED_5_COINS
    assert to_decimal(five.variance, 2) == Decimal("19.51")


def test_exact_figures_are_pinned(optimal: dict[int, CycleAnalysis]) -> None:
    assert optimal[5].rtp == Fraction(1653526326983, 1661102543100)  # 0.995439043695...
    assert optimal[1].rtp == Fraction(35523565111, 36110924850)  # 0.983734569484...
    assert to_decimal(optimal[5].hit_frequency, 6) == Decimal("0.454565")
    assert to_decimal(optimal[1].hit_frequency, 6) == Decimal("0.454258")


def test_seed_000_published_figures_belong_the_other_way_round(
    optimal: dict[int, CycleAnalysis],
) -> None:
    # Seed 000: "99,54 (da 1 a 4 fiche); 98,37 (5 fiche)". Only five coins pay 800 per
    # coin for the royal, so it is five coins that return 99.54 %.
    percent = {c: to_decimal(a.rtp * 100, 2) for c, a in optimal.items()}
    assert percent == {**dict.fromkeys((1, 2, 3, 4), Decimal("98.37")), 5: Decimal("99.54")}


def test_one_to_four_coins_pay_in_proportion_so_play_and_return_are_the_same(
    optimal: dict[int, CycleAnalysis],
) -> None:
    for coins in (2, 3, 4):
        assert optimal[coins].probabilities == optimal[1].probabilities
        assert optimal[coins].rtp == optimal[1].rtp
        assert optimal[coins].variance == optimal[1].variance


def test_every_paytable_entry_is_reachable(
    optimal: dict[int, CycleAnalysis], winning_cards: dict[int, CycleAnalysis]
) -> None:
    for analysis in [*optimal.values(), *winning_cards.values()]:
        assert all(p > 0 for p in analysis.probabilities.values()), analysis.coins
        assert sum(analysis.probabilities.values()) == 1


def test_max_win_per_bet(optimal: dict[int, CycleAnalysis]) -> None:
    assert {c: a.max_win for c, a in optimal.items()} == {1: 250, 2: 250, 3: 250, 4: 250, 5: 800}


def test_single_column_analysis_equals_the_all_columns_pass(
    optimal: dict[int, CycleAnalysis],
) -> None:
    assert analyse(JB, 5) == optimal[5]


def test_accepting_seed_000_proposal_returns_far_less_than_optimal_play(
    optimal: dict[int, CycleAnalysis], winning_cards: dict[int, CycleAnalysis]
) -> None:
    assert winning_cards[5].rtp == Fraction(412929359, 565000865)  # 0.730847304101...
    assert winning_cards[1].rtp == Fraction(1187672523, 1628531905)  # 0.729290300886...
    for coins in range(1, 6):
        assert winning_cards[coins].rtp < optimal[coins].rtp


def test_winning_cards_play_matches_the_per_hand_proposal(
    winning_cards: dict[int, CycleAnalysis],
) -> None:
    columns, weights = deal_classes()
    scaled = scale_counts(final_counts_batch(columns))
    deals = zip(*(c.tolist() for c in columns), strict=True)
    holds = [winning_cards_hold([Card.from_id(c) for c in ids]) for ids in deals]
    masks = np.array([sum(1 << p for p in hold) for hold in holds])
    totals = weights @ scaled[masks, np.arange(len(masks))].astype(np.int64)
    expected = [Fraction(int(n), DEALS * SCALE) for n in totals]
    assert list(winning_cards[5].probabilities.values()) == expected


def test_deal_classes_stand_for_every_deal_once() -> None:
    columns, weights = deal_classes()
    assert len(weights) == DEAL_CLASSES == 134_459
    assert int(weights.sum()) == DEALS == 2_598_960
    assert set(np.unique(weights).tolist()) <= {4, 6, 12, 24}
    stacked = np.stack(columns, axis=1)
    assert np.all(np.diff(stacked, axis=1) > 0), "cards ascending and distinct in each deal"


def test_suit_classes_give_the_same_figures_as_all_2598960_deals(
    optimal: dict[int, CycleAnalysis],
) -> None:
    hands = colex_columns(52, 5)
    pays = np.array([JB.payout(r, 5) for r in HAND_RANKS], dtype=np.float64)
    totals = np.zeros(len(HAND_RANKS), dtype=np.int64)
    chunk = 16_384
    for start in range(0, DEALS, chunk):
        part = [c[start : start + chunk] for c in hands]
        scaled = scale_counts(final_counts_batch(part))
        best = choose_batch(scaled, scaled @ pays)
        totals += scaled[best, np.arange(len(best))].astype(np.int64).sum(axis=0)
    expected = [Fraction(int(n), DEALS * SCALE) for n in totals]
    assert list(optimal[5].probabilities.values()) == expected
