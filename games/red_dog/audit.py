"""Red Dog's part of ``audit-cli rtp`` (seed 003): plays, tally rows, exact references,
and its rows of the certified-RTP table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import cache
from typing import Any

from games.audit import OPTIMAL, Certified, GroupKey, RoundPlay, TheoryRow, agreement
from games.red_dog import engine
from games.red_dog import math as red_dog_math
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


# seed 003: "La percentuale teorica di ritorno (RTP) al giocatore è 96,84%".
PUBLISHED = "96.84"
NOTES = (
    "Red Dog: raise the full bet on spreads 7-11 (optimal) or never; per bet = 1 + E[net] /"
    " original bet (seed 003's measure),",
    "  per staked = E[payout] / E[bet + raise].",
)


@cache
def certified_rows() -> tuple[TheoryRow, ...]:
    """Red Dog's certified rows, in closed form: optimal raising per bet (the published
    measure) and per staked, and never raising."""
    rows = []
    for policy, measure in (
        (RaisePolicy.OPTIMAL, PER_BET),
        (RaisePolicy.OPTIMAL, PER_STAKED),
        (RaisePolicy.NEVER, PER_BET),
    ):
        report = red_dog_math.analyse(policy.raise_spreads)
        rtp = report.rtp_per_bet if measure == PER_BET else report.rtp_per_staked
        fig = PUBLISHED if policy is RaisePolicy.OPTIMAL and measure == PER_BET else None
        outcomes = report.outcomes
        hits = outcomes[engine.Outcome.WIN] + outcomes[engine.Outcome.THREE_OF_A_KIND]
        how = "raise 7-11" if policy is RaisePolicy.OPTIMAL else "never raise"
        rows.append(
            TheoryRow(
                "red-dog",
                "classic",
                engine.PAYTABLE_ID,
                f"{how}, {measure.replace('-', ' ')}" if policy is RaisePolicy.OPTIMAL else how,
                "-",
                rtp,
                fig,
                "seed 003" if fig else "",
                agreement(rtp, fig),
                # Three of a kind pays 11:1 on the original bet (never raised): 12 back.
                Fraction(1 + engine.THREE_OF_A_KIND_PAYS),
                hits,
            )
        )
    return tuple(rows)


CERTIFIED = Certified(certified_rows, NOTES)
