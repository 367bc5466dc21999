"""Video poker paytables: what each final hand pays per line for 1..5 coins.

Amounts are multipliers of the coin value (total paid per line, stake included in the
sense of seed 000's table: a royal flush with 5 coins of 0.10 pays 4000 x 0.10).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from games.poker import HAND_RANKS, PAYING_RANKS, HandRank

MAX_COINS = 5
"""Coins per line run 1..5 (seed 000: "Bet max" sets five coins)."""

Column = tuple[int, int, int, int, int]


class InvalidPaytable(ValueError):
    """Raised for a paytable that misses a paying hand or has a malformed amount."""


@dataclass(frozen=True)
class Paytable:
    """Total paid per line, as a multiplier of the coin value, for 1..5 coins.

    ``NOTHING`` may be omitted (it pays 0); every other hand must be present.

    >>> JACKS_OR_BETTER_9_6.payout(HandRank.ROYAL_FLUSH, 5)
    4000
    >>> JACKS_OR_BETTER_9_6.payout(HandRank.NOTHING, 3)
    0
    >>> JACKS_OR_BETTER_9_6.column(1)[HandRank.FULL_HOUSE]
    9
    """

    id: str
    pays: Mapping[HandRank, Column]

    def __post_init__(self) -> None:
        if not self.id:
            raise InvalidPaytable("a paytable needs a non-empty id")
        pays: dict[HandRank, Column] = {}
        for rank, amounts in self.pays.items():
            if not isinstance(rank, HandRank):
                raise InvalidPaytable(f"{self.id}: {rank!r} is not a HandRank")
            column = tuple(amounts)
            if len(column) != MAX_COINS:
                raise InvalidPaytable(
                    f"{self.id}: {rank} needs {MAX_COINS} amounts (1..5 coins), got {column}"
                )
            for amount in column:
                if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
                    raise InvalidPaytable(
                        f"{self.id}: {rank} amounts must be non-negative ints, got {amount!r}"
                    )
            if rank is HandRank.NOTHING and any(column):
                raise InvalidPaytable(f"{self.id}: a losing hand cannot pay, got {column}")
            pays[rank] = (column[0], column[1], column[2], column[3], column[4])
        missing = [r.value for r in PAYING_RANKS if r not in pays]
        if missing:
            raise InvalidPaytable(f"{self.id}: missing paying hands {missing}")
        pays.setdefault(HandRank.NOTHING, (0, 0, 0, 0, 0))
        ordered = {r: pays[r] for r in HAND_RANKS}
        object.__setattr__(self, "pays", MappingProxyType(ordered))

    def __hash__(self) -> int:
        return hash((self.id, tuple(self.pays.items())))

    def payout(self, rank: HandRank, coins: int) -> int:
        """What ``rank`` pays on one line played with ``coins`` coins (x coin value)."""
        return self.pays[rank][_coin_index(coins)]

    def column(self, coins: int) -> dict[HandRank, int]:
        """Every hand's payout for ``coins`` coins, lowest hand first (nothing included)."""
        i = _coin_index(coins)
        return {rank: amounts[i] for rank, amounts in self.pays.items()}

    def max_payout(self, coins: int) -> int:
        """The largest payout of one line for ``coins`` coins."""
        return max(self.column(coins).values())


def _coin_index(coins: int) -> int:
    if isinstance(coins, bool) or not isinstance(coins, int) or not 1 <= coins <= MAX_COINS:
        raise ValueError(f"coins per line must be 1..{MAX_COINS}, got {coins!r}")
    return coins - 1


# Seed 000, "Tabella dei pagamenti" (1..5 fiche); the same table is DESIGN.md section 5.1.
JACKS_OR_BETTER_9_6 = Paytable(
    id="jb-9-6-v1",
    pays={
        HandRank.ROYAL_FLUSH: (250, 500, 750, 1000, 4000),
        HandRank.STRAIGHT_FLUSH: (50, 100, 150, 200, 250),
        HandRank.FOUR_OF_A_KIND: (25, 50, 75, 100, 125),
        HandRank.FULL_HOUSE: (9, 18, 27, 36, 45),
        HandRank.FLUSH: (6, 12, 18, 24, 30),
        HandRank.STRAIGHT: (4, 8, 12, 16, 20),
        HandRank.THREE_OF_A_KIND: (3, 6, 9, 12, 15),
        HandRank.TWO_PAIR: (2, 4, 6, 8, 10),
        HandRank.JACKS_OR_BETTER: (1, 2, 3, 4, 5),
    },
)

PAYTABLES: dict[str, Paytable] = {p.id: p for p in (JACKS_OR_BETTER_9_6,)}
"""Every paytable a round may name, by its wire id."""
