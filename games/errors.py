"""Typed rule errors shared by the games: each carries a stable ``code`` and says why.

Every error a game raises for bad input subclasses :class:`GameRuleError`, so the edges can
map any of them to one response shape (``code`` + message) without knowing the game. The
``code`` strings are wire format: short, stable, never renamed. Games add their own
subclasses in their own modules.

>>> err = BetBelowMinimum(bet=50, minimum=100)
>>> err.code, str(err)
('bet-below-minimum', 'bet 50 is below the table minimum 100')
>>> isinstance(err, ValueError)
True
"""

from __future__ import annotations

from typing import ClassVar


class GameRuleError(ValueError):
    """A command broke a game rule; nothing changed. ``code`` is stable wire format."""

    code: ClassVar[str] = "game-rule"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidAmount(GameRuleError):
    """An amount is not a positive ``int`` of minor units (zero, negative, bool, float...)."""

    code: ClassVar[str] = "invalid-amount"

    def __init__(self, what: str, value: object) -> None:
        self.what = what
        self.value = value
        super().__init__(
            f"{what} must be a positive whole number of minor units, got {value!r}"
            f" ({type(value).__name__})"
        )


class BetBelowMinimum(GameRuleError):
    """The bet is under the table minimum (seed 003: a clear error message is shown)."""

    code: ClassVar[str] = "bet-below-minimum"

    def __init__(self, bet: int, minimum: int) -> None:
        self.bet = bet
        self.minimum = minimum
        super().__init__(f"bet {bet} is below the table minimum {minimum}")


class BetAboveMaximum(GameRuleError):
    """The total stake would exceed the table maximum."""

    code: ClassVar[str] = "bet-above-maximum"

    def __init__(self, bet: int, maximum: int, what: str = "bet") -> None:
        self.bet = bet
        self.maximum = maximum
        super().__init__(f"{what} {bet} is above the table maximum {maximum}")


class RaiseTooLarge(GameRuleError):
    """A raise exceeds the original bet (Red Dog: the raise is at most the original bet)."""

    code: ClassVar[str] = "raise-too-large"

    def __init__(self, amount: int, limit: int) -> None:
        self.amount = amount
        self.limit = limit
        super().__init__(f"raise {amount} is above the allowed {limit} (the original bet)")


class RaiseAboveMaximum(BetAboveMaximum):
    """A raise within the original bet that would take bet plus raise past the table
    maximum: the limit that binds is ``max_raise`` = table maximum - bet.

    >>> str(RaiseAboveMaximum(amount=300, bet=400, maximum=500))
    'raise 300 is above the maximum raise 100: bet plus raise 700 is above the table maximum 500'
    """

    code: ClassVar[str] = "raise-above-maximum"

    def __init__(self, amount: int, bet: int, maximum: int) -> None:
        self.amount = amount
        self.limit = max(0, maximum - bet)
        GameRuleError.__init__(
            self,
            f"raise {amount} is above the maximum raise {self.limit}: bet plus raise"
            f" {bet + amount} is above the table maximum {maximum}",
        )
        self.bet = bet + amount
        self.maximum = maximum


class ActionOutOfPhase(GameRuleError):
    """The action is not allowed in the round's current phase."""

    code: ClassVar[str] = "action-out-of-phase"

    def __init__(self, action: str, phase: str, allowed: str = "") -> None:
        self.action = action
        self.phase = phase
        detail = f"; allowed in: {allowed}" if allowed else ""
        super().__init__(f"cannot {action} in phase {phase!r}{detail}")


class InvalidDecision(GameRuleError):
    """A recorded or submitted decision is malformed (unknown kind, wrong arguments)."""

    code: ClassVar[str] = "invalid-decision"


class InvalidRules(GameRuleError):
    """A rules/table configuration is inconsistent (e.g. minimum above maximum)."""

    code: ClassVar[str] = "invalid-rules"


class SeedMismatch(GameRuleError):
    """The seed given to a step does not re-derive the cards already shown in the state."""

    code: ClassVar[str] = "seed-mismatch"


def require_positive_amount(what: str, value: object) -> int:
    """Return ``value`` if it is a positive ``int`` (not ``bool``), else raise
    :class:`InvalidAmount`. Money is int minor units: floats, Decimals and strings are
    refused rather than rounded.

    >>> require_positive_amount("bet", 100)
    100
    >>> require_positive_amount("bet", True)
    Traceback (most recent call last):
    ...
    games.errors.InvalidAmount: bet must be a positive whole number of minor units, got True (bool)
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidAmount(what, value)
    return value
