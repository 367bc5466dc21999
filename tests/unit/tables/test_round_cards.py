"""A shoe must hold a whole round after its cut card (seed 002: the round that takes the
cut card finishes): :data:`ledger.tables.config.ROUND_CARDS_MAX` is the most cards a round
can take, checked here against the engine's own totals."""

from __future__ import annotations

from functools import cache

import pytest

from games.blackjack.hand import total_of
from games.cards import Card
from ledger.tables.config import ROUND_CARDS_MAX, TableConfig
from ledger.tables.errors import InvalidTableConfig

RANKS = "A23456789T"  # the ten-valued ranks all draw alike


@cache
def _longest_dealer_hand(hand: str) -> int:
    """The most cards the dealer's hand can reach from ``hand``: it draws while the
    engine's total is under 17 (``games.blackjack.round.play_dealer``)."""
    cards = [Card.parse(f"{r}s") for r in hand]
    if total_of(cards)[0] >= 17:
        return len(hand)
    return max(_longest_dealer_hand("".join(sorted(hand + r))) for r in RANKS)


def test_the_longest_dealer_hand_is_twelve_cards_so_a_round_takes_at_most_24() -> None:
    longest = max(_longest_dealer_hand("".join(sorted(a + b))) for a in RANKS for b in RANKS)
    assert longest == 12
    dealt, step_cards = 4, 2 * 5  # a split's two hands, each to six cards (Six Card Charlie)
    assert dealt + step_cards + (longest - 2) == ROUND_CARDS_MAX


def test_eight_decks_at_the_default_penetration_leave_a_whole_round_after_the_cut() -> None:
    config = TableConfig.check({})
    rules = config.rules()
    assert rules.shoe_cards - rules.cut_range(rules.shoe_cards)[1] >= ROUND_CARDS_MAX


def test_one_deck_at_the_default_penetration_is_refused_and_says_why() -> None:
    with pytest.raises(InvalidTableConfig) as refused:
        TableConfig.check({"decks": 1})
    message = str(refused.value)
    assert "(1 deck," in message and "can take 24" in message
    # cut early enough, one deck holds a whole round after its cut
    assert TableConfig.check({"decks": 1, "penetration_permille": [450, 530]}).decks == 1
