"""Red Dog's part of ``audit-cli rtp`` (seed 003): plays, tally rows, exact references."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from games.audit import OPTIMAL, GroupKey, RoundPlay
from games.red_dog import engine
from games.rtp import PER_BET, PER_STAKED, Measure, Reference, red_dog_references
from games.simulate import RaisePolicy


class RedDogRtp:
    alternative = RaisePolicy.NEVER.value
    # seed 003 publishes its RTP per original bet; per unit staked is shown beside it.
    measures: tuple[Measure, ...] = (PER_BET, PER_STAKED)

    def coins(self, start: Mapping[str, Any]) -> int | None:
        return None

    def read(
        self,
        start: Mapping[str, Any],
        settled: Mapping[str, Any],
        decisions: Sequence[Sequence[Any]],
    ) -> RoundPlay:
        bet, paid = int(start["params"]["bet"]), int(settled["payout"])
        optimal, never = self._play(start, decisions, bet)
        return RoundPlay(bet, 1, [(str(settled["outcome"]), paid)], optimal, never)

    @staticmethod
    def _play(
        start: Mapping[str, Any], decisions: Sequence[Sequence[Any]], bet: int
    ) -> tuple[bool, bool]:
        """Whether the round follows the optimal raise policy, and whether it never raised."""
        if not decisions:
            return True, True  # consecutive cards or a pair: settled before any decision
        spread = start["view"].get("spread")
        decision = list(decisions[0])
        expected = ["raise", bet] if spread in RaisePolicy.OPTIMAL.raise_spreads else ["see"]
        return decision == expected, decision == ["see"]

    def references(self, key: GroupKey, play: str) -> dict[Measure, Reference] | None:
        if key[2] != engine.PAYTABLE_ID:
            return None
        policy = RaisePolicy.OPTIMAL if play == OPTIMAL else RaisePolicy.NEVER
        return red_dog_references(policy.raise_spreads)

    def unknown(self, key: GroupKey) -> str | None:
        if key[2] != engine.PAYTABLE_ID:
            return f"red-dog: unknown paytable {key[2]!r}"
        return None
