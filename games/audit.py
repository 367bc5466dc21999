"""How ``audit-cli rtp`` reads one game's settled rounds: the game's part of the audit.

Each game's registry entry supplies one :class:`RtpRules`: what a group of its rounds is
keyed by beyond (game, variant, paytable), what a settled round contributes to the tally,
whether it was played the certified (optimal) way or the alternative one, and the exact
reference figures. ``audit_cli.rtp`` does the rest (reading, grouping, intervals) for
every game alike. The entry may also supply its :class:`Certified` table (the rows of
``audit-cli rtp --theoretical``), which a game has before it has rounds on the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol

from games.percent import as_percent
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


# -- the certified table (``audit-cli rtp --theoretical``) -----------------------------

MATCHES = "matches"
SWAPPED = "matches the other coin column (published figures swapped)"


@dataclass(frozen=True, slots=True)
class TheoryRow:
    """One row of the certified-RTP table: an exact figure beside the published one."""

    game: str
    variant: str
    paytable_id: str
    play: str
    coins: str
    rtp: Fraction
    published: str | None
    source: str
    agreement: str
    max_paid_per_bet: Fraction
    hit_frequency: Fraction | None
    """None where the figure has no single meaning (blackjack's main game: pushes, splits)."""
    exact: bool = True
    """``rtp`` is the exact rational; else it is the IEEE double the exact recursion gave."""

    def to_dict(self) -> dict[str, Any]:
        hit = self.hit_frequency
        return {
            "game": self.game,
            "variant": self.variant,
            "paytable_id": self.paytable_id,
            "play": self.play,
            "coins": self.coins,
            "rtp": str(as_percent(self.rtp)),
            "rtp_exact": f"{self.rtp.numerator}/{self.rtp.denominator}" if self.exact else None,
            "published": self.published,
            "source": self.source,
            "agreement": self.agreement,
            "max_paid_per_bet": str(self.max_paid_per_bet),
            "hit_frequency": None if hit is None else str(as_percent(hit)),
        }


def agreement(rtp: Fraction, published: str | None, others: Sequence[str] = ()) -> str:
    """``matches`` when ``rtp`` rounds to the published figure (at its places), the swapped
    note when it rounds to another column's, else ``DIFFERS: x %``."""
    if published is None:
        return "not published"
    places = -int(Decimal(published).as_tuple().exponent)
    ours = str(as_percent(rtp, places))
    if ours == published:
        return MATCHES
    if ours in others:
        return SWAPPED
    return f"DIFFERS: {ours} %"


@dataclass(frozen=True)
class Certified:
    """A game's part of the certified-RTP table, as its registry entry supplies it."""

    rows: Callable[[], Sequence[TheoryRow]]
    """Computed on demand (some take seconds); the game caches them per process."""
    notes: tuple[str, ...] = ()
    """Printed under the table: what the game's rows mean, where the published ones are."""
    known_differences: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(paytable id, play) -> why a row differs from its published figure. A difference
    named here is reported but is not a finding; any other one is."""

    def explained(self, row: TheoryRow) -> str | None:
        return self.known_differences.get((row.paytable_id, row.play))
