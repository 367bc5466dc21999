"""Double-up after a win (seed 000, "Raddoppio / Mezzo Raddoppio"), default actions, replay."""

from __future__ import annotations

import dataclasses
from functools import cache

import pytest

from games.cards import Card, Rank, full_deck
from games.errors import ActionOutOfPhase, SeedMismatch
from games.rng import RandomStream
from games.video_poker.double_up import (
    DoubleUpNotOffered,
    HalfDoubleTooSmall,
    InvalidPick,
    apply,
    can_collect,
    can_double,
    can_half_double,
    can_pick,
    collect,
    default_action,
    double,
    half_double,
    half_stake,
    pick,
    replay,
)
from games.video_poker.engine import (
    Decision,
    DoubleKind,
    Phase,
    StepResult,
    VideoPokerState,
    deal,
    double_label,
    draw,
)
from games.video_poker.variants import JB_4LINE, JB_MULTI, RETIRED, Variant

COIN = 10


def seed_of(i: int) -> bytes:
    return i.to_bytes(32, "big")


def outcome(picked: Rank, dealer: Rank) -> StepResult:
    if picked < dealer:
        return StepResult.LOSE
    return StepResult.PUSH if picked == dealer else StepResult.WIN


def double_deck(seed: bytes, n: int) -> list[Card]:
    return RandomStream(seed, double_label(n)).shuffled(full_deck())


def won(seed: bytes, variant: Variant = JB_4LINE) -> VideoPokerState:
    state = deal(variant, COIN, 1, 4, seed)
    return draw(state, state.recommended, seed)


@cache
def winning_seeds() -> tuple[bytes, ...]:
    """The first seeds whose 4-line round (coin 10, 1 coin, proposed holds) wins."""
    return tuple(s for s in map(seed_of, range(200)) if won(s).phase is Phase.WIN_PENDING)


@cache
def pick_cases() -> dict[tuple[Rank, StepResult], tuple[bytes, int]]:
    """For each (dealer rank, result): a winning seed and the face-down index that gives it
    on the first double-up step. Found by searching seeds in order, so it is stable."""
    found: dict[tuple[Rank, StepResult], tuple[bytes, int]] = {}
    i = 0
    while len(found) < len(ALL_CASES):
        seed = seed_of(i)
        i += 1
        if won(seed).phase is not Phase.WIN_PENDING:
            continue
        deck = double_deck(seed, 0)
        for index, card in enumerate(deck[1:5]):
            found.setdefault((deck[0].rank, outcome(card.rank, deck[0].rank)), (seed, index))
    return found


# A two cannot be beaten from below, an ace cannot be topped (ace high, seed 000).
ALL_CASES = [
    (rank, result)
    for rank in Rank
    for result in StepResult
    if not (rank is Rank.TWO and result is StepResult.LOSE)
    and not (rank is Rank.ACE and result is StepResult.WIN)
]


def a_win(variant: Variant = JB_4LINE) -> tuple[VideoPokerState, bytes]:
    seed = winning_seeds()[0]
    return won(seed, variant), seed


# --- the rule for every dealer card ------------------------------------------------------


@pytest.mark.parametrize("kind", list(DoubleKind))
@pytest.mark.parametrize(("dealer", "result"), ALL_CASES)
def test_pick_against_every_dealer_rank(kind: DoubleKind, dealer: Rank, result: StepResult) -> None:
    seed, index = pick_cases()[dealer, result]
    state = won(seed)
    before = state.win
    staked = before if kind is DoubleKind.DOUBLE else before // 2
    banked = before - staked

    picking = double(state, seed) if kind is DoubleKind.DOUBLE else half_double(state, seed)
    step = picking.steps[-1]
    assert picking.phase is Phase.DOUBLE_PICK
    assert (step.n, step.kind, step.win_before, step.staked, step.banked) == (
        0,
        kind,
        before,
        staked,
        banked,
    )
    assert step.dealer_card.rank is dealer
    assert step.cards == () and step.result is None  # face down until the pick

    done = pick(picking, index, seed)
    step = done.steps[-1]
    assert step.result is result
    assert step.index == index
    assert step.picked is not None and step.picked == step.cards[index]
    if result is StepResult.LOSE:
        # seed 000: a lower card loses the stake; a half double keeps the banked half.
        assert done.phase is Phase.SETTLED
        assert done.win == step.amount_after == banked
    elif result is StepResult.PUSH:
        # seed 000: equal cards push; the player decides again.
        assert done.phase is Phase.WIN_PENDING
        assert done.win == step.amount_after == before
    else:
        # seed 000: a higher card doubles the stake.
        assert done.phase is Phase.WIN_PENDING
        assert done.win == step.amount_after == banked + 2 * staked


