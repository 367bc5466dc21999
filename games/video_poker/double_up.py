"""Double-up after a win (seed 000, "Raddoppio / Mezzo Raddoppio"), default actions, replay.

After a win the player collects, doubles or half doubles. Step ``n`` (0-based count of
double-up steps in the round) gets a fresh deck ``RandomStream(seed, f"vp/double/{n}")
.shuffled(full_deck())``: the dealer's face-up card is ``deck[0]`` and the four face-down
cards are ``deck[1:5]``; the player picks one. Ranks only, ace high, suits irrelevant:

- lower than the dealer's card: the staked amount is lost;
- equal: push, the staked amount comes back and the player decides again;
- higher: the staked amount is doubled.

A double stakes the whole win. A half double stakes ``win // 2`` (rounded down) and banks
``win - win // 2`` (so the odd minor unit is banked, never staked); a win of 1 minor unit
cannot be half doubled. After a step the player may collect or go again while the win is
at most ``variant.double_up_limit``; a loss ends the round with the banked part (0 for a
full double). Seed 000 credits the win only when the player collects or the double-up
ends, so no step moves money before settlement; each step is its own record (bet type)
in the state's ``steps``.

>>> from games.video_poker.engine import deal, draw
>>> from games.video_poker.variants import JB_4LINE
>>> seed = bytes(32)
>>> won = draw(deal(JB_4LINE, 10, 1, 4, seed), (1, 2), seed)  # hold the aces
>>> won.phase.value, won.win
('win-pending', 40)
>>> picking = half_double(won, seed)
>>> step = picking.steps[0]
>>> step.staked, step.banked, str(step.dealer_card)
(20, 20, '2d')
>>> after = pick(picking, 0, seed)
>>> str(after.steps[0].picked), after.steps[0].result.value, after.win  # banked 20 + 2 x 20
('5h', 'win', 60)
>>> collect(after).phase.value
'settled'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import ClassVar

from games.deal import Deal
from games.errors import ActionOutOfPhase, GameRuleError
from games.video_poker.engine import (
    Decision,
    DecisionKind,
    DoubleKind,
    DoubleUpStep,
    Phase,
    StepResult,
    VideoPokerState,
    check_seed,
    deal,
    double_deck,
    draw,
    require_phase,
)
from games.video_poker.variants import Variant

FACE_DOWN = 4
"""Seed 000: "Il banco scopre una carta e ne distribuisce 4 coperte"."""


class DoubleUpNotOffered(GameRuleError):
    """The win is above the double-up limit (or the variant has no double-up)."""

    code: ClassVar[str] = "double-up-not-offered"

    def __init__(self, win: int, limit: int) -> None:
        self.win = win
        self.limit = limit
        if limit <= 0:
            message = "this game has no double-up; collect the win"
        else:
            # seed 000: "disponibile solo se l'importo della vincita non eccede il limite"
            message = f"double-up is offered only up to {limit}; the win is {win}"
        super().__init__(message)


class HalfDoubleTooSmall(GameRuleError):
    """A win of one minor unit has no half to stake."""

    code: ClassVar[str] = "half-double-too-small"

    def __init__(self, win: int) -> None:
        self.win = win
        super().__init__(f"a win of {win} cannot be half doubled (its half rounds down to 0)")


class InvalidPick(GameRuleError):
    """A pick that is not one of the four face-down cards (0..3)."""

    code: ClassVar[str] = "invalid-pick"

    def __init__(self, index: object) -> None:
        self.index = index
        super().__init__(f"pick one of the face-down cards 0..{FACE_DOWN - 1}, got {index!r}")


def half_stake(win: int) -> tuple[int, int]:
    """``(staked, banked)`` for a half double: the stake rounds down, the odd unit is banked.

    >>> half_stake(1000), half_stake(1001)
    ((500, 500), (500, 501))
    """
    staked = win // 2
    return staked, win - staked


# --- collect ----------------------------------------------------------------------------


def verify_collect(state: VideoPokerState) -> None:
    """Raise a typed error saying why the player cannot collect now."""
    require_phase(state, "collect", Phase.WIN_PENDING)


def can_collect(state: VideoPokerState) -> bool:
    try:
        verify_collect(state)
    except GameRuleError:
        return False
    return True


def collect(state: VideoPokerState) -> VideoPokerState:
    """Take the win ("Incassa"): the round settles and ``win`` is credited."""
    verify_collect(state)
    return replace(state, phase=Phase.SETTLED, decisions=(*state.decisions, Decision.collect()))


# --- double / half double ---------------------------------------------------------------


def verify_double(state: VideoPokerState, seed: Deal | None = None) -> None:
    """Raise a typed error saying why the player cannot double now."""
    _verify_offer(state, "double", seed)


def can_double(state: VideoPokerState, seed: Deal | None = None) -> bool:
    try:
        verify_double(state, seed)
    except GameRuleError:
        return False
    return True


def double(state: VideoPokerState, seed: Deal) -> VideoPokerState:
    """Stake the whole win on one double-up step ("Raddoppio"): the dealer's card is shown."""
    verify_double(state, seed)
    return _open_step(state, DoubleKind.DOUBLE, state.win, 0, seed, Decision.double())


def verify_half_double(state: VideoPokerState, seed: Deal | None = None) -> None:
    """Raise a typed error saying why the player cannot half double now."""
    _verify_offer(state, "half double", seed)
    if half_stake(state.win)[0] == 0:
        raise HalfDoubleTooSmall(state.win)


