"""Jacks or Better's part of ``audit-cli rtp`` (seeds 000, 004): holds played, references,
and its rows of the certified-RTP table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from games.audit import Certified, GroupKey, RoundPlay, TheoryRow, agreement
from games.cards import Card
from games.rtp import PER_STAKED, Measure, Reference, video_poker_reference
from games.simulate import Play, choose_holds
from games.video_poker.math import CycleAnalysis, analyse_all_columns
from games.video_poker.paytable import PAYTABLES
from games.video_poker.strategy import hold_evs, optimal_hold
from games.video_poker.variants import VARIANTS

_DOUBLE_UP = frozenset({"double", "half-double", "pick"})


class VideoPokerRtp:
    alternative = Play.WINNING_CARDS.value
    measures: tuple[Measure, ...] = (PER_STAKED,)

    def coins(self, start: Mapping[str, Any]) -> int | None:
        coins = (start.get("params") or {}).get("coins")
        return coins if isinstance(coins, int) else None

    def read(
        self,
        start: Mapping[str, Any],
        settled: Mapping[str, Any],
        decisions: Sequence[Sequence[Any]],
    ) -> RoundPlay:
        bet, lines = int(start["stake"]), int(start["params"]["lines"])
        hands = [(str(ln["rank"]), int(ln["win"])) for ln in settled["view"]["lines"]]
        optimal, winning = self._play(start, decisions)
        double_up = any(d and d[0] in _DOUBLE_UP for d in decisions)
        return RoundPlay(bet, lines, hands, optimal, winning, double_up)

    @staticmethod
    def _play(start: Mapping[str, Any], decisions: Sequence[Sequence[Any]]) -> tuple[bool, bool]:
        """Whether the round's holds are a max-EV hold, and whether they are seed 000's."""
        draws = [d for d in decisions if d and d[0] == "draw"]
        variant = VARIANTS.get(start["variant"])
        paytable = PAYTABLES.get(start["paytable_id"])
        if not draws or variant is None or paytable is None:
            return False, False
        holds = tuple(sorted(draws[0][1]))
        dealt = tuple(Card.parse(c) for c in start["view"]["dealt"])
        coins = int(start["params"]["coins"])
        winning = holds == choose_holds(variant, dealt, coins, Play.WINNING_CARDS)
        advice = optimal_hold(dealt, paytable, coins)
        # Another hold of the same exact EV is optimal too (the tie-break only picks one).
        optimal = holds == advice.hold or hold_evs(dealt, paytable, coins).get(holds) == advice.ev
        return optimal, winning

    def references(self, key: GroupKey, play: str) -> dict[Measure, Reference] | None:
        paytable = PAYTABLES.get(key[2])
        if paytable is None or key[3] is None:
            return None
        return {PER_STAKED: video_poker_reference(paytable, key[3], Play(play))}

    def unknown(self, key: GroupKey) -> str | None:
        if key[1] not in VARIANTS:
            return f"video-poker: unknown variant {key[1]!r}"
        if key[2] not in PAYTABLES:
            return f"video-poker: unknown paytable {key[2]!r}"
        return None


# Seed 000, "MONTEPREMI": "99,54 (da 1 a 4 fiche); 98,37 (5 fiche)"; seed 004 publishes none.
PUBLISHED = {"jb-4line": {1: "99.54", 2: "99.54", 3: "99.54", 4: "99.54", 5: "98.37"}}
PUBLISHED_LABEL = {1: "1 to 4 coins", 5: "5 coins"}
NOTES = (
    "Video poker: per coin, over every deal and draw;",
    "  optimal = the max-EV hold, winning-cards = seed 000's proposal; * = the hold the variant"
    " proposes after the deal.",
)


@cache
def certified_rows() -> tuple[TheoryRow, ...]:
    """Every variant's coin columns, both ways of holding, over the full cycle; coin
    columns with equal figures are merged (``1-4``)."""
    rows: list[TheoryRow] = []
    for variant in VARIANTS.values():
        paytable = variant.paytable
        published = PUBLISHED.get(variant.id, {})
        plays = [Play.OPTIMAL] + ([Play.WINNING_CARDS] if variant.id == "jb-4line" else [])
        for play in plays:
            columns = analyse_all_columns(paytable, play)
            for coins, cycle in _merged(columns):
                fig = published.get(coins[0]) if play is Play.OPTIMAL else None
                others = [v for c, v in published.items() if c not in coins]
                label = PUBLISHED_LABEL.get(coins[0], "")
                rows.append(
                    TheoryRow(
                        "video-poker",
                        variant.id,
                        paytable.id,
                        f"{play.value}*" if play.value == variant.hold_policy else play.value,
                        f"{coins[0]}-{coins[-1]}" if len(coins) > 1 else str(coins[0]),
                        cycle.rtp,
                        fig,
                        f'seed 000, "{label}"' if fig else "",
                        agreement(cycle.rtp, fig, others),
                        cycle.max_win,
                        cycle.hit_frequency,
                    )
                )
    return tuple(rows)


def _merged(columns: dict[int, CycleAnalysis]) -> list[tuple[list[int], CycleAnalysis]]:
    merged: list[tuple[list[int], CycleAnalysis]] = []
    for coins, cycle in columns.items():
        last = merged[-1] if merged else None
        figures = (cycle.rtp, cycle.max_win, cycle.hit_frequency)
        if last is not None and (last[1].rtp, last[1].max_win, last[1].hit_frequency) == figures:
            last[0].append(coins)
        else:
            merged.append(([coins], cycle))
    return merged


CERTIFIED = Certified(certified_rows, NOTES)