def test_the_pick_reveals_the_four_face_down_cards_of_the_steps_own_deck() -> None:
    state, seed = a_win()
    picking = double(state, seed)
    done = pick(picking, 2, seed)
    deck = double_deck(seed, 0)
    assert picking.steps[0].dealer_card == deck[0]
    assert done.steps[0].cards == tuple(deck[1:5])
    assert done.steps[0].picked == deck[3]


def test_suits_do_not_matter_only_ranks() -> None:
    seed, index = pick_cases()[Rank.NINE, StepResult.PUSH]
    state = won(seed)
    done = pick(double(state, seed), index, seed)
    step = done.steps[0]
    assert step.picked is not None and step.picked.rank is Rank.NINE
    assert step.picked.suit is not step.dealer_card.suit  # same rank, another card
    assert step.result is StepResult.PUSH


# --- pushes, repeats and the limit -------------------------------------------------------


def test_after_a_push_the_player_decides_again_and_the_next_step_has_a_fresh_deck() -> None:
    seed, index = pick_cases()[Rank.SEVEN, StepResult.PUSH]
    state = won(seed)
    pushed = pick(double(state, seed), index, seed)
    assert can_collect(pushed) and can_double(pushed) and can_half_double(pushed)
    again = double(pushed, seed)
    assert again.steps[1].n == 1
    assert again.steps[1].dealer_card == double_deck(seed, 1)[0]
    assert collect(pushed).win == state.win


def test_double_up_repeats_until_a_loss_which_settles_with_nothing() -> None:
    for seed in winning_seeds()[:10]:
        state = won(seed)
        while state.phase is not Phase.SETTLED:
            state = pick(double(state, seed), 0, seed)
        last = state.steps[-1]
        assert last.result is StepResult.LOSE
        assert state.win == 0
        assert [s.n for s in state.steps] == list(range(len(state.steps)))
        for prev, nxt in zip(state.steps, state.steps[1:], strict=False):
            assert nxt.win_before == prev.amount_after


def test_a_lost_half_double_keeps_the_banked_half() -> None:
    seed, index = pick_cases()[Rank.KING, StepResult.LOSE]
    state = dataclasses.replace(won(seed), win=1001)
    done = pick(half_double(state, seed), index, seed)
    assert done.phase is Phase.SETTLED
    assert done.win == 501


def test_double_up_is_offered_only_while_the_win_is_within_the_limit() -> None:
    state, seed = a_win()
    at_limit = dataclasses.replace(JB_4LINE, double_up_limit=state.win)
    below = dataclasses.replace(JB_4LINE, double_up_limit=state.win - 1)
    assert can_double(won(seed, at_limit)) and can_half_double(won(seed, at_limit))
    over = won(seed, below)
    for action in (double, half_double):
        with pytest.raises(DoubleUpNotOffered) as info:
            action(over, seed)
        assert info.value.code == "double-up-not-offered"
    assert can_collect(over)


def test_a_win_that_grows_past_the_limit_can_only_be_collected() -> None:
    seed, index = pick_cases()[Rank.FIVE, StepResult.WIN]
    state = won(seed, dataclasses.replace(JB_4LINE, double_up_limit=won(seed).win))
    doubled = pick(double(state, seed), index, seed)
    assert doubled.win == 2 * state.win
    assert not can_double(doubled) and not can_half_double(doubled)
    assert collect(doubled).win == 2 * state.win


def test_the_multi_hand_game_has_no_double_up_by_default() -> None:
    # jb-multi rules version 1 (retired: its recorded rounds still replay) waited for a
    # collect after a win; double-up was refused there as it is now.
    multi_v1 = RETIRED[("jb-multi", "1")]
    for seed in map(seed_of, range(50)):
        state = deal(multi_v1, COIN, 1, 3, seed)
        drawn = draw(state, state.recommended, seed)
        if drawn.phase is Phase.WIN_PENDING:
            break
    else:
        pytest.fail("no winning multi-hand round among the first seeds")
    with pytest.raises(DoubleUpNotOffered, match="no double-up"):
        double(drawn, seed)
    assert collect(drawn).phase is Phase.SETTLED


