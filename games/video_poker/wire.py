"""Jacks or Better over HTTP: its round view and its ``GET /v1/games`` entry (seeds 000, 004).

The registry hands these to the API; the figures are the exact full-cycle maths of ``math``.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import Field

from games.poker import HandRank
from games.video_poker import math as vp_math
from games.video_poker.paytable import MAX_COINS
from games.video_poker.variants import MIN_COINS, VARIANTS, HoldPolicy
from games.wire import Money, Rtp, WireModel, rtp_figure


class LineView(WireModel):
    cards: list[str]
    rank: str
    win: Money


class DoubleUpStepView(WireModel):
    n: int
    bet_type: str = Field(description="'double' or 'half-double'")
    win_before: Money
    staked: Money
    banked: Money
    dealer_card: str
    cards: list[str] = Field(description="the four face-down cards, once one is picked")
    index: int | None
    result: str | None
    amount_after: Money | None


class VideoPokerView(WireModel):
    dealt: list[str]
    cards: list[str]
    recommended: list[int] = Field(description="positions (0..4) the game proposes to hold")
    phase: str = Field(description="'dealt', 'win-pending', 'double-pick' or 'settled'")
    holds: list[int] | None
    coin_value: Money
    coins: int
    lines: list[LineView]
    line_win: Money
    win: Money
    double_up: list[DoubleUpStepView]


class VideoPokerPay(WireModel):
    hand: str
    pays: list[int] = Field(description="total paid per line for 1..5 coins, x coin value")


class VideoPokerVariant(WireModel):
    game: Literal["video-poker"] = "video-poker"
    id: str
    rules_version: str
    paytable_id: str
    lines: list[int]
    coin_values: list[Money]
    coins: list[int]
    hold_policy: str
    double_up_limit: Money
    paytable: list[VideoPokerPay]
    rtp: list[Rtp]
    notes: list[str] = Field(default_factory=list)


# Seed 004 describes multi-hand play but gives no paytable and no coin columns.
JB_MULTI_NOTE = (
    "Seed 004 gives no paytable: jb-multi pays seed 000's 9/6 Jacks or Better table "
    "with its coin columns (1 to 5 coins per hand, 4000 per coin value for a royal "
    "flush with 5 coins), per hand."
)


@cache
def catalogue_entry() -> list[VideoPokerVariant]:
    """``GET /v1/games`` ``video_poker``: every variant; the full cycle takes about a second."""
    out = []
    by_table: dict[tuple[str, vp_math.Play], dict[int, vp_math.CycleAnalysis]] = {}
    for variant in VARIANTS.values():
        table = variant.paytable
        plays = [vp_math.Play.OPTIMAL]
        if variant.hold_policy is HoldPolicy.WINNING_CARDS:
            plays.append(vp_math.Play.WINNING_CARDS)
        rtp = []
        for play in plays:
            key = (table.id, play)
            if key not in by_table:
                by_table[key] = vp_math.analyse_all_columns(table, play)
            for coins, analysis in sorted(by_table[key].items()):
                # Certified: max-EV play. The other figure is what a player gets by always
                # accepting seed 000's proposed holds (shown for transparency only).
                rtp.append(
                    rtp_figure(
                        analysis.rtp,
                        play.value,
                        "per-coin-bet",
                        play is vp_math.Play.OPTIMAL,
                        coins,
                    )
                )
        out.append(
            VideoPokerVariant(
                id=variant.id,
                rules_version=variant.rules_version,
                paytable_id=variant.paytable_id,
                lines=list(variant.lines),
                coin_values=list(variant.coin_values),
                coins=list(range(MIN_COINS, MAX_COINS + 1)),
                hold_policy=variant.hold_policy.value,
                double_up_limit=variant.double_up_limit,
                paytable=[
                    VideoPokerPay(hand=rank.value, pays=list(amounts))
                    for rank, amounts in reversed(list(table.pays.items()))
                    if rank is not HandRank.NOTHING
                ],
                rtp=rtp,
                notes=[JB_MULTI_NOTE] if variant.id == "jb-multi" else [],
            )
        )
    return out
