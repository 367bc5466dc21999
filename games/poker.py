"""Five-card hand classification for Jacks or Better (seed 000, seed 004).

Two entry points share one rule set: :func:`evaluate` on :class:`~games.cards.Card`
values (validated, for the engines) and :func:`evaluate_ids` / :func:`rank_code` on card
ids (unchecked fast path, for the maths). ``rank_code`` returns the hand's index in
:data:`HAND_RANKS` (0 = nothing ... 9 = royal flush), which is also ``HandRank.order``.

>>> from games.cards import parse_cards
>>> evaluate(parse_cards("Ah 2c 3d 4s 5h"))
<HandRank.STRAIGHT: 'straight'>
>>> evaluate(parse_cards("Th Tc 3d 4s 5h"))
<HandRank.NOTHING: 'nothing'>
>>> evaluate_ids([48, 44, 40, 36, 32])  # Ac Kc Qc Jc Tc
<HandRank.ROYAL_FLUSH: 'royal-flush'>
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from games.cards import Card, Rank


class HandRank(StrEnum):
    """Final hand categories, lowest first. Values are wire format: never renamed.

    ``StrEnum`` compares as text, so compare hands by :attr:`order`, not with ``<``.
    """

    NOTHING = "nothing"
    JACKS_OR_BETTER = "jacks-or-better"
    TWO_PAIR = "two-pair"
    THREE_OF_A_KIND = "three-of-a-kind"
    STRAIGHT = "straight"
    FLUSH = "flush"
    FULL_HOUSE = "full-house"
    FOUR_OF_A_KIND = "four-of-a-kind"
    STRAIGHT_FLUSH = "straight-flush"
    ROYAL_FLUSH = "royal-flush"

    @property
    def order(self) -> int:
        """Position in :data:`HAND_RANKS`: 0 for nothing up to 9 for a royal flush."""
        return _ORDER[self]


HAND_RANKS: tuple[HandRank, ...] = tuple(HandRank)
"""Every category, lowest first; ``HAND_RANKS[rank_code(...)]`` is the hand's rank."""

PAYING_RANKS: tuple[HandRank, ...] = HAND_RANKS[1:]
"""The nine categories a Jacks or Better paytable pays, lowest first."""

_ORDER: dict[HandRank, int] = {r: i for i, r in enumerate(HAND_RANKS)}

NOTHING, JACKS_OR_BETTER, TWO_PAIR, THREE_OF_A_KIND, STRAIGHT = range(5)
FLUSH, FULL_HOUSE, FOUR_OF_A_KIND, STRAIGHT_FLUSH, ROYAL_FLUSH = range(5, 10)

# Rank index = card id >> 2 (0 for a two ... 12 for an ace), so J/Q/K/A are 9..12.
_JACK_INDEX = Rank.JACK - 2
_TEN_INDEX = Rank.TEN - 2
_ACE_INDEX = Rank.ACE - 2
_FIVE_INDEX = Rank.FIVE - 2


class InvalidHand(ValueError):
    """Raised when a hand is not exactly five distinct cards."""


def rank_code(a: int, b: int, c: int, d: int, e: int) -> int:
    """Index in :data:`HAND_RANKS` of the hand with card ids ``a..e`` (any order).

    Unchecked: the ids must be five distinct values in 0..51.
    """
    r0, r1, r2, r3, r4 = sorted((a >> 2, b >> 2, c >> 2, d >> 2, e >> 2))
    e0 = r0 == r1
    e1 = r1 == r2
    e2 = r2 == r3
    e3 = r3 == r4
    pairs = e0 + e1 + e2 + e3
    if pairs == 0:
        flush = (a & 3) == (b & 3) == (c & 3) == (d & 3) == (e & 3)
        # Seed 004: the ace may stand below the two (A-2-3-4-5, five high).
        wheel = r4 == _ACE_INDEX and r3 == _FIVE_INDEX
        straight = r4 - r0 == 4 or wheel
        if straight and flush:
            return ROYAL_FLUSH if r0 == _TEN_INDEX else STRAIGHT_FLUSH
        if flush:
            return FLUSH
        if straight:
            return STRAIGHT
        return NOTHING
    if pairs == 1:
        pair = r0 if e0 else r1 if e1 else r2 if e2 else r3
        # Seed 000: a pair lower than jacks (e.g. two tens) is not a winning hand.
        return JACKS_OR_BETTER if pair >= _JACK_INDEX else NOTHING
    if pairs == 2:
        return THREE_OF_A_KIND if (e0 and e1) or (e1 and e2) or (e2 and e3) else TWO_PAIR
    return FOUR_OF_A_KIND if (e0 and e1 and e2) or (e1 and e2 and e3) else FULL_HOUSE


def evaluate_ids(ids: Sequence[int]) -> HandRank:
    """Classify five card ids (unchecked fast path: ids must be distinct, 0..51)."""
    a, b, c, d, e = ids
    return HAND_RANKS[rank_code(a, b, c, d, e)]


def evaluate(cards: Sequence[Card]) -> HandRank:
    """Classify a hand of exactly five distinct cards.

    >>> from games.cards import parse_cards
    >>> evaluate(parse_cards("Qs Qd 7c 7h Qh"))
    <HandRank.FULL_HOUSE: 'full-house'>
    >>> evaluate(parse_cards("Qs Qd 7c 7h"))
    Traceback (most recent call last):
    ...
    games.poker.InvalidHand: a hand is exactly 5 cards, got 4
    """
    if len(cards) != 5:
        raise InvalidHand(f"a hand is exactly 5 cards, got {len(cards)}")
    a, b, c, d, e = (card.id for card in cards)
    if len({a, b, c, d, e}) != 5:
        raise InvalidHand(f"a hand has 5 distinct cards, got {' '.join(map(str, cards))}")
    return HAND_RANKS[rank_code(a, b, c, d, e)]
