"""Video poker replay equals live play; the win is the sum of the lines; money never negative."""

from __future__ import annotations

import dataclasses

from hypothesis import event, given, settings
from hypothesis import strategies as st

from games.video_poker.double_up import (
    apply,
    can_double,
    can_half_double,
    default_action,
    replay,
)
from games.video_poker.engine import (
    Decision,
    Phase,
    VideoPokerState,
    deal,
)
from games.video_poker.variants import JB_4LINE, JB_MULTI, Variant

# The multi-hand game with double-up switched on (seed 004 has none by default) and few
# lines, so the examples stay quick but still cover several decks and the gamble.
MULTI_WITH_DOUBLE = dataclasses.replace(JB_MULTI, lines=(1, 3, 5), double_up_limit=50_000)
VARIANTS = (JB_4LINE, MULTI_WITH_DOUBLE, dataclasses.replace(JB_4LINE, coin_values=(1, 3)))
MAX_DECISIONS = 16


@st.composite
def bets(draw: st.DrawFn) -> tuple[Variant, int, int, int]:
    variant = draw(st.sampled_from(VARIANTS))
    coin_value = draw(st.sampled_from(variant.coin_values))
    coins = draw(st.integers(1, 5))
    lines = draw(st.sampled_from(variant.lines))
    return variant, coin_value, coins, lines


def choose(data: st.DataObject, state: VideoPokerState) -> Decision:
    """A random legal decision for ``state``: what a player (or a bot) might do."""
    if state.phase is Phase.DEALT:
        holds = data.draw(
            st.one_of(
                st.just(state.recommended),
                st.sets(st.integers(0, 4)).map(sorted),
            )
        )
        return Decision.draw(holds)
    if state.phase is Phase.DOUBLE_PICK:
        return Decision.pick(data.draw(st.integers(0, 3)))
    options = [Decision.collect()]
    if can_double(state):
        options.append(Decision.double())
    if can_half_double(state):
        options.append(Decision.half_double())
    return data.draw(st.sampled_from(options))


def check_money(state: VideoPokerState) -> None:
    assert state.stake > 0
    assert state.win >= 0
    assert state.line_win == sum(line.win for line in state.line_results)
    for line in state.line_results:
        assert line.win == line.multiplier * state.coin_value >= 0
        assert len(set(line.cards)) == 5
    for step in state.steps:
        assert step.staked > 0 and step.banked >= 0
        assert step.staked + step.banked == step.win_before
        assert step.win_before <= state.variant.double_up_limit
        assert step.amount_after is None or step.amount_after >= 0


@settings(max_examples=150, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), bet=bets(), data=st.data())
def test_replay_of_the_decisions_equals_every_live_state(
    seed: bytes, bet: tuple[Variant, int, int, int], data: st.DataObject
) -> None:
    variant, coin_value, coins, lines = bet
    state = deal(variant, coin_value, coins, lines, seed)
    live = [state]
    decisions: list[Decision] = []
    while state.phase is not Phase.SETTLED:
        # Past the cap the player walks away: the default actions finish the round.
        playing = len(decisions) < MAX_DECISIONS
        decision = choose(data, state) if playing else default_action(state)
        state = apply(state, decision, seed)
        decisions.append(decision)
        live.append(state)
        check_money(state)

    event(f"double-up steps: {min(len(state.steps), 3)}{'+' if len(state.steps) > 3 else ''}")
    for k, expected in enumerate(live):
        assert replay(variant, coin_value, coins, lines, decisions[:k], seed) == expected
    assert state.decisions == tuple(decisions)
    assert len(state.line_results) == lines
    drawn = live[1]
    # seed 000: the round's win is the sum of its lines' wins.
    assert drawn.win == drawn.line_win
    if not state.steps:
        assert state.win == state.line_win
    else:
        assert state.win == state.steps[-1].amount_after
