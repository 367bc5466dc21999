"""Infinite Blackjack through the engine (games.blackjack) from a fixed master seed:
observed returns inside their confidence intervals around the exact figures.

Every round is the first round of a fresh shoe (seed 002's figures are "sulla base della
prima mano nel sabot"), shoe ``i`` seeded ``SHA-256(master || i)``, at a ten-up
``all-bets`` table (the reading whose maths is exact). Two seats share each round's cards
as the shared table deals them: one plays the basic-strategy chart derived by
games.blackjack.math with every side bet, one cashes out at the first opportunity.
Intervals: 99.9 % normal intervals with the exact variance for the side bets and the
sample variance for the main bet and the cash-out (no closed form computed here).
"""

from __future__ import annotations

import hashlib
from fractions import Fraction
from math import sqrt

import pytest

from games.blackjack import (
    DecisionKind,
    Hand,
    Rules,
    SideBet,
    TenUpReading,
    close_insurance,
    close_step,
    deal,
    decide,
    open_round,
    options,
    place_bets,
    play_dealer,
    settle_seats,
    shoe_from_seed,
)
from games.blackjack.cashout import CASHOUT_TABLES
from games.blackjack.cashout_math import always_cashout_return
from games.blackjack.hand import hard_value
from games.blackjack.math import basic_strategy, basic_strategy_policy, main_game
from games.blackjack.paytables import DEFAULT_PAYTABLES
from games.blackjack.player_ev import hand_space
from games.blackjack.shared import Phase
from games.blackjack.side_math import side_bets

pytestmark = pytest.mark.slow

MASTER = b"croupier/blackjack-simulation/v1"
ROUNDS = 20_000
BET = 100
Z = 3.2905  # 99.9 %
RULES = Rules(ten_up=TenUpReading.ALL_BETS, min_bet=BET, side_min_bet=BET)
K = DecisionKind


def chart_codes() -> dict[tuple[str, int, int], str]:
    game = main_game(True, space=hand_space())
    return {(r.kind, r.total, up): r.code[up] for r in basic_strategy(game) for up in r.code}


def basic_decision(
    hand: Hand, offered: set[DecisionKind], up: int, chart: dict[tuple[str, int, int], str]
) -> DecisionKind:
    """The chart, as games.blackjack.math.basic_strategy_policy plays it."""
    values = [hard_value(c) for c in hand.cards]
    if len(values) == 2 and K.SPLIT in offered and chart[("pair", values[0], up)] == "P":
        return K.SPLIT
    code = chart.get(("soft" if hand.soft else "hard", hand.total, up), "S")
    if code.startswith("D") and K.DOUBLE in offered:
        return K.DOUBLE
    return K.HIT if code in ("H", "Dh") and K.HIT in offered else K.STAND


def play(chart: dict[tuple[str, int, int], str]) -> dict[str, list[float]]:
    """Per-round returns (returned / staked) for each measure."""
    table = CASHOUT_TABLES[RULES.cashout_table_id]
    sides = {bet.value: BET for bet in SideBet}
    out: dict[str, list[float]] = {"main": [], "cash-out": [], **{b.value: [] for b in SideBet}}
    for i in range(ROUNDS):
        shoe = shoe_from_seed(RULES, hashlib.sha256(MASTER + i.to_bytes(8, "big")).digest())
        shared = open_round(RULES, 0, table)
        seats = [place_bets(shared, "basic", BET, sides), place_bets(shared, "cash", BET)]
        shared, seats = deal(shared, seats, shoe)
        if shared.phase is Phase.INSURANCE:  # no answer: no insurance
            shared, seats, _ = close_insurance(shared, seats, shoe)
        up = 1 if shared.up_value == 11 else shared.up_value
        while shared.phase is Phase.STEP:
            for n, seat in enumerate(seats):
                offered = {o.kind for o in options(shared, seat)}
                if not offered:
                    continue
                if seat.seat_id == "cash" and K.CASH_OUT in offered:
                    seats[n] = decide(shared, seat, K.CASH_OUT.value)
                    continue
                kind = basic_decision(seat.hands[seat.active], offered, up, chart)
                seats[n] = decide(shared, seat, kind.value)
            shared, seats, _ = close_step(shared, seats, shoe)
        if shared.phase is Phase.DEALER:
            shared = play_dealer(shared, shoe)
        basic, cash = settle_seats(shared, seats)
        main_paid = sum(h.payout for h in basic.hands)
        out["main"].append(main_paid / BET)  # per original bet (the measure of the maths)
        out["cash-out"].append(sum(h.payout for h in cash.hands) / BET)
        for side in basic.sides:
            out[side.bet.value].append(side.payout / side.stake)
        # per original bet: returned - (extra stakes of doubles and splits)
        extra = sum(h.stake for h in basic.hands) - BET
        out["main"][-1] -= extra / BET
    return out


def interval(values: list[float], sd: float | None = None) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    if sd is None:
        sd = sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, Z * sd / sqrt(n)


def test_engine_returns_lie_inside_their_intervals_around_the_exact_figures() -> None:
    chart = chart_codes()
    observed = play(chart)
    rows = basic_strategy(main_game(True, space=hand_space()))
    exact_basic = main_game(True, space=hand_space(), policy=basic_strategy_policy(rows)).rtp
    mean, half = interval(observed["main"])
    assert abs(mean - exact_basic) <= half, (mean, exact_basic, half)
    exact_cash = float(always_cashout_return(dict(CASHOUT_TABLES["cashout-v1"].offers)))
    mean, half = interval(observed["cash-out"])
    assert abs(mean - exact_cash) <= half, (mean, exact_cash, half)
    for bet, figures in side_bets().items():
        pays = DEFAULT_PAYTABLES[bet].pays
        second = sum(
            (
                p * (1 if k == "push" else (1 + pays[k])) ** 2
                for k, p in figures.probabilities.items()
            ),
            Fraction(0),
        )
        sd = sqrt(float(second - figures.rtp**2))
        mean, half = interval(observed[bet.value], sd)
        assert abs(mean - float(figures.rtp)) <= half, (bet, mean, float(figures.rtp), half)
