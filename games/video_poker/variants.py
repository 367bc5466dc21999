"""The Jacks or Better variants a round can be played under: bet options, holds, double-up.

A variant is configuration, not state: it names the paytable, the allowed line counts and
coin values, which hold the game proposes after the deal, and the double-up limit. A round
records the variant id and ``rules_version`` so replay uses the rules it was played under.
Operators adjust coin values or the limit with ``dataclasses.replace`` (then bump
``rules_version``).

>>> VARIANTS["jb-4line"].lines
(4,)
>>> JB_MULTI.hold_policy
<HoldPolicy.OPTIMAL: 'optimal'>
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from games.errors import InvalidRules
from games.video_poker.paytable import MAX_COINS, PAYTABLES, Paytable

MIN_COINS: Final = 1
"""Coins per line run ``MIN_COINS..MAX_COINS`` (seed 000: "Una Puntata" adds one fiche,
"Puntata Massima" sets five)."""

__all__ = [
    "JB_4LINE",
    "JB_MULTI",
    "MAX_COINS",
    "MIN_COINS",
    "VARIANTS",
    "HoldPolicy",
    "Variant",
    "variant_for",
]


class HoldPolicy(StrEnum):
    """Which holds the game proposes after the deal (wire format: never renamed)."""

    WINNING_CARDS = "winning-cards"
    """Seed 000: "propone automaticamente di tenere le carte ... che permettono di
    realizzare una mano vincente" (hold the cards already forming a winning hand)."""

    OPTIMAL = "optimal"
    """Seed 004: "Автомат настроит рекомендуемую блокировку карт" (the machine sets the
    recommended hold); we recommend the hold with the highest expected return."""


@dataclass(frozen=True, slots=True)
class Variant:
    """One playable configuration of Jacks or Better. Amounts are int minor units."""

    id: str
    paytable_id: str
    lines: tuple[int, ...]
    """Line (hand) counts the player may choose; a single value means lines are fixed."""
    coin_values: tuple[int, ...]
    """Allowed coin (fiche) values in minor units, ascending."""
    hold_policy: HoldPolicy
    double_up_limit: int
    """Double-up is offered only while the current win is at most this amount (seed 000:
    "solo se l'importo della vincita non eccede il limite di Raddoppio"); 0 disables it."""
    rules_version: str
    collect_without_double_up: bool = False
    """Whether a win with no double-up on offer still waits for "collect". Only the
    retired ``jb-multi`` rules version 1 did; since version 2 the draw settles it."""

    @property
    def win_waits(self) -> bool:
        """A win waits in ``win-pending`` for the player's choice: collect, or double-up
        when it is on offer (seed 000's "Incassa / Raddoppio / Mezzo Raddoppio")."""
        return self.double_up_enabled or self.collect_without_double_up

    def __post_init__(self) -> None:
        if not self.id or not self.rules_version:
            raise InvalidRules("a variant needs a non-empty id and rules_version")
        if self.paytable_id not in PAYTABLES:
            raise InvalidRules(f"{self.id}: unknown paytable {self.paytable_id!r}")
        for what, values in (("lines", self.lines), ("coin_values", self.coin_values)):
            if not values or any(_not_positive_int(v) for v in values):
                raise InvalidRules(f"{self.id}: {what} must be positive ints, got {values!r}")
            if list(values) != sorted(set(values)):
                raise InvalidRules(f"{self.id}: {what} must be ascending, no repeats")
        if _not_int(self.double_up_limit) or self.double_up_limit < 0:
            raise InvalidRules(
                f"{self.id}: double_up_limit must be an int >= 0, got {self.double_up_limit!r}"
            )

    @property
    def paytable(self) -> Paytable:
        return PAYTABLES[self.paytable_id]

    @property
    def double_up_enabled(self) -> bool:
        return self.double_up_limit > 0


def _not_int(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def _not_positive_int(value: object) -> bool:
    return _not_int(value) or not isinstance(value, int) or value <= 0


# Seed 004 lists the fiche values 0,10 / 0,20 / 0,50 / 1 / 2 / 5; seed 000 lets the player
# pick the value with + / - without listing them, so both variants default to seed 004's.
_COIN_VALUES: Final = (10, 20, 50, 100, 200, 500)

JB_4LINE: Final = Variant(
    id="jb-4line",
    paytable_id="jb-9-6-v1",
    # Seed 000: "Poiché il gioco prevede 4 linee, l'ammontare totale ... puntata X 4".
    lines=(4,),
    coin_values=_COIN_VALUES,
    hold_policy=HoldPolicy.WINNING_CARDS,
    # Seed 000 shows the limit on the paytable page without giving a figure: operator
    # setting, 1,000.00 in minor units by default.
    double_up_limit=100_000,
    rules_version="1",
)

JB_MULTI: Final = Variant(
    id="jb-multi",
    paytable_id="jb-9-6-v1",
    # Seed 004: the player chooses the number of columns (hands); the set is configurable.
    lines=(1, 3, 5, 10, 25, 50, 100),
    coin_values=_COIN_VALUES,
    hold_policy=HoldPolicy.OPTIMAL,
    # Seed 004 describes no double-up (gamble) feature, so it is off by default; an operator
    # may enable it by setting a limit.
    double_up_limit=0,
    # Version 2: with nothing to choose after a win, the draw settles it (version 1 waited
    # for a "collect" the player could not refuse).
    rules_version="2",
)

VARIANTS: Final[MappingProxyType[str, Variant]] = MappingProxyType(
    {v.id: v for v in (JB_4LINE, JB_MULTI)}
)
"""Every variant a round may name, by its wire id."""

RETIRED: Final[MappingProxyType[tuple[str, str], Variant]] = MappingProxyType(
    {
        ("jb-multi", "1"): replace(JB_MULTI, rules_version="1", collect_without_double_up=True),
    }
)
"""Earlier rules versions, by (id, rules_version): rounds recorded under them replay so."""


def variant_for(variant_id: str, rules_version: str | None = None) -> Variant | None:
    """The variant ``variant_id`` as of ``rules_version`` (None: the current one)."""
    current = VARIANTS.get(variant_id)
    if current is None or rules_version is None or rules_version == current.rules_version:
        return current
    return RETIRED.get((variant_id, rules_version))
