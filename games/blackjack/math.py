"""Exact maths of Infinite Blackjack's main game (seed 002), for the first hand of a shoe.

The composition-dependent optimal return of the main bet for a fresh 8-deck shoe (seed
002: "Sulla base della prima mano nel sabot"), under both readings of a dealer blackjack
under a ten; the per-state EV tables (stand / hit / double / split / best by total or pair
and up card); the total-dependent basic strategy chart derived from them; insurance's own
return. Values come from :mod:`games.blackjack.player_ev` (hands) and
:mod:`games.blackjack.dealer` (the dealer); see there for the conditioning and for how a
split is valued. Insurance is never taken in the main figure.

RTP here is per unit of *original* main bet: ``1 + E[net] / bet`` (doubles and splits are
further stakes whose results are folded in), the measure blackjack returns are published
in.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import numpy as np

from games.blackjack.dealer import fresh_shoe
from games.blackjack.player_ev import (
    ACTIONS,
    UPS,
    Action,
    Array,
    HandSpace,
    Policy,
    Solution,
    _add,
    hand_space,
    solve,
)

__all__ = [
    "CHART_COLUMNS",
    "MainGame",
    "StrategyRow",
    "basic_strategy",
    "basic_strategy_policy",
    "initial_hands",
    "insurance_rtp",
    "main_game",
    "up_label",
]

SHOE: Final = fresh_shoe(8)
CHART_COLUMNS: Final = (2, 3, 4, 5, 6, 7, 8, 9, 10, 1)
"""Up cards in the order charts print them: 2..10, then the ace."""
_ZERO: Final = (0,) * 10


def up_label(up: int) -> str:
    return "A" if up == 1 else str(up)


def initial_hands(shoe: tuple[int, ...], up: int) -> list[tuple[int, int, Fraction]]:
    """Every two-card player hand ``(a, b)`` (a <= b) with P(hand | up card)."""
    counts = list(shoe)
    counts[up - 1] -= 1
    left = sum(counts)
    hands = []
    for a in UPS:
        for b in UPS[a - 1 :]:
            ways = counts[a - 1] * (counts[b - 1] - (a == b)) * (1 if a == b else 2)
            hands.append((a, b, Fraction(ways, left * (left - 1))))
    return hands


@dataclass(frozen=True, slots=True)
class MainGame:
    """The main bet's figures under one reading and one way of play."""

    all_bets: bool
    rtp: Any
    """1 + E[net] per original bet (float, or Fraction when computed exactly)."""
    by_up: dict[int, Any]
    """E[net | up card] per original bet."""
    solution: Solution
    rtp_bound: Any
    """|true - rtp| is at most this (0 under all-bets; see player_ev on original-only
    splits)."""


def main_game(
    all_bets: bool,
    shoe: tuple[int, ...] = SHOE,
    space: HandSpace | None = None,
    exact: bool = False,
    policy: Policy | None = None,
    cashout: Array | None = None,
) -> MainGame:
    """The return of the main bet (best play unless ``policy``; ``cashout`` adds offers)."""
    sp = space or hand_space(shoe=None if shoe == SHOE else shoe)
    sol = solve(shoe, all_bets, sp, exact=exact, policy=policy, cashout=cashout)
    total = sum(shoe)
    net: Any = Fraction(0) if exact else 0.0
    bound: Any = Fraction(0) if exact else 0.0
    split = ACTIONS.index(Action.SPLIT)
    by_up: dict[int, Any] = {}
    for up in UPS:
        if not shoe[up - 1]:
            continue  # no such up card in this shoe (small shoes in tests)
        counts = list(shoe)
        counts[up - 1] -= 1
        ev: Any = Fraction(0) if exact else 0.0
        for a, b, p in initial_hands(shoe, up):
            if p:
                w = (
                    (Fraction(shoe[up - 1], total) * p)
                    if exact
                    else shoe[up - 1] / total * float(p)
                )
                ev += (p if exact else float(p)) * hand_value(sol, up, a, b, counts, exact)
                s = sp.index[(_add(_add(_ZERO, a), b), 0)]
                if sol.choice[up - 1, s] == split:
                    bound += w * sol.split_bound[up - 1, s]
        by_up[up] = ev
        net += (Fraction(shoe[up - 1], total) if exact else shoe[up - 1] / total) * ev
    return MainGame(all_bets, 1 + net, by_up, sol, bound)


def hand_value(
    sol: Solution, up: int, a: int, b: int, counts: list[int], exact: bool = False
) -> Any:
    """E[net] of the two-card hand ``a, b`` against ``up``, the dealer's blackjack included
    (seed 002: with an ace up the dealer peeks and a blackjack ends the round)."""
    s = sol.space.index[(_add(_add(_ZERO, a), b), 0)]
    left = sum(counts) - 2
    tens = counts[9] - (a == 10) - (b == 10)
    p_dealer_bj: Any = Fraction(tens, left) if exact else tens / left
    if {a, b} == {1, 10}:
        # Blackjack pays 3:2; a dealer blackjack pushes it (peeked under an ace, or shown
        # at the end under a ten: sol.mass excludes it in both cases).
        return Fraction(3, 2) * sol.mass[up - 1, s] if exact else 1.5 * sol.mass[up - 1, s]
    value = sol.best[up - 1, s]
    if up == 1:
        value = value - p_dealer_bj  # the peeked blackjack takes the bet (no insurance)
    return value


