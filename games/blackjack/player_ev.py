"""Composition-dependent expected values of the player's hand, vectorised over up cards.

A *hand state* is the multiset of the hand's cards (counts by value 1..10), and for a split
hand also the other card of the pair, which sits in the other hand and so is out of the
shoe. Values are *joint measures* per unit of the hand's original bet: the expected net
result times P(the game reaches this point | the hand's cards). With an ace up that factor
is P(no dealer blackjack | the cards seen), because the dealer peeks and only then do the
decisions start; with any other up card it is 1. Every action at one state shares the
factor, so comparing joint measures is comparing conditional expectations.

Rules (seed 002): stand on all 17s for the dealer; double on any two initial cards (not a
blackjack; on hard 17..20 too, see :mod:`games.blackjack.rules`); split two cards of equal
value once (no resplit), no double after a split, split aces one card each; no hit on hard
17 or more, no decision on 21; six cards totalling 21 or less win 1:1 at once even against
a dealer blackjack ("Six Card Charlie", per split hand).

Split EV, exactly: each split hand plays a strategy that depends on its own cards (and
the up card and the pair) only. Under such strategies the cards the first hand draws form
a stopping time, and for an exchangeable shoe the cards after a stopping time are
distributed as the cards before it (the probability of any finite sequence next is a
martingale). So each hand's expected result equals that of one hand ``(p, draws)`` played
from the shoe without the up card and *both* pair cards, and the split is worth twice
that, exactly, for that class of strategies. The fully composition-dependent optimum
(the second hand also looking at the first hand's cards) can only be higher; the gap is
below 1e-5 of a bet in published comparisons.

Ten up, no peek, reading ``original-only`` (as games.blackjack.settlement settles it): a
bust loses its stake when it busts and a charlie wins; the dealer's blackjack then takes
the main bet once, from the first hand still standing, and every other stake still out
comes back (a double's extra stake, the other split hand). Unsplit hands: exact. Two split
hands: net on a dealer blackjack = charlies - busts - [a hand stands]; scored per hand as
under ``all-bets`` (-1 a hand) plus ``C = P(BJ and both hands stand)``, with ``q = P(BJ
and one hand does not stand)`` exact per hand and ``C = P(BJ) - 2 q + T``, ``T = P(BJ and
neither stands)``. ``T`` needs the two hands jointly; it is taken as ``q^2 / P(BJ)`` (the
hands independent given the blackjack) and its error is bounded by ``T``'s range
``[max(0, 2q - P(BJ)), q]``; ``split_bound`` carries that bound, which the main game sums
into ``MainGame.rtp_bound``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from games.blackjack.dealer import BLACKJACK, BUST, dealer_outcomes

__all__ = [
    "Action",
    "HandSpace",
    "Solution",
    "hand_space",
    "solve",
]

Array = npt.NDArray[Any]
UPS: Final = tuple(range(1, 11))
"""Up card values, ace = 1 (index 0) to ten = 10 (index 9)."""
LIVE, BUSTED, CHARLIE = 0, 1, 2


class Action(StrEnum):
    STAND = "stand"
    HIT = "hit"
    DOUBLE = "double"
    SPLIT = "split"
    CASHOUT = "cashout"


def _hard(c: tuple[int, ...]) -> int:
    return sum((i + 1) * n for i, n in enumerate(c))


def _total(c: tuple[int, ...]) -> tuple[int, bool]:
    """(best total, soft) of a multiset of values."""
    hard = _hard(c)
    if c[0] and hard + 10 <= 21:
        return hard + 10, True
    return hard, False


def _add(c: tuple[int, ...], v: int) -> tuple[int, ...]:
    return (*c[: v - 1], c[v - 1] + 1, *c[v:])


@dataclass(frozen=True, slots=True)
class HandSpace:
    """Every hand state the player can reach, as parallel arrays (shoe-independent).

    ``pair`` is 0 for the main hand, else the value of the split pair (the hand's other
    card is out of the shoe). ``removed`` = the hand's cards plus that other card.
    """

    cards: tuple[tuple[int, ...], ...]
    pair: Array
    removed: Array
    n_cards: Array
    total: Array
    soft: Array
    kind: Array
    child: Array
    can_hit: Array
    can_double: Array
    forced_draw: Array
    index: dict[tuple[tuple[int, ...], int], int]


def hand_space(
    charlie: int = 6,
    double_on_hard_17: bool = True,
    hit_hard_17: bool = False,
    shoe: tuple[int, ...] | None = None,
) -> HandSpace:
    """Build the reachable states: two-card main hands and what hitting or doubling
    reaches; one-card split hands (forced draw) and what they reach. ``hit_hard_17``
    lifts seed 002's "no card on a hard 17 or more" (only to explain the published
    figure, see docs/games/blackjack.md). ``shoe``: keep only hands that shoe can deal (small
    shoes in tests; every hand fits 8 decks)."""
    index: dict[tuple[tuple[int, ...], int], int] = {}
    order: list[tuple[tuple[int, ...], int]] = []

    def visit(c: tuple[int, ...], pair: int) -> None:
        key = (c, pair)
        if key in index:
            return
        if shoe is not None and any(
            n + (pair == i + 1) > s for i, (n, s) in enumerate(zip(c, shoe, strict=True))
        ):
            return
        index[key] = len(order)
        order.append(key)
        n = sum(c)
        if _hard(c) > 21 or n >= charlie:
            return
        if n == 1 or _can_hit(c, pair, hit_hard_17) or _can_double(c, pair, double_on_hard_17):
            for v in UPS:
                visit(_add(c, v), pair)

    zero = (0,) * 10
    for a in UPS:
        for b in UPS[a - 1 :]:
            visit(_add(_add(zero, a), b), 0)
        visit(_add(zero, a), a)
    states = len(order)
    child = np.full((states, 10), -1, dtype=np.int64)
    arrays: dict[str, list[int]] = {
        k: []
        for k in (
            "pair",
            "n_cards",
            "total",
            "soft",
            "kind",
            "can_hit",
            "can_double",
            "forced",
        )
    }
    removed = np.zeros((states, 10), dtype=np.int64)
    for s, (c, pair) in enumerate(order):
        total, soft = _total(c)
        n = sum(c)
        kind = BUSTED if _hard(c) > 21 else CHARLIE if n >= charlie else LIVE
        arrays["pair"].append(pair)
        arrays["n_cards"].append(n)
        arrays["total"].append(total)
        arrays["soft"].append(int(soft))
        arrays["kind"].append(kind)
        arrays["can_hit"].append(int(kind == LIVE and n > 1 and _can_hit(c, pair, hit_hard_17)))
        arrays["can_double"].append(int(kind == LIVE and _can_double(c, pair, double_on_hard_17)))
        arrays["forced"].append(int(n == 1))
        removed[s] = c
        if pair:
            removed[s, pair - 1] += 1
        for v in UPS:
            child[s, v - 1] = index.get((_add(c, v), pair), -1)
    arr = {k: np.array(col, dtype=np.int64) for k, col in arrays.items()}
    return HandSpace(
        cards=tuple(c for c, _ in order),
        pair=arr["pair"],
        removed=removed,
        n_cards=arr["n_cards"],
        total=arr["total"],
        soft=arr["soft"].astype(bool),
        kind=arr["kind"],
        child=child,
        can_hit=arr["can_hit"].astype(bool),
        can_double=arr["can_double"].astype(bool),
        forced_draw=arr["forced"].astype(bool),
        index=index,
    )


def _can_hit(c: tuple[int, ...], pair: int, hard_17: bool = False) -> bool:
    n = sum(c)
    total, _ = _total(c)
    if pair == 1 and n >= 2:
        return False  # seed 002: each split ace receives one card only
    # seed 002: no card on a hard 17 or more; no decision on 21 (soft 21 included).
    return (hard_17 or _hard(c) < 17) and total < 21


def _can_double(c: tuple[int, ...], pair: int, on_hard_17: bool) -> bool:
    # seed 002: double on any two initial cards whose total is not 21; not after a split.
    total, soft = _total(c)
    return pair == 0 and sum(c) == 2 and total != 21 and (on_hard_17 or soft or total < 17)


Policy = Callable[[HandSpace, int], np.ndarray]
"""A fixed way of play: (space, up) -> the action (an :class:`Action` value) per state."""


@dataclass(frozen=True, slots=True)
class Solution:
    """Joint-measure values (10 up cards x states), per unit of the hand's bet."""

    space: HandSpace
    stand: Array
    hit: Array
    double: Array
    best: Array
    mass: Array
    """P(the game reaches the state) factor: P(no dealer blackjack | cards) with an ace
    up (peek), 1 otherwise."""
    blackjack: Array
    """P(dealer blackjack | cards) where it is scored at the end (ten up, no peek)."""
    split: Array
    """Per main pair state: the value of splitting (both hands); -10 elsewhere."""
    choice: Array
    """The action taken per (up, state) (an index into ``ACTIONS``)."""
    split_bound: Array
    """Per main pair state: the bound on the split value's error (original-only; 0 under
    all-bets, where the split value is exact)."""

    @property
    def reach(self) -> Array:
        """P(the decisions at a state happen | its cards): ``mass`` with an ace up (the
        peek), 1 otherwise (``mass + blackjack``)."""
        return self.mass + self.blackjack


