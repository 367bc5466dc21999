"""How the cash-out offers are derived from the exact EVs, and their two returns.

**The values offers are built on.** ``V(total, soft, up)``: the expected result of
playing the hand on *by hitting and standing only* (the composition-dependent optimum,
no double, no split), averaged over the two-card hands of that total by their
probability given the up card and the game reaching the decision (after the peek with an
ace up; with a ten up there is no peek, so ``V`` includes the dealer's possible blackjack,
which a cash-out avoids). Why hit/stand: one offer per total must be sound at *every*
decision point, and after the first card drawn doubling and splitting are gone; a table
built on two-card values with the double would offer, e.g., about 1.6 bets on a
three-card 11 against a 6 that is worth 1.33 played on. At the first decision point the
double or split can be worth more than the offer; a player then plays on.

**The offer** is ``round(100 x margin x (1 + V))`` hundredths of the main bet, but never
above the cell's *cap* (:func:`caps`: the worst value of playing on over every main-hand
decision point of that total, however reached, under both ten-up readings) and never above
177 (seed 002). The cap makes the table sound: no offer beats playing on anywhere, so
best selective use returns exactly the optimal return. ``margin`` is the one free
number: the smallest on a grid of 1/1,000,000 at which always cashing out at the first
opportunity returns seed 002's published 96.80 % to its rounding
(:func:`calibrate_margin`). The range then arises by itself: the top is a soft or hard
20 against an 8 (worth 1.79 played on, 177 after the margin), the bottom hard 16 against
a ten with its unpeeked blackjack (0.43 played on, cap 0.42). The cash-out *amount* in
money is rounded down (:meth:`games.blackjack.cashout.CashoutTable.amount`).

**Two returns**, per original main bet: always cashing out at the first opportunity
(:func:`always_cashout_return`; reading-independent, since no double or split is made)
and *best selective use* (:func:`selective_return`): the composition-dependent optimum
with the cash-out as one more action at every decision point where it is offered; it
must not exceed the optimal return without cash-out.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import Any, Final

import numpy as np

from games.blackjack.cashout import ACE, MAX_OFFER, MIN_OFFER, CashoutTable, load_tables
from games.blackjack.math import SHOE, initial_hands, main_game
from games.blackjack.player_ev import UPS, Action, HandSpace, Solution, _add, hand_space, solve

__all__ = [
    "PUBLISHED_ALWAYS",
    "TABLE_ID",
    "always_cashout_return",
    "calibrate_margin",
    "offer_array",
    "selective_return",
    "table_document",
    "table_values",
]

TABLE_ID: Final = "cashout-v1"
PUBLISHED_ALWAYS: Final = Decimal("96.80")
"""seed 002: "La percentuale teorica di vincita se si sceglie sempre l'offerta di
incassare (Csh Out) anticipatamente è — 96,80%"."""
_ZERO: Final = (0,) * 10
_GRID: Final = 1_000_000
Key = tuple[int, bool, int]


def wire_up(up: int) -> int:
    """Internal up value (ace = 1) to the table's (ace = 11)."""
    return ACE if up == 1 else up


def table_values(sol: Solution, shoe: tuple[int, ...] = SHOE) -> dict[Key, float]:
    """``V(total, soft, up)`` from a hit/stand-only solution (see the module doc)."""
    sp = sol.space
    acc: dict[Key, list[float]] = {}
    for up in UPS:
        for a, b, p in initial_hands(shoe, up):
            if {a, b} == {1, 10}:
                continue
            s = sp.index[(_add(_add(_ZERO, a), b), 0)]
            key = (int(sp.total[s]), bool(sp.soft[s]), wire_up(up))
            w = acc.setdefault(key, [0.0, 0.0])
            w[0] += float(p) * float(sol.best[up - 1, s])
            w[1] += float(p) * float(sol.reach[up - 1, s])
    return {k: v / r for k, (v, r) in acc.items()}


def hit_stand_solution(shoe: tuple[int, ...] = SHOE, space: HandSpace | None = None) -> Solution:
    # Stake 1, never doubled or split: both ten-up readings give the same values.
    return solve(shoe, True, space, actions=frozenset({Action.STAND, Action.HIT}))


def caps(solutions: tuple[Solution, ...]) -> dict[Key, int]:
    """The soundness cap per cell: the worst value of playing on, ``1 + EV``, over every
    main-hand decision point of that total (any number of cards, any way of reaching it)
    and both ten-up readings, in hundredths rounded down. An offer at or below it never
    beats playing on, so best selective use gains nothing."""
    out: dict[Key, int] = {}
    sp = solutions[0].space
    points = np.flatnonzero((sp.pair == 0) & (sp.kind == 0) & (sp.n_cards >= 2) & (sp.total < 21))
    for sol in solutions:
        worst = 1 + sol.best[:, points] / sol.reach[:, points]
        for i, s in enumerate(points):
            if sp.n_cards[s] == 2 and sp.total[s] == 21:
                continue
            for up in UPS:
                key = (int(sp.total[s]), bool(sp.soft[s]), wire_up(up))
                cap = int(np.floor(100 * worst[up - 1, i]))
                out[key] = min(out.get(key, cap), cap)
    return out


def offers(values: dict[Key, float], margin: Fraction, cap: dict[Key, int]) -> dict[Key, int]:
    """``min(round(100 x margin x (1 + V)), cap, 177)`` per cell (seed 002: at most 1.77
    times the bet). Rounded to the nearest hundredth (half to even, exactly): rounding
    down instead moves the always-cash-out return in steps that jump over 96.80 % (the
    hard 20 against a ten cell alone is worth 0.028 %); the cap keeps every offer sound."""
    return {
        k: min(round(Fraction(100) * margin * (1 + Fraction(v))), cap[k], MAX_OFFER)
        for k, v in values.items()
    }