def can_half_double(state: VideoPokerState, seed: Deal | None = None) -> bool:
    try:
        verify_half_double(state, seed)
    except GameRuleError:
        return False
    return True


def half_double(state: VideoPokerState, seed: Deal) -> VideoPokerState:
    """Stake half the win and bank the rest ("Mezzo Raddoppio"); see :func:`half_stake`."""
    verify_half_double(state, seed)
    staked, banked = half_stake(state.win)
    return _open_step(state, DoubleKind.HALF_DOUBLE, staked, banked, seed, Decision.half_double())


# --- pick -------------------------------------------------------------------------------


def verify_pick(state: VideoPokerState, index: object, seed: Deal | None = None) -> None:
    """Raise a typed error saying why the player cannot pick card ``index`` now."""
    require_phase(state, "pick", Phase.DOUBLE_PICK)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < FACE_DOWN:
        raise InvalidPick(index)
    if seed is not None:
        check_seed(state, seed)


def can_pick(state: VideoPokerState, index: object, seed: Deal | None = None) -> bool:
    try:
        verify_pick(state, index, seed)
    except GameRuleError:
        return False
    return True


def pick(state: VideoPokerState, index: int, seed: Deal) -> VideoPokerState:
    """Turn over the four face-down cards and compare the picked one with the dealer's."""
    verify_pick(state, index, seed)
    step = state.steps[-1]
    cards = tuple(double_deck(seed, step.n)[1 : 1 + FACE_DOWN])
    picked, dealer = cards[index].rank, step.dealer_card.rank
    # seed 000: "più bassa ... perderà la vincita; ... uguali ... pareggiata; ... più alta
    # ... il doppio". Ranks only (Rank is an IntEnum, ace = 14 is high).
    if picked < dealer:
        result, after, phase = StepResult.LOSE, step.banked, Phase.SETTLED
    elif picked == dealer:
        result, after, phase = StepResult.PUSH, step.banked + step.staked, Phase.WIN_PENDING
    else:
        result, after, phase = StepResult.WIN, step.banked + 2 * step.staked, Phase.WIN_PENDING
    done = replace(step, cards=cards, index=index, result=result, amount_after=after)
    return replace(
        state,
        phase=phase,
        win=after,
        steps=(*state.steps[:-1], done),
        decisions=(*state.decisions, Decision.pick(index)),
    )


# --- default action and replay ----------------------------------------------------------


def default_action(state: VideoPokerState) -> Decision:
    """The decision taken for a player who abandons the round (record it as automatic).

    - dealt: draw with the proposed holds (seed 000 / 004: the game's recommended hold);
    - win pending: collect, so no further stake is taken without the player's consent;
    - double-up pick pending: the stake is already committed and cannot be withdrawn, so
      the engine picks face-down card 0 (the four cards are exchangeable, so any fixed
      position is as fair as the player's own choice).
    """
    if state.phase is Phase.DEALT:
        return Decision.draw(state.recommended)
    if state.phase is Phase.WIN_PENDING:
        return Decision.collect()
    if state.phase is Phase.DOUBLE_PICK:
        return Decision.pick(0)
    raise ActionOutOfPhase(
        "take the default action", state.phase.value, "dealt, win-pending, double-pick"
    )


def apply(
    state: VideoPokerState, decision: Decision | Sequence[object], seed: Deal
) -> VideoPokerState:
    """Apply one decision (a :class:`Decision` or its wire form)."""
    d = Decision.from_wire(decision)
    if d.kind is DecisionKind.DRAW:
        return draw(state, d.holds, seed)
    if d.kind is DecisionKind.COLLECT:
        return collect(state)
    if d.kind is DecisionKind.DOUBLE:
        return double(state, seed)
    if d.kind is DecisionKind.HALF_DOUBLE:
        return half_double(state, seed)
    assert d.index is not None  # Decision checks a pick carries an index
    return pick(state, d.index, seed)


def replay(
    variant: Variant,
    coin_value: int,
    coins: int,
    lines: int,
    decisions: Iterable[Decision | Sequence[object]],
    seed: Deal,
) -> VideoPokerState:
    """Re-run a recorded round: deal, then each decision in order. Returns the state the
    decisions lead to (still open if they stop early); a decision out of phase raises
    :class:`~games.errors.ActionOutOfPhase`."""
    state = deal(variant, coin_value, coins, lines, seed)
    for decision in decisions:
        state = apply(state, decision, seed)
    return state


# --- internals --------------------------------------------------------------------------


def _verify_offer(state: VideoPokerState, action: str, seed: Deal | None) -> None:
    require_phase(state, action, Phase.WIN_PENDING)
    limit = state.variant.double_up_limit
    if state.win > limit:
        raise DoubleUpNotOffered(state.win, limit)
    if seed is not None:
        check_seed(state, seed)


def _open_step(
    state: VideoPokerState,
    kind: DoubleKind,
    staked: int,
    banked: int,
    seed: Deal,
    decision: Decision,
) -> VideoPokerState:
    n = len(state.steps)
    step = DoubleUpStep(
        n=n,
        kind=kind,
        win_before=state.win,
        staked=staked,
        banked=banked,
        dealer_card=double_deck(seed, n)[0],
    )
    return replace(
        state,
        phase=Phase.DOUBLE_PICK,
        steps=(*state.steps, step),
        decisions=(*state.decisions, decision),
    )
