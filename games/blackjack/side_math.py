"""Exact returns of the four side bets (seed 002), by direct counting over the 8-deck shoe.

A card *type* is a (rank, suit) pair; a fresh shoe holds ``decks`` copies of each of the
52 types. Perfect Pairs counts the ordered pairs of the player's first two cards; 21+3 and
Hot 3 the ordered triples (two player cards and the dealer's up card), by rank triple and
whether the suits agree (the tests count over every triple of card types instead).

Readings (seed 002 names the hands by example only; the common casino rules, stated):

- 21+3: the ace is high or low, so A-2-3 and Q-K-A are straights (K-A-2 is not); a
  straight flush is not also a straight or a flush, suited trips not also trips. The
  alternative, ace high only, is computed too (:func:`twenty_one_plus_three`).
- Hot 3: the three cards count as a blackjack hand, an ace 11 unless that passes 21
  (A-A-9 is 21, A-K-Q is 21, A-A-A is 13); 7-7-7 pays first whatever the suits, then a
  suited 21 (all three of one suit), then any 21, 20, 19. An ace-as-1-only reading is
  computed too.
- Bust It: the dealer's final hand busts with 3, 4, 5, 6, 7 or 8+ cards (up card and hole
  card included); a player blackjack pushes. The dealer always completes the hand (the
  table has many seats). Conditioning: the player's two cards are removed and *no other*
  card. The other cards dealt before the dealer draws (every seat's step cards, seed 002's
  shared dealing) are, seen from this bet, cards taken off the top by a rule that decides
  after each card whether to take another (a stopping time: seats decide on what they
  have seen). For a well-shuffled shoe the cards after a stopping time are distributed
  like the cards before it (P(the next k cards are x) given the cards seen so far is a
  martingale, and optional stopping keeps its mean), so the dealer's hole card and draws
  are distributed as if dealt straight after the player's two cards and the up card. The
  dealer's hand itself is the up card, the hole card and the draws (seed 002 order).

Returns are per unit staked: ``E[returned] / stake`` (a push returns the stake).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import product
from typing import Final

from games.blackjack.paytables import DEFAULT_PAYTABLES, SideBet, SidePaytable

__all__ = [
    "SideBetFigures",
    "bust_it",
    "bust_it_distribution",
    "hot_three",
    "hot_three_outcome",
    "perfect_pairs",
    "side_bets",
    "twenty_one_plus_three",
    "twenty_one_plus_three_outcome",
]

RANKS: Final = tuple(range(1, 14))
"""1 = ace, 2..10, 11 = jack, 12 = queen, 13 = king."""
SUITS: Final = ("c", "d", "h", "s")
RED: Final = frozenset({"d", "h"})
Card = tuple[int, str]
TYPES: Final[tuple[Card, ...]] = tuple((r, s) for r in RANKS for s in SUITS)


def bj_value(rank: int) -> int:
    return min(rank, 10)


@dataclass(frozen=True, slots=True)
class SideBetFigures:
    """One side bet's exact figures: P(outcome) for each paying outcome (and ``push``
    for Bust It), and the return per unit staked."""

    bet: SideBet
    paytable_id: str
    probabilities: Mapping[str, Fraction]
    rtp: Fraction


def _figures(
    paytable: SidePaytable, probabilities: dict[str, Fraction], push: Fraction = Fraction(0)
) -> SideBetFigures:
    rtp = push + sum(
        (p * (1 + paytable.pays[name]) for name, p in probabilities.items()), Fraction(0)
    )
    if push:
        probabilities = {**probabilities, "push": push}
    return SideBetFigures(paytable.bet, paytable.id, probabilities, rtp)


def perfect_pairs(decks: int = 8, paytable: SidePaytable | None = None) -> SideBetFigures:
    """First two player cards: same rank and suit (perfect), same rank and colour
    (coloured), same rank (mixed)."""
    table = paytable or DEFAULT_PAYTABLES[SideBet.PERFECT_PAIRS]
    counts = dict.fromkeys(("perfect", "coloured", "mixed"), 0)
    for (r1, s1), (r2, s2) in product(TYPES, repeat=2):
        if r1 != r2:
            continue
        if s1 == s2:
            counts["perfect"] += decks * (decks - 1)
        elif (s1 in RED) == (s2 in RED):
            counts["coloured"] += decks * decks
        else:
            counts["mixed"] += decks * decks
    cards = 52 * decks
    return _figures(table, {k: Fraction(v, cards * (cards - 1)) for k, v in counts.items()})


def _is_straight(ranks: tuple[int, ...], ace_low: bool) -> bool:
    r = sorted(ranks)
    if len(set(r)) != 3:
        return False
    if r[2] - r[0] == 2:
        return ace_low or r[0] != 1  # A-2-3 needs the ace low
    return r == [1, 12, 13]  # Q-K-A: the ace high


def twenty_one_plus_three_outcome(cards: tuple[Card, ...], ace_low: bool = True) -> str | None:
    """The 21+3 hand of the two player cards and the up card, or None."""
    ranks = tuple(r for r, _ in cards)
    suited = len({s for _, s in cards}) == 1
    if len(set(ranks)) == 1:
        return "suited-trips" if suited else "trips"
    straight = _is_straight(ranks, ace_low)
    if straight and suited:
        return "straight-flush"
    if straight:
        return "straight"
    return "flush" if suited else None


def hot_three_outcome(cards: tuple[Card, ...], ace_eleven: bool = True) -> str | None:
    """The Hot 3 hand of the two player cards and the up card, or None."""
    ranks = [r for r, _ in cards]
    if ranks == [7, 7, 7]:
        return "777"
    hard = sum(bj_value(r) for r in ranks)
    total = hard + 10 if ace_eleven and 1 in ranks and hard + 10 <= 21 else hard
    if total == 21:
        return "suited-21" if len({s for _, s in cards}) == 1 else "21"
    return {20: "20", 19: "19"}.get(total)


def _three_card(
    classify: Callable[[tuple[Card, ...]], str | None], decks: int
) -> dict[str, Fraction]:
    """P(outcome) over the ordered triples. An outcome depends on the ranks and on whether
    the three suits agree, so count by ordered rank triple: of its
    ``4d (4d - [r2 = r1]) (4d - [r3 = r1] - [r3 = r2])`` ordered draws, the suited ones
    are ``4 d (d - [r2 = r1]) (d - [r3 = r1] - [r3 = r2])`` (same suit: equal types are
    equal ranks)."""
    counts: dict[str, int] = {}
    per_rank = 4 * decks
    for r1, r2, r3 in product(RANKS, repeat=3):
        same2, same3 = int(r2 == r1), int(r3 == r1) + int(r3 == r2)
        every = per_rank * (per_rank - same2) * (per_rank - same3)
        suited = 4 * decks * (decks - same2) * (decks - same3)
        for ways, suits in ((suited, ("s", "s", "s")), (every - suited, ("s", "h", "c"))):
            if ways <= 0:
                continue
            outcome = classify(((r1, suits[0]), (r2, suits[1]), (r3, suits[2])))
            if outcome is not None:
                counts[outcome] = counts.get(outcome, 0) + ways
    cards = 52 * decks
    return {k: Fraction(v, cards * (cards - 1) * (cards - 2)) for k, v in counts.items()}


def twenty_one_plus_three(
    decks: int = 8, paytable: SidePaytable | None = None, ace_low: bool = True
) -> SideBetFigures:
    table = paytable or DEFAULT_PAYTABLES[SideBet.TWENTY_ONE_PLUS_THREE]
    return _figures(table, _three_card(lambda c: twenty_one_plus_three_outcome(c, ace_low), decks))


def hot_three(
    decks: int = 8, paytable: SidePaytable | None = None, ace_eleven: bool = True
) -> SideBetFigures:
    table = paytable or DEFAULT_PAYTABLES[SideBet.HOT_THREE]
    return _figures(table, _three_card(lambda c: hot_three_outcome(c, ace_eleven), decks))


# -- Bust It -------------------------------------------------------------------------------


def bust_it_distribution(shoe: tuple[int, ...]) -> dict[int, Fraction]:
    """P(the dealer busts with n cards), n = 3.., dealing up card, hole card and draws
    from ``shoe`` (counts by value 1..10); standing on all 17s. Exact, over the multisets
    the dealer holds while drawing (a multiset fixes the total and every prefix of an
    ordering is one, so this counts every dealer card sequence once)."""
    total_cards = sum(shoe)
    # Integer ways per level: every sequence of k cards has probability ways / N(N-1)..(N-k+1).
    ways_out: dict[int, int] = {}
    level: dict[tuple[int, ...], int] = {(0,) * 10: 1}
    held_cards = 0
    while level:
        following: dict[tuple[int, ...], int] = {}
        for held, ways in level.items():
            hard = sum((i + 1) * c for i, c in enumerate(held))
            for v in range(1, 11):
                n = shoe[v - 1] - held[v - 1]
                if n <= 0:
                    continue
                new_hard = hard + v
                ace = held[0] > 0 or v == 1
                total = new_hard + 10 if ace and new_hard + 10 <= 21 else new_hard
                if new_hard > 21:
                    ways_out[held_cards + 1] = ways_out.get(held_cards + 1, 0) + ways * n
                elif total < 17:  # seed 002: the dealer stands on all 17s
                    key = (*held[: v - 1], held[v - 1] + 1, *held[v:])
                    following[key] = following.get(key, 0) + ways * n
        level = following
        held_cards += 1
    out: dict[int, Fraction] = {}
    for k, ways in sorted(ways_out.items()):
        falling = 1
        for i in range(k):
            falling *= total_cards - i
        out[k] = Fraction(ways, falling)
    return out


def bust_it(decks: int = 8, paytable: SidePaytable | None = None) -> SideBetFigures:
    """Bust It over every two-card player hand (by value): a blackjack pushes, otherwise
    the dealer's bust distribution from the shoe without the player's two cards."""
    table = paytable or DEFAULT_PAYTABLES[SideBet.BUST_IT]
    shoe = (4 * decks,) * 9 + (16 * decks,)
    cards = sum(shoe)
    probabilities: dict[str, Fraction] = {}
    push = Fraction(0)
    for a in range(1, 11):
        for b in range(a, 11):
            ways = shoe[a - 1] * (shoe[b - 1] - (a == b)) * (1 if a == b else 2)
            p_hand = Fraction(ways, cards * (cards - 1))
            if {a, b} == {1, 10}:
                push += p_hand
                continue
            rest = list(shoe)
            rest[a - 1] -= 1
            rest[b - 1] -= 1
            for n, p in bust_it_distribution(tuple(rest)).items():
                name = "8+" if n >= 8 else str(n)
                probabilities[name] = probabilities.get(name, Fraction(0)) + p_hand * p
    return _figures(table, probabilities, push)


def side_bets(decks: int = 8) -> dict[SideBet, SideBetFigures]:
    """Every side bet under seed 002's paytables and this module's readings."""
    return {
        SideBet.PERFECT_PAIRS: perfect_pairs(decks),
        SideBet.TWENTY_ONE_PLUS_THREE: twenty_one_plus_three(decks),
        SideBet.HOT_THREE: hot_three(decks),
        SideBet.BUST_IT: bust_it(decks),
    }