def always_cashout_return(
    offers_by_key: dict[Key, int], shoe: tuple[int, ...] = SHOE, space: HandSpace | None = None
) -> Fraction:
    """Return per main bet of cashing out at the first opportunity, exactly given the
    offers: a blackjack is paid 3:2 (or pushes a dealer blackjack); with an ace up a
    peeked dealer blackjack takes the bet; every other hand takes its offer."""
    total_cards = sum(shoe)
    rtp = Fraction(0)
    for up in UPS:
        counts = list(shoe)
        counts[up - 1] -= 1
        left = sum(counts) - 2
        for a, b, p in initial_hands(shoe, up):
            tens = counts[9] - (a == 10) - (b == 10)
            aces = counts[0] - (a == 1) - (b == 1)
            dealer_bj = Fraction(tens, left) if up == 1 else Fraction(aces, left) if up == 10 else 0
            if {a, b} == {1, 10}:
                value = 1 + Fraction(3, 2) * (1 - dealer_bj)
            else:
                hard = a + b
                soft = 1 in (a, b) and hard + 10 <= 21
                key = (hard + 10 if soft else hard, soft, wire_up(up))
                offer = Fraction(offers_by_key[key], 100)
                value = offer * (1 - dealer_bj) if up == 1 else offer
            rtp += Fraction(shoe[up - 1], total_cards) * p * value
    return rtp


def _as_percent(x: Fraction) -> Decimal:
    return (Decimal(x.numerator) / Decimal(x.denominator) * 100).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_EVEN
    )


def calibrate_margin(
    values: dict[Key, float], cap: dict[Key, int], shoe: tuple[int, ...] = SHOE
) -> Fraction:
    """The smallest margin on a 1/1,000,000 grid whose always-cash-out return rounds to
    :data:`PUBLISHED_ALWAYS` (the return grows with the margin: bisection)."""
    low, high = 0, _GRID
    while low < high:
        mid = (low + high) // 2
        r = always_cashout_return(offers(values, Fraction(mid, _GRID), cap), shoe)
        if _as_percent(r) < PUBLISHED_ALWAYS:
            low = mid + 1
        else:
            high = mid
    margin = Fraction(low, _GRID)
    reached = _as_percent(always_cashout_return(offers(values, margin, cap), shoe))
    if reached != PUBLISHED_ALWAYS:
        raise ValueError(f"no margin reproduces {PUBLISHED_ALWAYS} % (closest {reached} %)")
    return margin


def table_document(shoe: tuple[int, ...] = SHOE) -> str:
    """The JSON text of ``cashout_tables.json``, derived from the exact maths. Regenerate:
    ``.venv/bin/python -c "from games.blackjack.cashout_math import table_document as t;
    print(t(), end='')" > games/blackjack/cashout_tables.json``."""
    sp = hand_space()
    values = table_values(hit_stand_solution(shoe, sp), shoe)
    cap = caps((solve(shoe, True, sp), solve(shoe, False, sp)))
    margin = calibrate_margin(values, cap, shoe)
    by_key = offers(values, margin, cap)
    lo, hi = min(by_key.values()), max(by_key.values())
    if lo < MIN_OFFER or hi > MAX_OFFER:
        raise ValueError(f"offers {lo}..{hi} leave seed 002's 40..177")
    doc: dict[str, Any] = {
        "tables": [
            {
                "id": TABLE_ID,
                "margin": str(margin),
                "basis": (
                    "min(round(100 x margin x (1 + V)), cap, 177); V = hit/stand-only"
                    " composition-dependent EV of the two-card hands of that total vs the up"
                    " card (8 decks, fresh shoe, S17, six card charlie; ace up: after the"
                    " peek; ten up: no peek); cap = floor(100 x (1 + the worst EV of playing"
                    " on)) over every main-hand decision point of that total, both readings"
                ),
                "offers": {
                    kind: {
                        str(t): {
                            str(u): by_key[(t, kind == "soft", u)]
                            for u in range(2, 12)
                            if (t, kind == "soft", u) in by_key
                        }
                        for t in sorted({k[0] for k in by_key if k[1] == (kind == "soft")})
                    }
                    for kind in ("hard", "soft")
                },
            }
        ]
    }
    return json.dumps(doc, indent=1) + "\n"


def offer_array(table: CashoutTable, space: HandSpace) -> np.ndarray:
    """(10 up cards, states) offers in bets, NaN where none is made: main hands only,
    live, total below 21 (never after a double: a double ends the hand)."""
    out = np.full((10, len(space.cards)), np.nan)
    for s in range(len(space.cards)):
        if space.pair[s] or space.kind[s] != 0 or space.n_cards[s] < 2:
            continue
        for up in UPS:
            o = table.offer(int(space.total[s]), bool(space.soft[s]), wire_up(up))
            if o is not None:
                out[up - 1, s] = o / 100
    return out


def selective_return(table: CashoutTable, all_bets: bool, space: HandSpace | None = None) -> float:
    """Best selective use: cash out exactly where the offer beats playing on."""
    sp = space or hand_space()
    return float(main_game(all_bets, space=sp, cashout=offer_array(table, sp)).rtp)


def published_table() -> CashoutTable:
    return load_tables()[TABLE_ID]
