"""Jacks or Better's part of ``audit-cli rtp`` (seeds 000, 004): holds played, references."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from games.audit import GroupKey, RoundPlay
from games.cards import Card
from games.rtp import PER_STAKED, Measure, Reference, video_poker_reference
from games.simulate import Play, choose_holds
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
