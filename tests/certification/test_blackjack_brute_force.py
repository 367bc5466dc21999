"""Infinite Blackjack main game: the fast exact method against a brute force in fractions.

The brute force below is written again from seed 002, independently of
games.blackjack.player_ev: it deals in seed 002's order (first player card, up card,
second player card, hole card), keeps the hole card as an explicit unknown (a weight per
hole value, updated by Bayes as the player sees his own draws; removed when the ace-up
peek shows no blackjack), deals the player's cards from the shoe *without* the hole card,
and plays the dealer card by card, every ordering separately. The fast method instead
treats the hole card as dealt after the player's cards (exchangeability), counts dealer
multisets and values a split as twice one hand; on small shoes both must agree exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import cache, partial

import numpy as np
import pytest

from games.blackjack.math import main_game
from games.blackjack.player_ev import ACTIONS, Action, HandSpace, Solution, hand_space

pytestmark = pytest.mark.slow

Counts = tuple[int, ...]
Weights = dict[int, Fraction]
SplitPolicy = Callable[[tuple[int, ...], int, int], bool]
"""(split hand's cards, pair value, up) -> hit?"""

# Small shoes (counts by value 1..10): aces, pairs, tens (blackjacks), small cards for
# six-card charlies, and dealer totals 17..21 are all possible; no play exhausts them.
SHOES = {
    "A-2-T": (3, 4, 0, 0, 0, 0, 0, 0, 0, 6),
    "A-3-6-T": (2, 0, 3, 0, 0, 2, 0, 0, 0, 5),
}


def take(counts: Counts, v: int) -> Counts:
    assert counts[v - 1] > 0, "brute force drew a card the shoe does not hold"
    return (*counts[: v - 1], counts[v - 1] - 1, *counts[v:])


def total(cards: tuple[int, ...]) -> tuple[int, bool]:
    hard = sum(cards)
    return (hard + 10, True) if 1 in cards and hard + 10 <= 21 else (hard, False)


@cache
def dealer(up: int, hole: int, counts: Counts) -> dict[str, Fraction]:
    """The dealer's final outcome, drawing card by card (stands on all 17s)."""
    if total((up, hole))[0] == 21:
        return {"bj": Fraction(1)}
    out: dict[str, Fraction] = {}

    def play(cards: tuple[int, ...], left: Counts, p: Fraction) -> None:
        t, _ = total(cards)
        if t > 21:
            out["bust"] = out.get("bust", Fraction(0)) + p
            return
        if t >= 17:
            out[str(t)] = out.get(str(t), Fraction(0)) + p
            return
        n = sum(left)
        if n == 0:
            raise AssertionError("the small shoe ran out: pick a bigger one")
        for v in range(1, 11):
            if left[v - 1]:
                play((*cards, v), take(left, v), p * Fraction(left[v - 1], n))

    play((up, hole), counts, Fraction(1))
    return out


def settle(cards: tuple[int, ...], stake: int, outcome: str, all_bets: bool) -> Fraction:
    """Net of one unsplit hand against the dealer's outcome (seed 002)."""
    t, _ = total(cards)
    if t <= 21 and len(cards) >= 6:
        return Fraction(1)  # six card charlie, even against a blackjack
    if t > 21:
        return Fraction(-stake)  # a bust loses at once
    if outcome == "bj":
        return Fraction(-stake if all_bets else -1)  # original-only: a double comes back
    if outcome == "bust":
        return Fraction(stake)
    d = int(outcome)
    return Fraction(stake if t > d else 0 if t == d else -stake)


def settle_split(
    hands: tuple[tuple[int, ...], tuple[int, ...]], outcome: str, all_bets: bool
) -> Fraction:
    charlies = sum(1 for h in hands if len(h) >= 6 and total(h)[0] <= 21)
    busts = sum(1 for h in hands if total(h)[0] > 21)
    if outcome == "bj":
        standing = len(hands) - charlies - busts
        # original-only: busts lost, charlies won; the blackjack takes one bet from the
        # first hand still standing and the other stake comes back.
        return Fraction(charlies - busts - (standing if all_bets else min(standing, 1)))
    return sum((settle(h, 1, outcome, all_bets) for h in hands), Fraction(0))


def draw(counts: Counts, w: Weights, v: int) -> tuple[Counts, Weights] | None:
    """The player draws ``v`` from the shoe without the (unknown) hole card."""
    n = sum(counts) - 1
    new = {
        h: p * Fraction(counts[v - 1] - (h == v), n)
        for h, p in w.items()
        if counts[v - 1] - (h == v) > 0
    }
    return (take(counts, v), new) if new else None


def expect(up: int, counts: Counts, w: Weights, pay: Callable[[str], Fraction]) -> Fraction:
    return sum(
        (p * q * pay(o) for h, p in w.items() for o, q in dealer(up, h, take(counts, h)).items()),
        Fraction(0),
    )


class BruteForce:
    def __init__(self, shoe: Counts, all_bets: bool, split_hits: SplitPolicy) -> None:
        self.shoe, self.all_bets, self.split_hits = shoe, all_bets, split_hits

    def hand(self, up: int, cards: tuple[int, ...], counts: Counts, w: Weights) -> Fraction:
        """Best joint value of an unsplit hand (hit / stand / double)."""
        t, _ = total(cards)
        if t > 21 or len(cards) >= 6:
            return expect(up, counts, w, lambda o: settle(cards, 1, o, self.all_bets))
        options = [expect(up, counts, w, lambda o: settle(cards, 1, o, self.all_bets))]
        if t < 21 and sum(cards) < 17:  # seed 002: no card on hard 17+, no decision on 21
            options.append(
                self._draws(up, cards, counts, w, lambda c, k, x: self.hand(up, c, k, x))
            )
        if len(cards) == 2 and t != 21:
            options.append(
                self._draws(
                    up,
                    cards,
                    counts,
                    w,
                    lambda c, k, x: expect(up, k, x, lambda o: settle(c, 2, o, self.all_bets)),
                )
            )
        if len(cards) == 2 and cards[0] == cards[1]:
            options.append(self.split(up, cards[0], counts, w))
        return max(options)

    def _draws(
        self,
        up: int,
        cards: tuple[int, ...],
        counts: Counts,
        w: Weights,
        then: Callable[[tuple[int, ...], Counts, Weights], Fraction],
    ) -> Fraction:
        value = Fraction(0)
        for v in range(1, 11):
            drawn = draw(counts, w, v)
            if drawn is not None:
                value += then((*cards, v), *drawn)
        return value

    def split_hand(
        self, up: int, pair: int, cards: tuple[int, ...], counts: Counts, w: Weights
    ) -> Iterator[tuple[tuple[int, ...], Counts, Weights]]:
        """Every way one split hand ends, playing the fast method's per-hand decisions."""
        t, _ = total(cards)
        must_draw = len(cards) == 1
        may_hit = pair != 1 and len(cards) < 6 and sum(cards) < 17 and t < 21
        if t > 21 or not (must_draw or (may_hit and self.split_hits(cards, pair, up))):
            yield cards, counts, w
            return
        for v in range(1, 11):
            drawn = draw(counts, w, v)
            if drawn is not None:
                yield from self.split_hand(up, pair, (*cards, v), *drawn)

    def split(self, up: int, pair: int, counts: Counts, w: Weights) -> Fraction:
        value = Fraction(0)
        for first, k1, w1 in self.split_hand(up, pair, (pair,), counts, w):
            for second, k2, w2 in self.split_hand(up, pair, (pair,), k1, w1):
                hands = (first, second)
                value += expect(up, k2, w2, partial(settle_split, hands, all_bets=self.all_bets))
        return value

    def rtp(self) -> Fraction:
        shoe, net = self.shoe, Fraction(0)
        n = sum(shoe)
        for p1 in range(1, 11):
            for up in range(1, 11):
                for p2 in range(1, 11):
                    try:
                        k = take(take(take(shoe, p1), up), p2)
                    except AssertionError:
                        continue
                    p = Fraction(shoe[p1 - 1], n) * Fraction(take(shoe, p1)[up - 1], n - 1)
                    p *= Fraction(take(take(shoe, p1), up)[p2 - 1], n - 2)
                    if not p:
                        continue
                    left = sum(k)
                    w = {h: Fraction(k[h - 1], left) for h in range(1, 11) if k[h - 1]}
                    blackjack = {p1, p2} == {1, 10}
                    if up == 1:  # seed 002: the dealer peeks under an ace
                        net += p * w.pop(10, Fraction(0)) * (0 if blackjack else -1)
                    if blackjack:
                        net += p * sum(
                            (q * (0 if total((up, h))[0] == 21 else Fraction(3, 2)))
                            for h, q in w.items()
                        )
                        continue
                    cards = tuple(sorted((p1, p2)))
                    net += p * self.hand(up, cards, k, w)
        return 1 + net


def split_policy(sol: Solution, sp: HandSpace) -> SplitPolicy:
    hit = ACTIONS.index(Action.HIT)

    def hits(cards: tuple[int, ...], pair: int, up: int) -> bool:
        counts = tuple(cards.count(v) for v in range(1, 11))
        return bool(sol.choice[up - 1, sp.index[(counts, pair)]] == hit)

    return hits


@pytest.mark.parametrize(
    ("name", "all_bets"),
    [("A-2-T", True), ("A-2-T", False), ("A-3-6-T", True)],
    ids=["A-2-T-all-bets", "A-2-T-original-only", "A-3-6-T-all-bets"],
)
def test_fast_exact_method_equals_brute_force_in_deal_order(name: str, all_bets: bool) -> None:
    shoe = SHOES[name]
    sp = hand_space(shoe=shoe)
    fast = main_game(all_bets, shoe=shoe, space=sp, exact=True)
    brute = BruteForce(shoe, all_bets, split_policy(fast.solution, sp))
    expected = brute.rtp()
    if all_bets:
        assert fast.rtp == expected
        # The production path (doubles) agrees with the exact fractions.
        floats = main_game(all_bets, shoe=shoe, space=sp)
        assert abs(float(fast.rtp) - floats.rtp) < 1e-12
        assert np.allclose(fast.solution.best.astype(float), floats.solution.best, atol=1e-12)
        assert fast.rtp_bound == 0
    else:
        # Original-only splits need the two hands jointly; the fast method states a bound.
        assert abs(fast.rtp - expected) <= fast.rtp_bound
        assert fast.rtp_bound < Fraction(1, 10**3)
