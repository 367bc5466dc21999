"""What games supply for the HTTP API through the registry: pydantic wire models.

A game's round view and catalogue entry are part of its package (so adding a game does
not touch ``api/``); this module holds what they share: the response base (fields may be
filled by alias or by name) and the exact RTP figure of a catalogue entry. These are data
shapes only: no I/O, no clock.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from games.percent import as_percent

Money = Annotated[int, Field(description="minor units")]


class WireModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class Rtp(WireModel):
    """An exact return-to-player figure: ``exact`` is the fraction, ``percent`` its decimal."""

    play: str = Field(description="'optimal' (certified) or the game's proposed holds")
    basis: str
    coins: int | None = None
    certified: bool
    exact: str
    percent: str


def rtp_figure(
    value: Fraction, play: str, basis: str, certified: bool, coins: int | None = None
) -> Rtp:
    return Rtp(
        play=play,
        basis=basis,
        coins=coins,
        certified=certified,
        exact=f"{value.numerator}/{value.denominator}",
        percent=str(as_percent(value, 4)),
    )
