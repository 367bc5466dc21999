"""Paytables: seed 000's 9/6 table, payouts by coin count, and validation."""

from __future__ import annotations

import pytest

from games.poker import HAND_RANKS, PAYING_RANKS, HandRank
from games.video_poker.paytable import (
    JACKS_OR_BETTER_9_6,
    PAYTABLES,
    InvalidPaytable,
    Paytable,
)

SEED_000_TABLE = {
    HandRank.ROYAL_FLUSH: (250, 500, 750, 1000, 4000),
    HandRank.STRAIGHT_FLUSH: (50, 100, 150, 200, 250),
    HandRank.FOUR_OF_A_KIND: (25, 50, 75, 100, 125),
    HandRank.FULL_HOUSE: (9, 18, 27, 36, 45),
    HandRank.FLUSH: (6, 12, 18, 24, 30),
    HandRank.STRAIGHT: (4, 8, 12, 16, 20),
    HandRank.THREE_OF_A_KIND: (3, 6, 9, 12, 15),
    HandRank.TWO_PAIR: (2, 4, 6, 8, 10),
    HandRank.JACKS_OR_BETTER: (1, 2, 3, 4, 5),
}


def test_nine_six_is_seed_000s_table() -> None:
    assert JACKS_OR_BETTER_9_6.id == "jb-9-6-v1"
    for rank, amounts in SEED_000_TABLE.items():
        assert tuple(JACKS_OR_BETTER_9_6.payout(rank, c) for c in range(1, 6)) == amounts


def test_royal_with_five_coins_pays_4000_not_five_times_250() -> None:
    assert JACKS_OR_BETTER_9_6.payout(HandRank.ROYAL_FLUSH, 5) == 4000
    assert JACKS_OR_BETTER_9_6.payout(HandRank.ROYAL_FLUSH, 4) == 1000


def test_a_losing_hand_pays_nothing() -> None:
    assert all(JACKS_OR_BETTER_9_6.payout(HandRank.NOTHING, c) == 0 for c in range(1, 6))


def test_column_lists_every_hand_lowest_first() -> None:
    column = JACKS_OR_BETTER_9_6.column(3)
    assert list(column) == list(HAND_RANKS)
    assert column[HandRank.FULL_HOUSE] == 27
    assert JACKS_OR_BETTER_9_6.max_payout(5) == 4000


def test_registry_names_every_paytable_by_id() -> None:
    assert PAYTABLES == {"jb-9-6-v1": JACKS_OR_BETTER_9_6}


@pytest.mark.parametrize("coins", [0, 6, -1, True])
def test_coins_outside_one_to_five_are_refused(coins: int) -> None:
    with pytest.raises(ValueError, match="coins"):
        JACKS_OR_BETTER_9_6.payout(HandRank.FLUSH, coins)


def test_a_missing_paying_hand_is_refused() -> None:
    pays = dict(SEED_000_TABLE)
    del pays[HandRank.TWO_PAIR]
    with pytest.raises(InvalidPaytable, match="two-pair"):
        Paytable(id="broken", pays=pays)


@pytest.mark.parametrize(
    "bad", [(-1, 2, 3, 4, 5), (1, 2, 3, 4), (1.0, 2, 3, 4, 5), (True, 2, 3, 4, 5)]
)
def test_malformed_amounts_are_refused(bad: tuple[int, ...]) -> None:
    pays = {**SEED_000_TABLE, HandRank.JACKS_OR_BETTER: bad}
    with pytest.raises(InvalidPaytable):
        Paytable(id="broken", pays=pays)  # type: ignore[arg-type]


def test_a_losing_hand_cannot_be_given_a_payout() -> None:
    with pytest.raises(InvalidPaytable, match="losing"):
        Paytable(id="broken", pays={**SEED_000_TABLE, HandRank.NOTHING: (1, 1, 1, 1, 1)})


def test_paytable_is_frozen_and_hashable() -> None:
    same = Paytable(id="jb-9-6-v1", pays=SEED_000_TABLE)
    assert same == JACKS_OR_BETTER_9_6
    assert hash(same) == hash(JACKS_OR_BETTER_9_6)
    with pytest.raises(TypeError):
        JACKS_OR_BETTER_9_6.pays[HandRank.FLUSH] = (0, 0, 0, 0, 0)  # type: ignore[index]
    assert set(PAYING_RANKS) <= set(JACKS_OR_BETTER_9_6.pays)