def test_a_multi_hand_win_settles_at_the_draw_and_a_4line_win_waits_for_collect() -> None:
    found = set()
    for seed in map(seed_of, range(80)):
        for variant, lines in ((JB_MULTI, 3), (JB_4LINE, 4)):
            state = deal(variant, COIN, 1, lines, seed)
            drawn = draw(state, state.recommended, seed)
            if drawn.win == 0:
                assert drawn.phase is Phase.SETTLED
                continue
            found.add(variant.id)
            if variant is JB_MULTI:
                assert drawn.phase is Phase.SETTLED  # nothing to choose: no double-up
                with pytest.raises(ActionOutOfPhase, match="cannot collect in phase 'settled'"):
                    collect(drawn)
            else:
                assert drawn.phase is Phase.WIN_PENDING
                assert collect(drawn).phase is Phase.SETTLED
    assert found == {"jb-multi", "jb-4line"}


# --- half double arithmetic --------------------------------------------------------------


@pytest.mark.parametrize("win", range(1, 60))
def test_half_double_stakes_the_half_rounded_down_and_banks_the_rest(win: int) -> None:
    staked, banked = half_stake(win)
    assert staked == win // 2
    assert banked == win - win // 2
    assert staked + banked == win
    assert banked - staked in (0, 1)  # the odd minor unit is banked, never staked


@pytest.mark.parametrize(
    ("win", "staked", "banked"), [(2, 1, 1), (3, 1, 2), (7, 3, 4), (1001, 500, 501)]
)
@pytest.mark.parametrize("result", list(StepResult))
def test_half_double_amounts_with_odd_minor_units(
    win: int, staked: int, banked: int, result: StepResult
) -> None:
    seed, index = pick_cases()[Rank.EIGHT, result]
    state = dataclasses.replace(won(seed), win=win)
    picking = half_double(state, seed)
    assert (picking.steps[0].staked, picking.steps[0].banked) == (staked, banked)
    done = pick(picking, index, seed)
    expected = {
        StepResult.LOSE: banked,
        StepResult.PUSH: win,
        StepResult.WIN: banked + 2 * staked,
    }[result]
    assert done.win == expected


def test_a_win_of_one_minor_unit_cannot_be_half_doubled_but_can_be_doubled() -> None:
    state, seed = a_win()
    tiny = dataclasses.replace(state, win=1)
    before = dataclasses.replace(tiny)
    with pytest.raises(HalfDoubleTooSmall) as info:
        half_double(tiny, seed)
    assert info.value.code == "half-double-too-small"
    assert not can_half_double(tiny)
    assert tiny == before
    assert double(tiny, seed).steps[0].staked == 1


def test_a_real_one_unit_win_cannot_be_half_doubled() -> None:
    cents = dataclasses.replace(JB_4LINE, coin_values=(1,))
    for i in range(200):
        seed = seed_of(i)
        state = deal(cents, 1, 1, 4, seed)
        drawn = draw(state, state.recommended, seed)
        if drawn.win == 1:
            break
    else:
        pytest.fail("no one-unit win among the first seeds")
    with pytest.raises(HalfDoubleTooSmall):
        half_double(drawn, seed)


# --- bad input ---------------------------------------------------------------------------


def test_double_without_a_win_is_out_of_phase() -> None:
    seed = seed_of(0)
    dealt = deal(JB_4LINE, COIN, 1, 4, seed)
    for action in (double, half_double):
        with pytest.raises(ActionOutOfPhase):
            action(dealt, seed)
    lost = next(
        s
        for s in (draw(deal(JB_4LINE, COIN, 1, 4, seed_of(i)), (), seed_of(i)) for i in range(50))
        if s.phase is Phase.SETTLED
    )
    with pytest.raises(ActionOutOfPhase):
        double(lost, seed)
    assert not can_collect(lost) and not can_double(lost)