ACTIONS: Final = (Action.STAND, Action.HIT, Action.DOUBLE, Action.SPLIT, Action.CASHOUT)


def solve(
    shoe: tuple[int, ...],
    all_bets: bool,
    space: HandSpace | None = None,
    exact: bool = False,
    policy: Policy | None = None,
    cashout: Array | None = None,
    actions: frozenset[Action] = frozenset(Action),
) -> Solution:
    """Values of every state for every up card.

    ``all_bets``: a dealer blackjack under a ten takes every stake (else the original bet
    only). ``policy`` fixes the action per state (else the best action is taken).
    ``cashout`` (10, states) offers in units of the bet (NaN where not offered) adds the
    cash-out as an action of the main hand. ``actions`` limits the choice (e.g. hit and
    stand only); a forced draw is always taken.
    """
    sp = space or hand_space()
    states = len(sp.cards)
    one: Any = Fraction(1) if exact else 1.0
    dtype: Any = object if exact else np.float64

    def zeros(shape: tuple[int, ...]) -> Array:
        return np.full(shape, 0 * one, dtype=dtype)

    live = np.flatnonzero(sp.kind == LIVE)
    split_ctx = sp.pair > 0
    stand, hit, double, best = (zeros((10, states)) for _ in range(4))
    mass, bj = zeros((10, states)), zeros((10, states))
    prob = np.empty((10, states, 10), dtype=dtype)
    # Payoff per dealer outcome (17..21, bust, blackjack) of a standing hand, per unit.
    pay = zeros((len(live), 7))
    totals = sp.total[live]
    for o in range(5):
        pay[:, o] = np.where(totals > 17 + o, one, np.where(totals == 17 + o, 0 * one, -one))
    pay[:, BUST] = one
    pay[:, BLACKJACK] = -one  # one stake standing: lost under either reading
    double_pay = 2 * pay
    if not all_bets:
        double_pay[:, BLACKJACK] = -one
    dbl_stand = zeros((10, states))
    for u in UPS:
        counts = np.array(shoe, dtype=np.int64)
        counts[u - 1] -= 1
        base = np.maximum(counts[None, :] - sp.removed, 0)
        left = np.maximum(base.sum(axis=1), 1)
        if exact:
            prob[u - 1] = np.array(
                [
                    [Fraction(int(x), int(n)) for x in row]
                    for row, n in zip(base, left, strict=True)
                ],
                dtype=object,
            )
        else:
            prob[u - 1] = base / left[:, None]
        p_ten, p_ace = prob[u - 1, :, 9], prob[u - 1, :, 0]
        if u == 1:
            mass[0] = one - p_ten
        elif u == 10:
            bj[9], mass[9] = p_ace, one - p_ace
        else:
            mass[u - 1] = one
        d = dealer_outcomes(u, sp.removed[live], shoe, peek=(u == 1), exact=exact)
        stand[u - 1, live] = (pay.T * d).sum(axis=0)
        dbl_stand[u - 1, live] = (double_pay.T * d).sum(axis=0)
    # Terminal states: a bust loses its stake at once; a charlie wins 1 (vs a blackjack too).
    busted, charlie = sp.kind == BUSTED, sp.kind == CHARLIE
    reach = mass + bj
    stand[:, busted] = -reach[:, busted]
    dbl_stand[:, busted] = -2 * reach[:, busted]
    stand[:, charlie] = reach[:, charlie]
    dbl_stand[:, charlie] = stand[:, charlie]
    # P(dealer blackjack and the hand ends bust or charlie), for original-only splits.
    not_standing = zeros((10, states))
    not_standing[:, busted | charlie] = bj[:, busted | charlie]
    split_bound = zeros((10, states))
    choice = np.full((10, states), -1, dtype=np.int64)
    split_value = zeros((10, states))
    pair_of = np.full(states, -1, dtype=np.int64)  # main pair state -> its split hand
    for a in UPS:
        main, split = (_add(_add((0,) * 10, a), a), 0), (_add((0,) * 10, a), a)
        if main in sp.index and split in sp.index:
            pair_of[sp.index[main]] = sp.index[split]
    low = -10 * one
    fixed = None if policy is None else np.stack([policy(sp, u) for u in UPS])
    # Split hands first (they never reach a main-hand state), then the main hands.
    for split_pass in (True, False):
        for n in range(int(sp.n_cards.max()), 0, -1):
            at = np.flatnonzero((sp.n_cards == n) & (split_ctx == split_pass))
            terminal = at[sp.kind[at] != LIVE]
            best[:, terminal] = stand[:, terminal]
            at = at[sp.kind[at] == LIVE]
            if not len(at):
                continue
            safe = np.maximum(sp.child[at], 0)
            p = prob[:, at, :]
            hit[:, at] = (p * best[:, safe]).sum(axis=2)
            double[:, at] = (p * dbl_stand[:, safe]).sum(axis=2)
            splits = pair_of[at]
            hands = np.maximum(splits, 0)
            correction, bound = _original_only_split(bj[:, hands], not_standing[:, hands], one)
            if all_bets:
                correction, bound = 0 * correction, 0 * bound
            split_value[:, at] = np.where(splits >= 0, 2 * best[:, hands] + correction, low)
            split_bound[:, at] = np.where(splits >= 0, bound, 0 * one)
            cash = zeros((10, len(at)))
            cash_ok = np.zeros((10, len(at)), dtype=bool)
            if cashout is not None and not split_pass:
                offer = cashout[:, at]
                cash_ok = ~np.isnan(offer)
                cash = np.where(cash_ok, (np.nan_to_num(offer) - 1) * (mass + bj)[:, at], low)
            values = np.stack([stand[:, at], hit[:, at], double[:, at], split_value[:, at], cash])
            allowed = np.stack(
                [
                    np.broadcast_to(~sp.forced_draw[at], (10, len(at))),
                    np.broadcast_to(
                        (sp.can_hit[at] & (Action.HIT in actions)) | sp.forced_draw[at],
                        (10, len(at)),
                    ),
                    np.broadcast_to(sp.can_double[at] & (Action.DOUBLE in actions), (10, len(at))),
                    np.broadcast_to((splits >= 0) & (Action.SPLIT in actions), (10, len(at))),
                    cash_ok,
                ]
            )
            if fixed is None:
                picked = np.argmax(np.where(allowed, values, low), axis=0)
            else:
                picked = fixed[:, at]
                if not np.take_along_axis(allowed, picked[None], axis=0).all():
                    raise ValueError("the policy takes an action the rules do not allow")
            best[:, at] = np.take_along_axis(values, picked[None], axis=0)[0]
            choice[:, at] = picked
            drawn = (p * not_standing[:, safe]).sum(axis=2)
            not_standing[:, at] = np.where(picked == 1, drawn, 0 * one)
    return Solution(sp, stand, hit, double, best, mass, bj, split_value, choice, split_bound)


def _original_only_split(p_bj: Array, q: Array, one: Any) -> tuple[Array, Array]:
    """(C, bound on C's error) for two split hands under original-only (module doc)."""
    denominator = np.where(p_bj > 0, p_bj, one)
    t = np.where(p_bj > 0, q * q / denominator, 0 * one)
    low = np.maximum(2 * q - p_bj, 0 * one)
    return p_bj - 2 * q + t, np.maximum(t - low, q - t)
