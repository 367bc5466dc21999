"""Typed Infinite Blackjack rule errors (each with a stable wire ``code``); nothing changes
when one is raised.

>>> NotAnOption("double", ("hit", "stand")).code
'not-an-option'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from games.errors import GameRuleError, SeedMismatch

__all__ = [
    "AlreadyDecided",
    "InvalidSideBet",
    "NotAnOption",
    "SeatNotInRound",
    "ShoeExhausted",
    "ShoeMismatch",
]


class NotAnOption(GameRuleError):
    """The decision is not among the seat's options now (seed 002: only the available
    decisions are active)."""

    code: ClassVar[str] = "not-an-option"

    def __init__(self, decision: str, options: Sequence[str]) -> None:
        self.decision = decision
        self.options = tuple(options)
        offered = ", ".join(self.options) or "none"
        super().__init__(f"{decision!r} is not an option now (options: {offered})")


class AlreadyDecided(GameRuleError):
    """The seat has already decided in this step (a decision is final once taken)."""

    code: ClassVar[str] = "already-decided"

    def __init__(self, seat_id: str, step: int) -> None:
        self.seat_id = seat_id
        self.step = step
        super().__init__(f"seat {seat_id!r} has already decided in step {step}")


class SeatNotInRound(GameRuleError):
    """The seat belongs to another round (its start position differs)."""

    code: ClassVar[str] = "seat-not-in-round"


class InvalidSideBet(GameRuleError):
    """A side bet that is not one of seed 002's four, or a side bet without a main bet."""

    code: ClassVar[str] = "invalid-side-bet"


class ShoeMismatch(SeedMismatch):
    """The shoe given to a step does not hold the cards already shown in the round."""

    code: ClassVar[str] = "shoe-mismatch"


class ShoeExhausted(GameRuleError):
    """The shoe has no card left to deal (only an injected, short shoe can run out)."""

    code: ClassVar[str] = "shoe-exhausted"