def test_collect_and_double_are_out_of_phase_during_a_pick() -> None:
    state, seed = a_win()
    picking = double(state, seed)
    for action in (collect, lambda s: double(s, seed), lambda s: half_double(s, seed)):
        with pytest.raises(ActionOutOfPhase):
            action(picking)
    with pytest.raises(ActionOutOfPhase):
        pick(state, 0, seed)  # nothing staked yet


@pytest.mark.parametrize("index", [-1, 4, True, 1.0, None])
def test_a_pick_outside_the_four_face_down_cards_is_refused(index: object) -> None:
    state, seed = a_win()
    picking = double(state, seed)
    before = dataclasses.replace(picking)
    with pytest.raises(InvalidPick) as info:
        pick(picking, index, seed)  # type: ignore[arg-type]  # bad on purpose
    assert info.value.code == "invalid-pick"
    assert not can_pick(picking, index)
    assert picking == before


def test_double_up_steps_with_another_rounds_seed_are_refused() -> None:
    state, seed = a_win()
    other = seed_of(10**6)
    with pytest.raises(SeedMismatch):
        double(state, other)
    picking = double(state, seed)
    with pytest.raises(SeedMismatch):
        pick(picking, 0, other)


def test_collect_settles_with_the_win_and_only_once() -> None:
    state, _seed = a_win()
    settled = collect(state)
    assert settled.phase is Phase.SETTLED and settled.win == state.win
    with pytest.raises(ActionOutOfPhase):
        collect(settled)


# --- what the state holds ----------------------------------------------------------------


def test_a_pending_pick_does_not_hold_the_face_down_cards() -> None:
    state, seed = a_win()
    picking = double(state, seed)
    face_down = double_deck(seed, 0)[1:5]
    assert picking.steps[0].cards == ()
    assert all(repr(c) not in repr(picking.steps[0]) for c in face_down)


def test_every_step_is_its_own_record_and_decision() -> None:
    seed, index = pick_cases()[Rank.SIX, StepResult.WIN]
    state = won(seed)
    one = pick(half_double(state, seed), index, seed)
    two = pick(double(one, seed), 1, seed)
    assert [s.kind for s in two.steps] == [DoubleKind.HALF_DOUBLE, DoubleKind.DOUBLE]
    assert two.decisions[1:] == (
        Decision.half_double(),
        Decision.pick(index),
        Decision.double(),
        Decision.pick(1),
    )
    assert all(s.result is not None and s.amount_after is not None for s in two.steps)


# --- default action and replay -----------------------------------------------------------


def test_an_abandoned_deal_draws_with_the_proposed_holds() -> None:
    seed = seed_of(0)
    state = deal(JB_4LINE, COIN, 1, 4, seed)
    assert default_action(state) == Decision.draw(state.recommended)
    assert apply(state, default_action(state), seed) == draw(state, state.recommended, seed)


def test_an_abandoned_win_is_collected() -> None:
    state, _seed = a_win()
    assert default_action(state) == Decision.collect()


def test_an_abandoned_pick_takes_face_down_card_zero() -> None:
    state, seed = a_win()
    picking = double(state, seed)
    assert default_action(picking) == Decision.pick(0)
    assert apply(picking, default_action(picking), seed) == pick(picking, 0, seed)


def test_a_settled_round_has_no_default_action() -> None:
    state, _seed = a_win()
    with pytest.raises(ActionOutOfPhase):
        default_action(collect(state))


def test_replay_of_the_recorded_decisions_rebuilds_the_round() -> None:
    seed, index = pick_cases()[Rank.TEN, StepResult.PUSH]
    live = won(seed)
    live = pick(double(live, seed), index, seed)
    live = pick(half_double(live, seed), 3, seed)
    if live.phase is Phase.WIN_PENDING:
        live = collect(live)
    again = replay(JB_4LINE, COIN, 1, 4, live.decisions, seed)
    assert again == live
    wire = [d.to_wire() for d in live.decisions]
    assert replay(JB_4LINE, COIN, 1, 4, wire, seed) == live


def test_replay_refuses_a_decision_out_of_phase() -> None:
    state, seed = a_win()
    with pytest.raises(ActionOutOfPhase):
        replay(JB_4LINE, COIN, 1, 4, [*state.decisions, Decision.pick(0)], seed)
