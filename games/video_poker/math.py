"""Exact full-cycle maths of one line of Jacks or Better: every deal, every draw.

For a paytable and a coin column this enumerates all C(52,5) = 2,598,960 deals through
their 134,459 classes under renaming of suits (each weighted by how many deals it
stands for), picks the hold the player makes in each (the max-EV hold of
:mod:`games.video_poker.strategy`, or seed 000's "winning cards" proposal), and sums the
exact distribution of final hands over all draws from the 47 remaining cards. Every
figure is an exact :class:`~fractions.Fraction`; decimals are derived from them.

Returns are per coin bet: ``sum_hand P(hand) * pays(hand, coins) / coins``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Context, Decimal
from enum import StrEnum
from fractions import Fraction
from functools import cache
from itertools import combinations_with_replacement, product
from math import comb, factorial, gcd, prod
from types import MappingProxyType
from typing import Final

import numpy as np
import numpy.typing as npt

from games.poker import HAND_RANKS, HandRank
from games.video_poker import strategy
from games.video_poker.paytable import MAX_COINS, Paytable

DEALS: Final = comb(52, 5)
DEAL_CLASSES: Final = 134_459
_CHUNK: Final = 4096
_DECIMAL: Final = Context(prec=40)
_SUIT_PATTERNS: Final = ((5,), (4, 1), (3, 2), (3, 1, 1), (2, 2, 1), (2, 1, 1, 1))
"""How five cards split over the suits, largest suit first."""


class Play(StrEnum):
    """How the player holds (wire format). Same values as the engine's hold policies."""

    OPTIMAL = "optimal"
    """The max-EV hold of every deal (seed 004's recommended hold)."""
    WINNING_CARDS = "winning-cards"
    """Always accept seed 000's proposal: keep only the cards already paying."""


@dataclass(frozen=True, slots=True)
class CycleAnalysis:
    """The exact long-run figures of one line at one coin count under one way of play.

    ``rtp`` is the expected payout per coin bet; ``variance`` is the variance of the
    payout per coin bet; ``max_win`` is the top payout per coin bet.
    """

    paytable_id: str
    coins: int
    play: Play
    probabilities: Mapping[HandRank, Fraction]
    rtp: Fraction
    variance: Fraction
    hit_frequency: Fraction
    max_win: Fraction

    @property
    def rtp_decimal(self) -> Decimal:
        return to_decimal(self.rtp)

    @property
    def variance_decimal(self) -> Decimal:
        return to_decimal(self.variance)

    @property
    def hit_frequency_decimal(self) -> Decimal:
        return to_decimal(self.hit_frequency)

    def probability_decimals(self) -> dict[HandRank, Decimal]:
        return {rank: to_decimal(p) for rank, p in self.probabilities.items()}


def to_decimal(value: Fraction, places: int = 12) -> Decimal:
    """``value`` rounded half-even to ``places`` decimals (exact arithmetic before).

    >>> to_decimal(Fraction(2, 3), 6)
    Decimal('0.666667')
    """
    quotient = _DECIMAL.divide(Decimal(value.numerator), Decimal(value.denominator))
    return quotient.quantize(Decimal(1).scaleb(-places), context=_DECIMAL)


def analyse(paytable: Paytable, coins: int, play: Play = Play.OPTIMAL) -> CycleAnalysis:
    """The exact full cycle of one coin column."""
    return _analyse_columns(paytable, (coins,), play)[coins]


def analyse_all_columns(paytable: Paytable, play: Play = Play.OPTIMAL) -> dict[int, CycleAnalysis]:
    """The exact full cycle of every coin column 1..5, in one pass over the deals."""
    return _analyse_columns(paytable, tuple(range(1, MAX_COINS + 1)), play)


def deal_classes() -> tuple[list[npt.NDArray[np.int8]], npt.NDArray[np.int64]]:
    """The 134,459 deals that stand for all 2,598,960 up to renaming suits.

    Returns five columns of card ids (ascending within each deal) and each class's
    weight, the number of deals it stands for (they add up to C(52,5)). A class is a
    choice of rank sets for the suits, largest suit first; suits of equal size take
    their rank sets in non-decreasing order, so each class appears once. Its weight is
    24 (the suit renamings) over the renamings that leave it unchanged.
    """
    classes, weights = _deal_classes()
    return [c.copy() for c in classes], weights.copy()


# -- internals -------------------------------------------------------------------------