def insurance_rtp(shoe: tuple[int, ...] = SHOE) -> Fraction:
    """Return per unit of insurance stake: 3 x P(hole ten | ace up, the player's two cards),
    averaged over the player's hands (seed 002: insurance pays 2:1)."""
    rtp = Fraction(0)
    counts = list(shoe)
    counts[0] -= 1
    left = sum(counts) - 2
    for a, b, p in initial_hands(shoe, 1):
        rtp += p * 3 * Fraction(counts[9] - (a == 10) - (b == 10), left)
    return rtp


# -- EV tables and the total-dependent chart -----------------------------------------


@dataclass(frozen=True, slots=True)
class StrategyRow:
    """One chart row: ``kind`` hard / soft / pair, ``total`` (the pair's card value for
    pairs), and per up card the conditional EVs of each action (None: not allowed) and
    the chart's code: S, H, Dh (double, else hit), Ds (double, else stand), P."""

    kind: str
    total: int
    ev: dict[int, dict[Action, float | None]]
    code: dict[int, str]


def _rows_of(a: int, b: int) -> tuple[str, int]:
    hard = a + b
    if 1 in (a, b) and hard + 10 <= 21:
        return "soft", hard + 10
    return "hard", hard


def basic_strategy(game: MainGame, shoe: tuple[int, ...] = SHOE) -> list[StrategyRow]:
    """EV tables by total (two-card hands of that total, weighted by their probability
    and conditioned on the game reaching the decision) and the chart derived from them."""
    sol = game.solution
    sp = sol.space
    groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for a in UPS:
        for b in UPS[a - 1 :]:
            if {a, b} == {1, 10}:
                continue
            if a == b:
                groups.setdefault(("pair", a), []).append((a, b))
            else:
                groups.setdefault(_rows_of(a, b), []).append((a, b))
    for a in UPS:
        # Hard 4, hard 20 and soft 12 are made by pairs only: their row is the pair's
        # unsplit play (split hands need it).
        groups.setdefault(_rows_of(a, a), [(a, a)])
    rows = []
    for kind, total in sorted(groups, key=lambda k: (("hard", "soft", "pair").index(k[0]), k[1])):
        evs: dict[int, dict[Action, float | None]] = {}
        codes: dict[int, str] = {}
        for up in UPS:
            weights = {(a, b): float(p) for a, b, p in initial_hands(shoe, up)}
            acc = dict.fromkeys((Action.STAND, Action.HIT, Action.DOUBLE, Action.SPLIT), 0.0)
            reach = 0.0
            for a, b in groups[(kind, total)]:
                s = sp.index[(_add(_add(_ZERO, a), b), 0)]
                w = weights[(a, b)]
                reach += w * float(sol.reach[up - 1, s])
                acc[Action.STAND] += w * float(sol.stand[up - 1, s])
                acc[Action.HIT] += w * float(sol.hit[up - 1, s])
                acc[Action.DOUBLE] += w * float(sol.double[up - 1, s])
                acc[Action.SPLIT] += w * float(sol.split[up - 1, s]) if kind == "pair" else 0.0
            ev: dict[Action, float | None] = {k: v / reach for k, v in acc.items()}
            hard_17 = kind == "hard" and total >= 17
            if hard_17:
                ev[Action.HIT] = None
            if kind != "pair":
                ev[Action.SPLIT] = None
            a0, b0 = groups[(kind, total)][0]
            if not sp.can_double[sp.index[(_add(_add(_ZERO, a0), b0), 0)]]:
                ev[Action.DOUBLE] = None
            evs[up] = ev
            codes[up] = _code(ev)
        rows.append(StrategyRow(kind, total, evs, codes))
    return rows


def _code(ev: dict[Action, float | None]) -> str:
    options = {k: v for k, v in ev.items() if v is not None}
    top = max(options, key=lambda k: options[k])
    if top is Action.SPLIT:
        return "P"
    hit = ev[Action.HIT]
    hit_beats_stand = hit is not None and hit > (ev[Action.STAND] or -10.0)
    if top is Action.DOUBLE:
        return "Dh" if hit_beats_stand else "Ds"
    return "H" if hit_beats_stand else "S"


def basic_strategy_policy(rows: list[StrategyRow]) -> Policy:
    """The chart as a fixed way of play for :func:`main_game`: two-card main hands play
    their row's code (pairs: split on P, else their hard or soft row); later cards and
    split hands hit or stand as the row's code says without the double."""
    code = {(r.kind, r.total, up): r.code[up] for r in rows for up in UPS}

    def policy(sp: HandSpace, up: int) -> np.ndarray:
        picks = np.zeros(len(sp.cards), dtype=np.int64)
        for s, cards in enumerate(sp.cards):
            n = int(sp.n_cards[s])
            if n == 1:
                picks[s] = ACTIONS.index(Action.HIT)
                continue
            total, soft = int(sp.total[s]), bool(sp.soft[s])
            kind = "soft" if soft else "hard"
            c = code.get((kind, total, up), "S")
            if n == 2 and not sp.pair[s]:
                pair = [i + 1 for i, k in enumerate(cards) if k == 2]
                if pair and code.get(("pair", pair[0], up)) == "P":
                    picks[s] = ACTIONS.index(Action.SPLIT)
                    continue
                if c.startswith("D") and sp.can_double[s]:
                    picks[s] = ACTIONS.index(Action.DOUBLE)
                    continue
            wants_hit = c in ("H", "Dh")
            if wants_hit and sp.can_hit[s]:
                picks[s] = ACTIONS.index(Action.HIT)
            else:
                picks[s] = ACTIONS.index(Action.STAND)
        return picks

    return policy
