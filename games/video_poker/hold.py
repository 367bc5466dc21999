"""The hold step of Jacks or Better: the player's hold selection before the draw.

Seed 000 lets the player change the proposed holds before "Distribuisci"; we record the
selection as its own step (for history and disputes). It changes no cards and moves no
money; a later draw sent without holds draws with the last selection, else with the
holds the game proposed at the deal. A round's recorded steps are engine decisions and
hold steps; replay skips the hold steps (they do not change the state).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from games.deal import Deal
from games.errors import GameRuleError, InvalidDecision
from games.video_poker import double_up, engine
from games.video_poker.engine import Decision, VideoPokerState
from games.video_poker.variants import Variant

HOLD = "hold"


@dataclass(frozen=True, slots=True)
class Hold:
    """``["hold", [positions]]``: positions are kept as sent and checked against the state."""

    holds: object

    def to_wire(self) -> list[object]:
        held = self.holds
        return [HOLD, list(held) if isinstance(held, tuple | list) else held]

    @classmethod
    def from_wire(cls, value: Sequence[object]) -> Hold:
        if len(value) != 2:
            raise InvalidDecision(f"'hold' takes one list of positions, got {list(value)!r}")
        return cls(value[1])


Step = Decision | Hold
"""One recorded step of a round: an engine decision or a hold selection."""


def step_from_wire(value: Step | Sequence[object]) -> Step:
    if isinstance(value, Decision | Hold):
        return value
    is_list = not isinstance(value, str | bytes) and isinstance(value, Sequence)
    if is_list and value and value[0] == HOLD:
        return Hold.from_wire(value)
    return Decision.from_wire(value)


def verify_hold(state: VideoPokerState, holds: object, seed: Deal | None = None) -> None:
    """A selection is valid when a draw with it would be (same phase, same positions);
    out of phase, the refusal names the hold, not the draw."""
    engine.require_phase(state, "hold cards", engine.Phase.DEALT)
    engine.verify_draw(state, holds, seed)


def can_hold(state: VideoPokerState, holds: object, seed: Deal | None = None) -> bool:
    try:
        verify_hold(state, holds, seed)
    except GameRuleError:
        return False
    return True


def hold(state: VideoPokerState, holds: object, seed: Deal) -> VideoPokerState:
    """Record a selection: the state is unchanged (no card is drawn)."""
    verify_hold(state, holds, seed)
    return state


def apply_step(state: VideoPokerState, step: Step, seed: Deal) -> VideoPokerState:
    if isinstance(step, Hold):
        return hold(state, step.holds, seed)
    return double_up.apply(state, step, seed)


def replay_steps(
    variant: Variant, coin_value: int, coins: int, lines: int, steps: Iterable[Step], seed: Deal
) -> VideoPokerState:
    decisions = [s for s in steps if not isinstance(s, Hold)]
    return double_up.replay(variant, coin_value, coins, lines, decisions, seed)


def holds_for_draw(steps: Sequence[Step], state: VideoPokerState) -> tuple[int, ...]:
    """The holds of a draw sent without any: the last selection, else the proposal."""
    for step in reversed(steps):
        if isinstance(step, Hold):
            return engine.normalize_holds(step.holds)
    return tuple(state.recommended)
