"""Infinite Blackjack's certification table: every certified figure beside seed 002's.

:func:`certification` computes, for a fresh 8-deck shoe, everything the certified-maths
table needs: the main game's optimal return under both ten-up readings (and under the
rule variant that explains the published figure), the basic-strategy chart and its own
exact return, insurance, the four side bets, the cash-out table and its two returns.
:func:`certification_rows` flattens it into rows for ``audit-cli rtp --theoretical``
(field names follow ``audit_cli.rtp.TheoryRow``: an integrator maps them one to one).

Main-game figures are IEEE doubles from the vectorised exact recursion (no sampling; the
rounding error is below 1e-12, checked against exact fractions on small shoes); side bets,
insurance and always-cash-out are exact fractions (``exact`` says which).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import Final

from games.blackjack import cashout_math
from games.blackjack.cashout import CashoutTable
from games.blackjack.math import (
    MainGame,
    StrategyRow,
    basic_strategy,
    basic_strategy_policy,
    insurance_rtp,
    main_game,
)
from games.blackjack.paytables import DEFAULT_PAYTABLES, SideBet
from games.blackjack.player_ev import hand_space
from games.blackjack.rules import TenUpReading
from games.blackjack.side_math import SideBetFigures, side_bets

__all__ = [
    "PUBLISHED",
    "Certification",
    "CertificationRow",
    "certification",
    "certification_rows",
]

PUBLISHED: Final = {
    "main": "99.47",
    SideBet.PERFECT_PAIRS.value: "95.90",
    SideBet.TWENTY_ONE_PLUS_THREE.value: "96.30",
    SideBet.HOT_THREE.value: "94.60",
    SideBet.BUST_IT.value: "94.12",
    "cashout-always": "96.80",
}
"""seed 002, "Vincita del giocatore" (main game "Sulla base della prima mano nel sabot")."""
MATCHES: Final = "matches"


@dataclass(frozen=True, slots=True)
class CertificationRow:
    """One row of the certified table. ``rtp`` per unit of original bet (side bets: per
    unit staked); ``exact``: ``rtp`` is the exact rational (else the double it rounds)."""

    game: str
    variant: str
    paytable_id: str
    play: str
    coins: str
    rtp: Fraction
    exact: bool
    published: str | None
    source: str
    agreement: str
    max_paid_per_bet: Fraction
    hit_frequency: Fraction | None
    note: str


@dataclass(frozen=True, slots=True)
class Certification:
    """Everything computed once; the rows, the chart and the offer table derive from it."""

    optimal: dict[TenUpReading, MainGame]
    basic: dict[TenUpReading, MainGame]
    charts: dict[TenUpReading, list[StrategyRow]]
    hit_hard_17: dict[TenUpReading, MainGame]
    insurance: Fraction
    sides: dict[SideBet, SideBetFigures]
    cashout_table: CashoutTable
    cashout_always: Fraction
    cashout_selective: dict[TenUpReading, float]


def certification() -> Certification:
    """Compute the whole table (about a few seconds on a loaded 2-core machine)."""
    sp = hand_space()
    optimal, basic, charts, hit17 = {}, {}, {}, {}
    lifted = hand_space(hit_hard_17=True)
    for reading in TenUpReading:
        all_bets = reading is TenUpReading.ALL_BETS
        optimal[reading] = main_game(all_bets, space=sp)
        charts[reading] = basic_strategy(optimal[reading])
        basic[reading] = main_game(
            all_bets, space=sp, policy=basic_strategy_policy(charts[reading])
        )
        hit17[reading] = main_game(all_bets, space=lifted)
    table = cashout_math.published_table()
    return Certification(
        optimal=optimal,
        basic=basic,
        charts=charts,
        hit_hard_17=hit17,
        insurance=insurance_rtp(),
        sides=dict(side_bets()),
        cashout_table=table,
        cashout_always=cashout_math.always_cashout_return(dict(table.offers)),
        cashout_selective={
            r: cashout_math.selective_return(table, r is TenUpReading.ALL_BETS, sp)
            for r in TenUpReading
        },
    )


def as_percent(value: Fraction | float, places: int = 4) -> Decimal:
    v = value if isinstance(value, Fraction) else Fraction(value)
    return (Decimal(v.numerator) / Decimal(v.denominator) * 100).quantize(
        Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN
    )


def agreement(rtp: Fraction, published: str | None) -> str:
    """``matches`` when the figure rounds to the published one, else ``DIFFERS: x %``."""
    if published is None:
        return "not published"
    places = -int(Decimal(published).as_tuple().exponent)
    ours = str(as_percent(rtp, places))
    return MATCHES if ours == published else f"DIFFERS: {ours} %"


def certification_rows(cert: Certification | None = None) -> list[CertificationRow]:
    """The rows for ``audit-cli rtp --theoretical`` (game ``blackjack``, variant
    ``infinite``)."""
    c = cert or certification()
    rows: list[CertificationRow] = []
    main_max = Fraction(4)  # a split (or a double) won: 2 staked, 4 back per original bet
    for reading in (TenUpReading.ALL_BETS, TenUpReading.ORIGINAL_ONLY):
        for play, game, note in (
            ("optimal", c.optimal[reading], "composition-dependent, fresh 8-deck shoe"),
            ("basic strategy", c.basic[reading], "the total-dependent chart derived here"),
            (
                "optimal, hit hard 17+",
                c.hit_hard_17[reading],
                "NOT seed 002's rules: hitting hard 17+ allowed (explains the published 99.47)",
            ),
        ):
            rtp = Fraction(float(game.rtp))
            published = PUBLISHED["main"] if play == "optimal" else None
            rows.append(
                CertificationRow(
                    "blackjack",
                    "infinite",
                    f"main, ten-up {reading.value}",
                    play,
                    "-",
                    rtp,
                    False,
                    published,
                    'seed 002, "Blackjack - 99,47%*"' if published else "",
                    agreement(rtp, published),
                    main_max,
                    None,
                    note,
                )
            )
    rows.append(
        CertificationRow(
            "blackjack",
            "infinite",
            "insurance-2:1",
            "insurance, per unit insured",
            "-",
            c.insurance,
            True,
            None,
            "",
            "not published",
            Fraction(3),
            None,
            "never taken in the main figures",
        )
    )
    for bet, figures in c.sides.items():
        paytable = DEFAULT_PAYTABLES[bet]
        hits = sum((p for k, p in figures.probabilities.items() if k != "push"), Fraction(0))
        rtp = figures.rtp
        rows.append(
            CertificationRow(
                "blackjack",
                "infinite",
                paytable.id,
                f"side bet {bet.value}",
                "-",
                rtp,
                True,
                PUBLISHED[bet.value],
                "seed 002",
                agreement(rtp, PUBLISHED[bet.value]),
                Fraction(1 + max(paytable.pays.values())),
                hits,
                "per unit staked",
            )
        )
    table = c.cashout_table
    rows.append(
        CertificationRow(
            "blackjack",
            "infinite",
            table.id,
            "always cash out at the first opportunity",
            "-",
            c.cashout_always,
            True,
            PUBLISHED["cashout-always"],
            'seed 002, "sempre l\'offerta di incassare"',
            agreement(c.cashout_always, PUBLISHED["cashout-always"]),
            Fraction(max(table.offers.values()), 100),
            None,
            "reading-independent (no double, no split)",
        )
    )
    for reading, value in c.cashout_selective.items():
        rows.append(
            CertificationRow(
                "blackjack",
                "infinite",
                table.id,
                f"best selective cash-out, ten-up {reading.value}",
                "-",
                Fraction(value),
                False,
                None,
                "",
                "not published",
                main_max,
                None,
                "equals the optimal return: no offer beats playing on",
            )
        )
    return rows
