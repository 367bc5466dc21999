"""Infinite Blackjack side-bet paytables (seed 002, "Pagamenti"): data with a wire id.

A side bet is one of four :class:`SideBet` kinds; its result is an *outcome name* (wire
format, never renamed) or no outcome (the bet loses). A :class:`SidePaytable` maps each
paying outcome to what it pays "to 1": a winning stake ``s`` returns ``s + s * pays``.
The outcome names, per bet, best first:

- perfect-pairs: ``perfect`` | ``coloured`` | ``mixed``
- 21+3: ``suited-trips`` | ``straight-flush`` | ``trips`` | ``straight`` | ``flush``
- hot-3: ``777`` | ``suited-21`` | ``21`` | ``20`` | ``19``
- bust-it: ``8+`` | ``7`` | ``6`` | ``5`` | ``4`` | ``3`` (cards in the dealer's bust hand)

>>> PAYTABLES["perfect-pairs-25-12-6"].pays["coloured"]
12
>>> DEFAULT_PAYTABLES[SideBet.BUST_IT].id
'bust-it-1-2-9-50-100-250'
>>> DEFAULT_PAYTABLES[SideBet.TWENTY_ONE_PLUS_THREE].payout("straight", 100)
1100
>>> DEFAULT_PAYTABLES[SideBet.HOT_THREE].payout(None, 100)
0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from games.errors import InvalidRules

__all__ = [
    "DEFAULT_PAYTABLES",
    "OUTCOMES",
    "PAYTABLES",
    "SideBet",
    "SidePaytable",
]


class SideBet(StrEnum):
    """The four side bets of seed 002 ("Puntate secondarie"); wire format."""

    PERFECT_PAIRS = "perfect-pairs"
    TWENTY_ONE_PLUS_THREE = "21+3"
    HOT_THREE = "hot-3"
    BUST_IT = "bust-it"


OUTCOMES: Final[Mapping[SideBet, tuple[str, ...]]] = MappingProxyType(
    {
        SideBet.PERFECT_PAIRS: ("perfect", "coloured", "mixed"),
        SideBet.TWENTY_ONE_PLUS_THREE: (
            "suited-trips",
            "straight-flush",
            "trips",
            "straight",
            "flush",
        ),
        SideBet.HOT_THREE: ("777", "suited-21", "21", "20", "19"),
        SideBet.BUST_IT: ("8+", "7", "6", "5", "4", "3"),
    }
)
"""Every paying outcome of each side bet, best first (wire format)."""


@dataclass(frozen=True, slots=True)
class SidePaytable:
    """What each outcome of one side bet pays, "to 1" (seed 002: "25:1" is ``25``).

    Every outcome of :data:`OUTCOMES` for ``bet`` must be present, with a positive int.
    """

    id: str
    bet: SideBet
    pays: Mapping[str, int]

    def __post_init__(self) -> None:
        if not self.id:
            raise InvalidRules("a side paytable needs a non-empty id")
        if not isinstance(self.bet, SideBet):
            raise InvalidRules(f"{self.id}: {self.bet!r} is not a SideBet")
        expected = OUTCOMES[self.bet]
        if set(self.pays) != set(expected):
            raise InvalidRules(
                f"{self.id}: outcomes must be exactly {list(expected)}, got {list(self.pays)}"
            )
        for name, pays in self.pays.items():
            if isinstance(pays, bool) or not isinstance(pays, int) or pays <= 0:
                raise InvalidRules(f"{self.id}: {name!r} must pay a positive int, got {pays!r}")
        ordered = {name: self.pays[name] for name in expected}
        object.__setattr__(self, "pays", MappingProxyType(ordered))

    def __hash__(self) -> int:
        return hash((self.id, self.bet, tuple(self.pays.items())))

    def payout(self, outcome: str | None, stake: int) -> int:
        """Total returned for ``stake`` on ``outcome`` (stake + stake x pays); 0 on
        ``None`` (no paying outcome: the side bet loses)."""
        if outcome is None:
            return 0
        return stake + stake * self.pays[outcome]


# seed 002, "Pagamenti": Coppie Perfette 25:1 / 12:1 / 6:1.
PERFECT_PAIRS_25_12_6: Final = SidePaytable(
    id="perfect-pairs-25-12-6",
    bet=SideBet.PERFECT_PAIRS,
    pays={"perfect": 25, "coloured": 12, "mixed": 6},
)
# seed 002: 21+3 tris perfetto 100:1, scala colore 40:1, tris 30:1, scala 10:1, colore 5:1.
TWENTY_ONE_PLUS_THREE_100_40_30_10_5: Final = SidePaytable(
    id="21+3-100-40-30-10-5",
    bet=SideBet.TWENTY_ONE_PLUS_THREE,
    pays={"suited-trips": 100, "straight-flush": 40, "trips": 30, "straight": 10, "flush": 5},
)
# seed 002: Hot 3 7-7-7 100:1, 21 di un seme 20:1, 21 di semi diversi 4:1, 20 2:1, 19 1:1.
HOT_THREE_100_20_4_2_1: Final = SidePaytable(
    id="hot-3-100-20-4-2-1",
    bet=SideBet.HOT_THREE,
    pays={"777": 100, "suited-21": 20, "21": 4, "20": 2, "19": 1},
)
# seed 002: Sballo con 8+ carte 250:1, 7 100:1, 6 50:1, 5 9:1, 4 2:1, 3 1:1.
BUST_IT_1_2_9_50_100_250: Final = SidePaytable(
    id="bust-it-1-2-9-50-100-250",
    bet=SideBet.BUST_IT,
    pays={"8+": 250, "7": 100, "6": 50, "5": 9, "4": 2, "3": 1},
)

PAYTABLES: Final[Mapping[str, SidePaytable]] = MappingProxyType(
    {
        p.id: p
        for p in (
            PERFECT_PAIRS_25_12_6,
            TWENTY_ONE_PLUS_THREE_100_40_30_10_5,
            HOT_THREE_100_20_4_2_1,
            BUST_IT_1_2_9_50_100_250,
        )
    }
)
"""Every side paytable a table may name, by its wire id."""

DEFAULT_PAYTABLES: Final[Mapping[SideBet, SidePaytable]] = MappingProxyType(
    {
        SideBet.PERFECT_PAIRS: PERFECT_PAIRS_25_12_6,
        SideBet.TWENTY_ONE_PLUS_THREE: TWENTY_ONE_PLUS_THREE_100_40_30_10_5,
        SideBet.HOT_THREE: HOT_THREE_100_20_4_2_1,
        SideBet.BUST_IT: BUST_IT_1_2_9_50_100_250,
    }
)
"""Seed 002's table for each side bet (the only tables seed 002 publishes)."""
