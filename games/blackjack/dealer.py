"""The dealer's final-hand distribution, exactly, for many player compositions at once.

Cards are counted by *value* 1..10 (ace = 1, every ten-value card = 10): a shoe is a
10-tuple of counts, index ``v - 1``. For one up card and a matrix of removed cards (one
row per player composition: the player's cards, plus the other card of a split pair),
:func:`dealer_outcomes` returns, per row, the probability of each dealer outcome
(:data:`OUTCOMES`: 17, 18, 19, 20, 21, bust, blackjack) when the dealer's hole card and
draws come from the shoe without the up card and that row's cards.

Why the player's cards alone are removed, although the hole card was dealt before the
player drew: the hole card is an unseen card, and unseen cards are exchangeable, so the
hole card is distributed as if it were dealt after the player's cards. With an ace up
the dealer peeks (seed 002), and the game goes on only if the hole card is not a ten;
``peek=True`` then *drops* every path whose hole card makes a blackjack, so the rows sum
to P(no dealer blackjack | the row's cards) instead of 1 (a joint measure, see
:mod:`games.blackjack.player_ev`). With a ten up there is no peek: a hole ace is the
``blackjack`` outcome.

The dealer stands on all 17s (seed 002: "Il dealer «sta» sempre su 17"). The recursion is
over the *multisets* of cards the dealer has drawn while still drawing: a multiset fixes
the total, and every prefix of an ordering is itself such a multiset, so summing over
"still drawing" multisets counts exactly the orderings that reach them (1,444 states over
the ten up cards, 14,440 transitions), each a vector operation over every row at once.

>>> import numpy as np
>>> out = dealer_outcomes(10, np.zeros((1, 10), dtype=np.int64), fresh_shoe(8), peek=False)
>>> round(float(out[BLACKJACK, 0]), 6) == round(32 / 415, 6)
True
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "BLACKJACK",
    "BUST",
    "OUTCOMES",
    "dealer_outcomes",
    "fresh_shoe",
]

OUTCOMES: Final = ("17", "18", "19", "20", "21", "bust", "blackjack")
BUST: Final = 5
BLACKJACK: Final = 6
Array = npt.NDArray[Any]


def fresh_shoe(decks: int = 8) -> tuple[int, ...]:
    """Counts by value 1..10 of ``decks`` full decks (four of each rank, sixteen tens)."""
    if decks < 1:
        raise ValueError(f"a shoe has at least one deck, got {decks}")
    return (4 * decks,) * 9 + (16 * decks,)


def _total(hard: int, ace: bool) -> int:
    return hard + 10 if ace and hard + 10 <= 21 else hard


def dealer_outcomes(
    up: int, removed: Array, shoe: tuple[int, ...], peek: bool, exact: bool = False
) -> Array:
    """(7, rows) outcome probabilities for up card ``up`` (1..10) per row of ``removed``.

    ``peek`` (meaningful with an ace or a ten up): drop the paths where the hole card
    makes a blackjack instead of scoring them as :data:`BLACKJACK`. ``exact`` computes in
    :class:`fractions.Fraction` (object arrays; for small shoes in tests).
    """
    if not 1 <= up <= 10:
        raise ValueError(f"up card value must be 1..10, got {up}")
    rows = removed.shape[0]
    counts = np.array(shoe, dtype=np.int64)
    counts[up - 1] -= 1
    base = np.maximum(counts[None, :] - removed, 0)  # (rows, 10) cards left per value
    left = base.sum(axis=1)
    if exact:
        from fractions import Fraction

        base_t: Array = np.array([[Fraction(int(x)) for x in col] for col in base.T], dtype=object)
        left_t: Array = np.array([Fraction(int(x)) for x in left], dtype=object)
        out: Array = np.array([[Fraction(0)] * rows for _ in OUTCOMES], dtype=object)
        start: Array = np.array([Fraction(1)] * rows, dtype=object)
    else:
        base_t = base.T.astype(np.float64)
        left_t = left.astype(np.float64)
        out = np.zeros((len(OUTCOMES), rows))
        start = np.ones(rows)
    # One level per card drawn: multiset (counts by value) -> probability per row.
    level: dict[tuple[int, ...], Array] = {(0,) * 10: start}
    drawn = 0
    while level:
        following: dict[tuple[int, ...], Array] = {}
        denominator = left_t - drawn
        # A row with no card left is unreachable (its own probability is 0): avoid 0 / 0.
        denominator = np.where(denominator > 0, denominator, 1)
        for held, prob in level.items():
            hard = up + sum((i + 1) * c for i, c in enumerate(held))
            ace = up == 1 or held[0] > 0
            chance = prob / denominator
            for v in range(1, 11):
                p = chance * (base_t[v - 1] - held[v - 1])
                new_hard = hard + v
                total = _total(new_hard, ace or v == 1)
                if drawn == 0 and total == 21:
                    if not peek:
                        out[BLACKJACK] += p
                    continue
                if new_hard > 21:
                    out[BUST] += p
                elif total >= 17:
                    out[total - 17] += p
                else:
                    key = (*held[: v - 1], held[v - 1] + 1, *held[v:])
                    if key in following:
                        following[key] = following[key] + p
                    else:
                        following[key] = p
        level = following
        drawn += 1
    return out
