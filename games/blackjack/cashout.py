"""Cash-out ("Incassare", seed 002) offer tables: published data, looked up by the engine.

An offer is what the main hand returns if the player ends it now, in *hundredths of the
main bet* (seed 002: "Incassare paga 0,4-1,77 volte la puntata"), by the hand's total,
whether it is soft, and the dealer's up card (2..10, 11 for an ace). It is offered at
every decision point of the unsplit, undoubled main hand whose total is below 21, after
the peek when an ace is up; never after a double, a bust, on 21 or on a blackjack (seed
002). :meth:`CashoutTable.offer` answers ``None`` where no offer exists.

The tables live in ``cashout_tables.json`` next to this module and are derived from the
exact maths by :func:`games.blackjack.cashout_math.table_document` (the derivation, the
values they are built on and the margin are documented there and in docs/games/blackjack.md);
a certification test regenerates the file and compares.

>>> table = CASHOUT_TABLES["cashout-v1"]
>>> table.offer(20, False, 7) is not None and 40 <= table.offer(20, False, 7) <= 177
True
>>> table.offer(21, True, 7) is None
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from types import MappingProxyType
from typing import Any, Final

from games.errors import GameRuleError, InvalidRules

__all__ = [
    "CASHOUT_TABLES",
    "DATA_FILE",
    "MAX_OFFER",
    "MIN_OFFER",
    "CashoutQueryError",
    "CashoutTable",
    "cashout_table",
    "load_tables",
]

DATA_FILE: Final = "cashout_tables.json"
MIN_OFFER: Final = 40
MAX_OFFER: Final = 177
"""seed 002: 0.40 to 1.77 times the main bet, in hundredths."""
ACE: Final = 11


class CashoutQueryError(GameRuleError):
    """An offer was asked for a hand or an up card that cannot exist."""


@dataclass(frozen=True, slots=True)
class CashoutTable:
    """One published offer table. ``offers[(total, soft, up)]`` in hundredths of the bet."""

    id: str
    margin: Fraction
    """The share of the hand's value the offer pays (before rounding down)."""
    basis: str
    offers: Mapping[tuple[int, bool, int], int]

    def __post_init__(self) -> None:
        if not self.id:
            raise InvalidRules("a cash-out table needs an id")
        for key, value in self.offers.items():
            if not MIN_OFFER <= value <= MAX_OFFER:
                raise InvalidRules(f"{self.id}: offer {value} at {key} outside 40..177")

    def offer(self, total: int, soft: bool, up: int) -> int | None:
        """The offer in hundredths of the main bet, or None where none is made (a total of
        21 or more). ``up``: the dealer's up card value, 2..10, 11 for an ace."""
        if isinstance(up, bool) or not isinstance(up, int) or not 2 <= up <= ACE:
            raise CashoutQueryError(f"up card must be 2..11 (11 = ace), got {up!r}")
        if isinstance(total, bool) or not isinstance(total, int) or total < 2:
            raise CashoutQueryError(f"a hand total is an int of at least 2, got {total!r}")
        if soft and total < 12:
            raise CashoutQueryError(f"a soft total is 12 or more, got soft {total}")
        return self.offers.get((total, bool(soft), up))

    def amount(self, total: int, soft: bool, up: int, bet: int) -> int | None:
        """The cash-out amount for a main bet of ``bet`` minor units, rounded down."""
        offer = self.offer(total, soft, up)
        return None if offer is None else bet * offer // 100


def _table(doc: Mapping[str, Any]) -> CashoutTable:
    offers: dict[tuple[int, bool, int], int] = {}
    for kind in ("hard", "soft"):
        for total, row in doc["offers"][kind].items():
            for up, value in row.items():
                offers[(int(total), kind == "soft", int(up))] = int(value)
    return CashoutTable(
        id=str(doc["id"]),
        margin=Fraction(doc["margin"]),
        basis=str(doc["basis"]),
        offers=MappingProxyType(offers),
    )


def load_tables(text: str | None = None) -> dict[str, CashoutTable]:
    """Parse the published tables (``text``, else this package's data file)."""
    if text is None:
        text = resources.files("games.blackjack").joinpath(DATA_FILE).read_text("utf-8")
    doc = json.loads(text)
    return {t["id"]: _table(t) for t in doc["tables"]}


CASHOUT_TABLES: Final[Mapping[str, CashoutTable]] = MappingProxyType(load_tables())
"""Every published cash-out table, by id (``cashout-v1`` is seed 002's default)."""


def cashout_table(table_id: str) -> CashoutTable:
    """The table with this id, or :class:`InvalidRules`."""
    table = CASHOUT_TABLES.get(table_id)
    if table is None:
        raise InvalidRules(f"unknown cash-out table {table_id!r}")
    return table
