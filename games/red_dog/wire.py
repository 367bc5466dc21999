"""Red Dog over HTTP: its round view and its ``GET /v1/games`` entry (seed 003).

The registry hands these to the API; the figures are the exact maths of ``math``.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import Field

from games.red_dog import engine as red_dog
from games.red_dog import math as red_dog_math
from games.wire import Money, Rtp, WireModel, rtp_figure


class RedDogView(WireModel):
    cards: list[str] = Field(description="cards shown so far, e.g. 'Qh'")
    phase: str = Field(description="'decide' (raise or see) or 'settled'")
    spread: int | None
    bet: Money
    raise_amount: Money = Field(alias="raise")
    max_raise: Money


class RedDogPay(WireModel):
    outcome: str
    spread: int | None
    pays_to_one: int


class RedDogVariant(WireModel):
    game: Literal["red-dog"] = "red-dog"
    id: str
    rules_version: str
    paytable_id: str
    min_bet: Money
    max_bet: Money
    max_raise: str
    paytable: list[RedDogPay]
    rtp: list[Rtp]
    notes: list[str] = Field(default_factory=list)


@cache
def catalogue_entry() -> list[RedDogVariant]:
    """``GET /v1/games`` ``red_dog``: the one table this server offers."""
    return [_classic()]


def _classic() -> RedDogVariant:
    rules = red_dog.DEFAULT_RULES
    optimal = red_dog_math.optimal()
    never = red_dog_math.no_raise()
    # seed 003: spread 1 pays 5:1, 2 pays 4:1, 3 pays 2:1, 4..11 even money; a pair
    # followed by the same rank pays 11:1; consecutive cards and other pairs push.
    pays = [RedDogPay(outcome="win", spread=s, pays_to_one=p) for s, p in red_dog.PAYS.items()]
    pays.append(
        RedDogPay(outcome="three-of-a-kind", spread=None, pays_to_one=red_dog.THREE_OF_A_KIND_PAYS)
    )
    return RedDogVariant(
        id="classic",
        rules_version=rules.rules_version,
        paytable_id=rules.paytable_id,
        min_bet=rules.min_bet,
        max_bet=rules.max_bet,
        max_raise="up to the original bet, within the table maximum",
        notes=[_red_dog_raise_note(rules)],
        paytable=pays,
        rtp=[
            # seed 003 publishes 96.84 %: optimal raising, per unit of original bet.
            rtp_figure(optimal.rtp_per_bet, "optimal", "per-original-bet", True),
            rtp_figure(optimal.rtp_per_staked, "optimal", "per-unit-staked", True),
            rtp_figure(never.rtp_per_bet, "never-raise", "per-original-bet", False),
        ],
    )


def _red_dog_raise_note(rules: red_dog.RedDogRules) -> str:
    half = rules.max_bet // 2
    return (
        "Bet plus raise may not exceed the table maximum "
        f"({rules.max_bet} minor units), so above half of it (a bet over {half}) the full "
        "raise that optimal play makes on spreads 7-11 is impossible: the certified RTP "
        f"is reachable only with bets up to {half}."
    )
