"""The Table aggregate: an operator's Infinite Blackjack table and its configuration.

A table's configuration (currency, limits per bet type, window durations, cut-card rule,
paytables) is an event; the runner copies the configuration into each round it opens, so
a change applies from the next round (the open round keeps the copy it started with). The
runner also records on the table which round and which shoe are current: that pointer is
how a restarted runner finds where it was, and the version of the table is one half of
the fence between two runners (see :mod:`ledger.tables.runner`).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from games.blackjack import Rules, SideBet, TenUpReading
from games.errors import GameRuleError
from ledger import contracts
from ledger.accounts import NAMESPACE
from ledger.money import check_currency
from ledger.tables.errors import InvalidTableConfig

BET_TYPES = ("main", *(b.value for b in SideBet))
"""seed 002: the main bet and the four side bets (wire format)."""

DEFAULT_CONFIG: dict[str, Any] = {
    "limits": {
        "main": [100, 500_000],
        "perfect-pairs": [100, 50_000],
        "21+3": [100, 50_000],
        "hot-3": [100, 50_000],
        "bust-it": [100, 50_000],
    },
    "chip": 100,
    "betting_ms": 15_000,
    "insurance_ms": 8_000,
    "step_ms": 10_000,
    "grace_ms": 500,
    "decks": 8,
    "penetration_permille": [750, 850],
    "ten_up": TenUpReading.ALL_BETS.value,
    "cashout_table_id": "cashout-v1",
    "paytables": {
        "perfect-pairs": "perfect-pairs-25-12-6",
        "21+3": "21+3-100-40-30-10-5",
        "hot-3": "hot-3-100-20-4-2-1",
        "bust-it": "bust-it-1-2-9-50-100-250",
    },
    "settle_batch": 200,
}
"""``grace_ms``: the runner acts that long after a deadline, so a command that read the
clock just before the deadline has committed before the runner reads the seats."""


def table_id_for(table: str) -> UUID:
    return uuid5(NAMESPACE, f"blackjack-table:{table}")


def check_config(config: dict[str, Any]) -> dict[str, Any]:
    """The full configuration (defaults filled in), or :class:`InvalidTableConfig`."""
    if not isinstance(config, dict):
        raise InvalidTableConfig("a table configuration is a JSON object")
    unknown = set(config) - set(DEFAULT_CONFIG)
    if unknown:
        raise InvalidTableConfig(f"unknown table settings {sorted(unknown)}")
    full = {**DEFAULT_CONFIG, **config}
    limits = {**DEFAULT_CONFIG["limits"], **dict(full["limits"])}
    if set(limits) != set(BET_TYPES):
        raise InvalidTableConfig(f"limits are per bet type: {list(BET_TYPES)}")
    for name, pair in limits.items():
        if (
            not isinstance(pair, list | tuple)
            or len(pair) != 2
            or not all(type(x) is int and x > 0 for x in pair)
            or pair[0] > pair[1]
        ):
            raise InvalidTableConfig(f"{name} limits must be [min, max] in minor units, min <= max")
        limits[name] = [int(pair[0]), int(pair[1])]
    full["limits"] = limits
    for name in ("chip", "betting_ms", "insurance_ms", "step_ms", "settle_batch"):
        if type(full[name]) is not int or full[name] <= 0:
            raise InvalidTableConfig(f"{name} must be a positive int")
    if type(full["grace_ms"]) is not int or full["grace_ms"] < 0:
        raise InvalidTableConfig("grace_ms must be an int >= 0")
    full["paytables"] = {**DEFAULT_CONFIG["paytables"], **dict(full["paytables"])}
    full["penetration_permille"] = list(full["penetration_permille"])
    try:
        rules_of(full)
    except (GameRuleError, TypeError, ValueError) as e:
        raise InvalidTableConfig(f"invalid table rules: {e}") from None
    return full


def rules_of(config: dict[str, Any]) -> Rules:
    """The engine's rules for a table configuration. The engine checks one side-bet range;
    the ledger checks each bet type's own limits first, so the engine gets the widest."""
    limits = config["limits"]
    sides = [limits[b.value] for b in SideBet]
    lo, hi = config["penetration_permille"]
    pay = config["paytables"]
    return Rules(
        decks=config["decks"],
        penetration_min_permille=lo,
        penetration_max_permille=hi,
        ten_up=TenUpReading(config["ten_up"]),
        min_bet=limits["main"][0],
        max_bet=limits["main"][1],
        side_min_bet=min(s[0] for s in sides),
        side_max_bet=max(s[1] for s in sides),
        cashout_table_id=config["cashout_table_id"],
        perfect_pairs_paytable=pay["perfect-pairs"],
        twenty_one_plus_three_paytable=pay["21+3"],
        hot_three_paytable=pay["hot-3"],
        bust_it_paytable=pay["bust-it"],
    )


class Table(Aggregate):
    TOPIC = contracts.TABLE

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.TABLE_CREATED

    @staticmethod
    def create_id(table: str) -> UUID:
        return table_id_for(table)

    @event("Opened", topic=contracts.TABLE_OPENED)
    def __init__(self, table: str, currency: str, config: dict[str, Any]) -> None:
        self.table = table
        self.currency = currency
        self.config = dict(config)
        self.rounds = 0
        self.round_id: str | None = None
        self.round_code: str | None = None
        self.shoes = 0
        self.shoe_id: str | None = None

    @staticmethod
    def check_currency(currency: str) -> str:
        return check_currency(currency)

    @event("Configured", topic=contracts.TABLE_CONFIGURED)
    def configured(self, config: dict[str, Any]) -> None:
        self.config = dict(config)

    @event("ShoeStarted", topic=contracts.TABLE_SHOE_STARTED)
    def shoe_started(self, number: int, shoe_id: str) -> None:
        self.shoes = number
        self.shoe_id = shoe_id

    @event("RoundStarted", topic=contracts.TABLE_ROUND_STARTED)
    def round_started(self, number: int, round_id: str, code: str) -> None:
        """The current round. No index of every round's code grows here: a round is found
        by its code through :class:`~ledger.tables.codes.TableRoundCode`."""
        self.rounds = number
        self.round_id = round_id
        self.round_code = code
