"""How ``audit-cli rtp`` reads one game's settled rounds: the game's part of the audit.

Each game's registry entry supplies one :class:`RtpRules`: what a group of its rounds is
keyed by beyond (game, variant, paytable), what a settled round contributes to the tally,
whether it was played the certified (optimal) way or the alternative one, and the exact
reference figures. ``audit_cli.rtp`` does the rest (reading, grouping, intervals) for
every game alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from games.rtp import Measure, Reference

GroupKey = tuple[str, str, str, int | None]
"""(game, variant, paytable id, coins per line or None)."""
OPTIMAL = "optimal"


@dataclass(frozen=True, slots=True)
class RoundPlay:
    """What one settled round adds to its group."""

    bet: int
    lines: int
    hands: list[tuple[str, int]]
    optimal: bool
    """Consistent with the certified (optimal) play."""
    alternative: bool
    """Consistent with the game's alternative play."""
    double_up: bool = False


class RtpRules(Protocol):
    @property
    def alternative(self) -> str:
        """The name of the alternative play (e.g. ``never`` raise, ``winning-cards``)."""

    @property
    def measures(self) -> tuple[Measure, ...]: ...

    def coins(self, start: Mapping[str, Any]) -> int | None:
        """The 4th part of the group key (video poker: coins per line)."""

    def read(
        self,
        start: Mapping[str, Any],
        settled: Mapping[str, Any],
        decisions: Sequence[Sequence[Any]],
    ) -> RoundPlay: ...

    def references(self, key: GroupKey, play: str) -> dict[Measure, Reference] | None:
        """The exact figures of ``play`` (``optimal`` or the alternative), or None."""

    def unknown(self, key: GroupKey) -> str | None:
        """Why the maths cannot judge this group (unknown variant, paytable), or None."""
