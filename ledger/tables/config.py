"""A table's configuration: :class:`TableConfig`, a frozen value read by attribute.

The operator's settings (limits per bet type, the chip, window durations, decks and the
cut card's penetration, seed 002's ten-up reading, the cash-out and side-bet paytables,
the settlement batch) are checked once, when they are recorded (:meth:`TableConfig.check`),
with the defaults filled in. The log keeps their wire form (:meth:`TableConfig.wire`, a
JSON object, in the ``Opened`` and ``Configured`` events of the table and in each round it
opens): its keys are persisted format and never renamed; a key added later has a default,
which is what a configuration recorded before it reads as (:meth:`TableConfig.of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from games.blackjack import Rules, SideBet, TenUpReading
from games.errors import GameRuleError
from ledger.tables.errors import InvalidTableConfig

BET_TYPES = ("main", *(b.value for b in SideBet))
"""seed 002: the main bet and the four side bets (wire format)."""

ROUND_CARDS_MAX = 24
"""The most cards one round can take: the four of the deal; at most 10 step cards (a
seat draws at most one card a step, splits once, and each of its two hands stops at six
cards, Six Card Charlie: 5 draws each); at most 10 dealer draws (standing on any 17, the
longest dealer hand is 12 cards, e.g. six aces, a six, four aces and a last card).
seed 002's round that takes the cut card finishes, so a shoe needs this many cards after
its latest cut: eight decks leave 63 at 85 %; one deck at the default penetration would
leave 8, and a round could run out of cards."""

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
    "settle_batch": 1_000,
}
"""The wire form of the default configuration (and the order of its keys)."""
RECORDED_SETTLE_BATCH = 200
"""The batch of a configuration recorded without ``settle_batch`` (its default then; a
round settling across an upgrade keeps its batches, whose request ids name them)."""


@dataclass(frozen=True, kw_only=True)
class TableConfig:
    """A table's (or one round's) configuration. Money in minor units, times in ms.

    ``grace_ms``: the runner acts that long after a deadline, so a command that read the
    clock just before the deadline has committed before the runner reads the seats."""

    limits: Mapping[str, tuple[int, int]]
    """[min, max] of each bet type's running total on a seat."""
    chip: int
    """The chip ALL SIDE BETS places (at least each side bet's minimum)."""
    betting_ms: int
    insurance_ms: int
    step_ms: int
    grace_ms: int
    decks: int
    penetration_permille: tuple[int, int]
    ten_up: TenUpReading
    cashout_table_id: str
    paytables: Mapping[str, str]
    """Each side bet's paytable id."""
    settle_batch: int
    """Seats settled in one transaction by the runner."""

    @classmethod
    def of(cls, wire: Mapping[str, Any]) -> TableConfig:
        """A configuration as recorded (checked when it was; a key added since reads as
        its default)."""
        full = {**DEFAULT_CONFIG, **wire}
        limits = {**DEFAULT_CONFIG["limits"], **full["limits"]}
        lo, hi = full["penetration_permille"]
        return cls(
            limits={name: (int(pair[0]), int(pair[1])) for name, pair in limits.items()},
            chip=full["chip"],
            betting_ms=full["betting_ms"],
            insurance_ms=full["insurance_ms"],
            step_ms=full["step_ms"],
            grace_ms=full["grace_ms"],
            decks=full["decks"],
            penetration_permille=(lo, hi),
            ten_up=TenUpReading(full["ten_up"]),
            cashout_table_id=full["cashout_table_id"],
            paytables={**DEFAULT_CONFIG["paytables"], **full["paytables"]},
            settle_batch=wire.get("settle_batch", RECORDED_SETTLE_BATCH),
        )

    @classmethod
    def check(cls, config: object) -> TableConfig:
        """The operator's settings (left out: the defaults), or :class:`InvalidTableConfig`."""
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
                raise InvalidTableConfig(
                    f"{name} limits must be [min, max] in minor units, min <= max"
                )
        for name in ("chip", "betting_ms", "insurance_ms", "step_ms", "settle_batch"):
            if type(full[name]) is not int or full[name] <= 0:
                raise InvalidTableConfig(f"{name} must be a positive int")
        if type(full["grace_ms"]) is not int or full["grace_ms"] < 0:
            raise InvalidTableConfig("grace_ms must be an int >= 0")
        try:
            checked = cls.of({**full, "limits": limits})
            rules = checked.rules()
        except (GameRuleError, TypeError, ValueError) as e:
            raise InvalidTableConfig(f"invalid table rules: {e}") from None
        after_cut = rules.shoe_cards - rules.cut_range(rules.shoe_cards)[1]
        if after_cut < ROUND_CARDS_MAX:
            raise InvalidTableConfig(
                f"the shoe must hold a whole round after its cut card: {after_cut} cards"
                f" follow the latest cut ({rules.decks} deck{'' if rules.decks == 1 else 's'},"
                f" penetration up to"
                f" {checked.penetration_permille[1]} permille), a round can take"
                f" {ROUND_CARDS_MAX}"
            )
        return checked

    def wire(self) -> dict[str, Any]:
        """The JSON object the log records (:data:`DEFAULT_CONFIG`'s keys, in its order)."""
        return {
            "limits": {name: [lo, hi] for name, (lo, hi) in self.limits.items()},
            "chip": self.chip,
            "betting_ms": self.betting_ms,
            "insurance_ms": self.insurance_ms,
            "step_ms": self.step_ms,
            "grace_ms": self.grace_ms,
            "decks": self.decks,
            "penetration_permille": list(self.penetration_permille),
            "ten_up": self.ten_up.value,
            "cashout_table_id": self.cashout_table_id,
            "paytables": dict(self.paytables),
            "settle_batch": self.settle_batch,
        }

    def rules(self) -> Rules:
        """The engine's rules. The engine checks one side-bet range; the ledger checks each
        bet type's own limits first, so the engine gets the widest."""
        sides = [self.limits[b.value] for b in SideBet]
        lo, hi = self.penetration_permille
        pay = self.paytables
        return Rules(
            decks=self.decks,
            penetration_min_permille=lo,
            penetration_max_permille=hi,
            ten_up=self.ten_up,
            min_bet=self.limits["main"][0],
            max_bet=self.limits["main"][1],
            side_min_bet=min(s[0] for s in sides),
            side_max_bet=max(s[1] for s in sides),
            cashout_table_id=self.cashout_table_id,
            perfect_pairs_paytable=pay["perfect-pairs"],
            twenty_one_plus_three_paytable=pay["21+3"],
            hot_three_paytable=pay["hot-3"],
            bust_it_paytable=pay["bust-it"],
        )


def check_config(config: object) -> dict[str, Any]:
    """The wire form of the checked configuration (defaults filled in)."""
    return TableConfig.check(config).wire()


def rules_of(config: Mapping[str, Any]) -> Rules:
    """The engine's rules of a recorded configuration (its wire form: an auditor's raw row)."""
    return TableConfig.of(config).rules()