@cache
def _deal_classes() -> tuple[list[npt.NDArray[np.int8]], npt.NDArray[np.int64]]:
    rank_sets = {n: np.stack(strategy.colex_columns(13, n), axis=1) for n in range(1, 6)}
    cards: list[npt.NDArray[np.int64]] = []
    weights: list[npt.NDArray[np.int64]] = []
    for pattern in _SUIT_PATTERNS:
        groups = [(n, pattern.count(n)) for n in sorted(set(pattern), reverse=True)]
        # Per group of equally sized suits: non-decreasing tuples of rank-set indices,
        # and the renamings among them that fix the tuple (equal rank sets swap).
        choices = []
        for size, count in groups:
            picks = list(combinations_with_replacement(range(comb(13, size)), count))
            fixed = [prod(factorial(t.count(v)) for v in set(t)) for t in picks]
            choices.append((size, np.array(picks, dtype=np.int64), fixed))
        empty_suits = factorial(4 - len(pattern))
        index = np.array(list(product(*(range(len(f)) for _, _, f in choices))))
        suit = 0
        hand = []
        fixed_total = np.full(len(index), empty_suits, dtype=np.int64)
        for g, (size, tuples, fixed) in enumerate(choices):
            picked = tuples[index[:, g]]
            fixed_total *= np.array(fixed, dtype=np.int64)[index[:, g]]
            for member in range(picked.shape[1]):
                hand.append(rank_sets[size][picked[:, member]] * 4 + suit)
                suit += 1
        cards.append(np.sort(np.hstack(hand), axis=1))
        weights.append(24 // fixed_total)
    all_cards = np.vstack(cards)
    columns = [np.ascontiguousarray(all_cards[:, j], dtype=np.int8) for j in range(5)]
    return columns, np.concatenate(weights)


def _winning_cards_masks(columns: list[npt.NDArray[np.int8]]) -> npt.NDArray[np.intp]:
    """Seed 000's proposal per deal, as a bitmask over the cards in ascending order:
    nothing if the deal pays nothing, else the cards whose rank repeats, else all five
    (the rule of :func:`games.video_poker.strategy.winning_cards_hold`)."""
    ranks = [c >> 2 for c in columns]
    paying = strategy.rank_codes(columns) > 0
    mask = np.zeros(len(columns[0]), dtype=np.intp)
    for j in range(5):
        repeats = np.zeros(len(columns[0]), dtype=bool)
        for i in range(5):
            if i != j:
                repeats |= ranks[i] == ranks[j]
        mask |= repeats.astype(np.intp) << j
    mask[mask == 0] = strategy.HOLDS - 1
    mask[~paying] = 0
    return mask


def _analyse_columns(
    paytable: Paytable, coin_columns: tuple[int, ...], play: Play
) -> dict[int, CycleAnalysis]:
    # Columns whose pays are proportional (9/6: 1 to 4 coins) rank the holds alike, so
    # the player's choices and the final-hand distribution are computed once for them.
    shapes: dict[tuple[int, ...], list[int]] = {}
    for coins in coin_columns:
        amounts = [paytable.payout(r, coins) for r in HAND_RANKS]
        divisor = gcd(*amounts) or 1
        shapes.setdefault(tuple(a // divisor for a in amounts), []).append(coins)
    distinct = list(shapes)
    totals = _final_hand_totals(distinct, play)
    denominator = DEALS * strategy.SCALE
    out = {
        coins: _summary(paytable, coins, play, totals[i], denominator)
        for i, shape in enumerate(distinct)
        for coins in shapes[shape]
    }
    return {coins: out[coins] for coins in coin_columns}


def _final_hand_totals(pay_shapes: list[tuple[int, ...]], play: Play) -> list[list[int]]:
    """Per pay vector, the weighted count of each final rank over every deal and draw,
    times :data:`strategy.SCALE` (the probability is this over ``DEALS * SCALE``)."""
    columns, weights = _deal_classes()
    pays = np.array(pay_shapes, dtype=np.float64).T
    totals = np.zeros((len(pay_shapes), len(HAND_RANKS)), dtype=np.int64)
    for start in range(0, len(weights), _CHUNK):
        chunk = [c[start : start + _CHUNK] for c in columns]
        w = weights[start : start + _CHUNK]
        scaled = strategy.scale_counts(strategy.final_counts_batch(chunk))
        rows = np.arange(len(w))
        if play is Play.WINNING_CARDS:
            totals += w @ scaled[_winning_cards_masks(chunk), rows]
            continue
        ev = scaled @ pays  # EV x SCALE of every hold: exact, integers below 2**53
        for i in range(len(pay_shapes)):
            best = strategy.choose_batch(scaled, ev[:, :, i])
            totals[i] += w @ scaled[best, rows]
    return [[int(n) for n in row] for row in totals]


def _summary(
    paytable: Paytable, coins: int, play: Play, totals: Iterable[int], denominator: int
) -> CycleAnalysis:
    probabilities = {r: Fraction(n, denominator) for r, n in zip(HAND_RANKS, totals, strict=True)}
    assert sum(probabilities.values()) == 1, "the final hands of every deal must add up"
    per_coin = {r: Fraction(paytable.payout(r, coins), coins) for r in HAND_RANKS}
    rtp = sum((p * per_coin[r] for r, p in probabilities.items()), Fraction(0))
    second = sum((p * per_coin[r] ** 2 for r, p in probabilities.items()), Fraction(0))
    hits = sum((p for r, p in probabilities.items() if per_coin[r] > 0), Fraction(0))
    return CycleAnalysis(
        paytable_id=paytable.id,
        coins=coins,
        play=play,
        probabilities=MappingProxyType(probabilities),
        rtp=rtp,
        variance=second - rtp**2,
        hit_frequency=hits,
        max_win=max(per_coin.values()),
    )
