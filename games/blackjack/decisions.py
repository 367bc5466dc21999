"""Infinite Blackjack decisions, options and the record of what a seat did (wire format).

A :class:`Decision` is what a player asks for; an :class:`Option` is what the seat's view
offers now (with its cost, or the cash-out amount); an :class:`Action` is what was applied
at a step, marked ``automatic`` with its :class:`AutoReason` when seed 002's automatic
action replaced the player's (timeout, insufficient balance).

>>> Decision.from_wire(["cash-out"]) == Decision(DecisionKind.CASH_OUT)
True
>>> Decision.from_wire("hit").to_wire()
['hit']
>>> Action(3, DecisionKind.STAND, AutoReason.TIMEOUT).automatic
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from games.errors import InvalidDecision

__all__ = ["Action", "AutoReason", "Decision", "DecisionKind", "Option"]


class DecisionKind(StrEnum):
    """seed 002 "Prendi una decisione": CARTA, STAI, RADDOPPIA, DIVIDI, INCASSARE, and the
    insurance answer (wire format, never renamed)."""

    HIT = "hit"
    STAND = "stand"
    DOUBLE = "double"
    SPLIT = "split"
    CASH_OUT = "cash-out"
    INSURE = "insure"
    NO_INSURANCE = "no-insurance"


_KINDS: dict[str, DecisionKind] = {k.value: k for k in DecisionKind}
"""Each kind by its wire name (a look-up; iterating the enum costs microseconds a call)."""


INSURANCE_KINDS = frozenset({DecisionKind.INSURE, DecisionKind.NO_INSURANCE})


class AutoReason(StrEnum):
    """Why the engine chose a seat's action (seed 002, "azione automatica")."""

    TIMEOUT = "timeout"
    """No decision before the step closed: total <= 11 hit, > 11 stand; no insurance."""
    INSUFFICIENT_BALANCE = "insufficient-balance"
    """A double or split the balance did not cover: double -> hit; split -> hit if the
    total <= 11, else stand."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision a player asks for. Its kind is all it carries: amounts follow from
    the rules (a double or split costs the main bet, insurance half of it, a cash-out
    pays the offer shown)."""

    kind: DecisionKind

    def __post_init__(self) -> None:
        if not isinstance(self.kind, DecisionKind):
            kind = _KINDS.get(self.kind) if isinstance(self.kind, str) else None
            if kind is None:
                raise InvalidDecision(f"unknown decision {self.kind!r}")
            object.__setattr__(self, "kind", kind)

    def to_wire(self) -> list[str]:
        """JSON-friendly form for events (a list, like the other games)."""
        return [self.kind.value]

    @classmethod
    def from_wire(cls, value: Decision | str | Sequence[object]) -> Decision:
        """Accept a Decision, ``"hit"`` or ``["hit"]``."""
        if isinstance(value, Decision):
            return value
        if isinstance(value, str):
            value = [value]
        if isinstance(value, bytes) or not isinstance(value, Sequence) or len(value) != 1:
            raise InvalidDecision(f"not a decision: {value!r}")
        head = value[0]
        kind = _KINDS.get(head) if isinstance(head, str) else None
        if kind is None:
            raise InvalidDecision(
                f"unknown decision {head!r} (expected one of {[k.value for k in DecisionKind]})"
            )
        return cls(kind)


HIT = Decision(DecisionKind.HIT)
STAND = Decision(DecisionKind.STAND)
DOUBLE = Decision(DecisionKind.DOUBLE)
SPLIT = Decision(DecisionKind.SPLIT)
CASH_OUT = Decision(DecisionKind.CASH_OUT)
INSURE = Decision(DecisionKind.INSURE)
NO_INSURANCE = Decision(DecisionKind.NO_INSURANCE)


class Option(NamedTuple):
    """A decision the seat may take now. ``amount`` is what it costs (double, split,
    insurance: debited when taken) or, for a cash-out, what it pays; 0 otherwise.
    (A named tuple: views list one per option per seat per step, and it is cheaper to
    build than a frozen dataclass.)"""

    kind: DecisionKind
    amount: int = 0


@dataclass(frozen=True, slots=True)
class Action:
    """What was applied to a seat at ``step`` (0 = the insurance window)."""

    step: int
    kind: DecisionKind
    reason: AutoReason | None = None
    requested: DecisionKind | None = None
    """For an insufficient-balance replacement, what the player had asked for."""

    @property
    def automatic(self) -> bool:
        return self.reason is not None
