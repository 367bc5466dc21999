"""The games on offer: variants, bet options, paytables and their exact, certified RTP.

The figures come from the games' own exact maths (``games.*.math``). Video poker's full
cycle takes about a second, so the catalogue is computed once per process, on first use
(``croupier serve`` warms it in the background at start-up), and kept in memory.
"""

from __future__ import annotations

import threading
from fractions import Fraction

from api.schemas import (
    Catalogue,
    RedDogPay,
    RedDogVariant,
    Rtp,
    VideoPokerPay,
    VideoPokerVariant,
)
from games import registry
from games.poker import HandRank
from games.red_dog import engine as red_dog
from games.red_dog import math as red_dog_math
from games.video_poker import math as vp_math
from games.video_poker.paytable import MAX_COINS
from games.video_poker.variants import MIN_COINS, VARIANTS, HoldPolicy

_lock = threading.Lock()
_cached: Catalogue | None = None


def catalogue() -> Catalogue:
    global _cached
    with _lock:
        if _cached is None:
            _cached = Catalogue(red_dog=[_red_dog()], video_poker=_video_poker())
        cached = _cached
    others = {e.game: e.catalogue() for e in registry.GAMES.values() if e.catalogue is not None}
    return cached.model_copy(update={"other_games": others}) if others else cached


def _rtp(value: Fraction, play: str, basis: str, certified: bool, coins: int | None = None) -> Rtp:
    return Rtp(
        play=play,
        basis=basis,
        coins=coins,
        certified=certified,
        exact=f"{value.numerator}/{value.denominator}",
        percent=str(red_dog_math.as_percent(value, 4)),
    )


def _red_dog() -> RedDogVariant:
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
            _rtp(optimal.rtp_per_bet, "optimal", "per-original-bet", True),
            _rtp(optimal.rtp_per_staked, "optimal", "per-unit-staked", True),
            _rtp(never.rtp_per_bet, "never-raise", "per-original-bet", False),
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


# Seed 004 describes multi-hand play but gives no paytable and no coin columns.
JB_MULTI_NOTE = (
    "Seed 004 gives no paytable: jb-multi pays seed 000's 9/6 Jacks or Better table "
    "with its coin columns (1 to 5 coins per hand, 4000 per coin value for a royal "
    "flush with 5 coins), per hand."
)


def _video_poker() -> list[VideoPokerVariant]:
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
                    _rtp(
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
