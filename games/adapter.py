"""The typed boundary between a game's pure engine and the round lifecycle of the ledger.

An adapter is generic over the game's frozen ``Params`` (what the round was started with),
its ``State`` and its ``Decision`` (the engine's own types), and converts them to and from
the JSON the round's events record. Everything that is a rule of the game (what a stake
is, what a decision may be, the default action of an abandoned round) sits behind it, in
``games/``; the ledger only moves money and records events.

``seed`` in ``start``/``apply``/``replay`` is a :data:`games.deal.Deal`: the round's seed,
or (tests only) the seed with chosen cards; an engine draws every deck through
:func:`games.deal.shuffled` so both deal alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from games.deal import Deal

P = TypeVar("P")
S = TypeVar("S")
D = TypeVar("D")
Json = Any
"""A JSON value as the round's events store it (dicts, lists, str, int, bool, None)."""


@dataclass(frozen=True, slots=True)
class RoundTerms:
    """What the first event of a round records about the rules it is played under."""

    variant: str
    rules_version: str
    paytable_id: str
    code_prefix: str
    """Start of the round's game code, e.g. ``RD`` or ``JB4``."""


class GameAdapter(Protocol[P, S, D]):
    """One game as the round lifecycle plays it (see module docstring)."""

    @property
    def game(self) -> str:
        """The game's name in events and URLs (wire format: never renamed)."""

    def read_params(self, doc: Mapping[str, Json]) -> P: ...

    def write_params(self, params: P) -> dict[str, Json]: ...

    def read_decision(self, wire: Sequence[Json]) -> D:
        """The recorded form back to a decision; refuses a malformed one (typed error)."""

    def write_decision(self, decision: D) -> list[Json]: ...

    def terms(self, params: P) -> RoundTerms: ...

    def stake_of(self, params: P) -> int:
        """The stake debited at the start; refuses a bet the rules do not allow."""

    def start(self, params: P, seed: Deal) -> S: ...

    def apply(self, params: P, state: S, decision: D, seed: Deal) -> S:
        """The state after one decision; refuses a decision out of phase (typed error)."""

    def replay(self, params: P, decisions: Sequence[D], seed: Deal) -> S: ...

    def default_decision(self, state: S) -> D:
        """The decision taken for a player who leaves the round open (recorded automatic)."""

    def staked(self, state: S) -> int: ...

    def settled(self, state: S) -> bool: ...

    def payout(self, state: S) -> int: ...

    def outcome(self, state: S) -> str: ...

    def view(self, state: S) -> dict[str, Json]:
        """What the player sees: only cards already shown."""


def replay_recorded(
    adapter: GameAdapter[P, S, D],
    params: Mapping[str, Json],
    decisions: Sequence[Sequence[Json]],
    seed: Deal,
) -> S:
    """Re-run a round from what its events recorded (live play and audit tools alike)."""
    return adapter.replay(
        adapter.read_params(params), [adapter.read_decision(d) for d in decisions], seed
    )
