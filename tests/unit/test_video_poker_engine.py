"""Jacks or Better rounds (seed 000, 4 lines; seed 004, multi-hand): deal, holds, draw."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from games.cards import Card, full_deck
from games.errors import ActionOutOfPhase, GameRuleError, InvalidDecision, SeedMismatch
from games.poker import evaluate
from games.rng import RandomStream
from games.video_poker.engine import (
    DEAL_LABEL,
    Decision,
    DecisionKind,
    InvalidCoins,
    InvalidCoinValue,
    InvalidHolds,
    InvalidLines,
    Phase,
    VideoPokerState,
    bet_one,
    can_deal,
    can_draw,
    deal,
    draw,
    line_label,
    normalize_holds,
    stake,
    verify_deal,
)
from games.video_poker.strategy import optimal_hold, winning_cards_hold
from games.video_poker.variants import (
    JB_4LINE,
    JB_MULTI,
    MAX_COINS,
    VARIANTS,
    HoldPolicy,
    Variant,
)


def seed_of(i: int) -> bytes:
    return i.to_bytes(32, "big")


def cards_in(value: object) -> Iterator[Card]:
    """Every Card reachable from a state (dataclass fields, tuples), to audit what it holds."""
    if isinstance(value, Card):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from cards_in(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type | Variant):
        for f in dataclasses.fields(value):
            yield from cards_in(getattr(value, f.name))


SEED = seed_of(1)


# --- variants ---------------------------------------------------------------------------


def test_four_line_variant_has_four_fixed_lines_and_proposes_the_winning_cards() -> None:
    assert VARIANTS["jb-4line"] is JB_4LINE
    assert JB_4LINE.lines == (4,)
    assert JB_4LINE.hold_policy is HoldPolicy.WINNING_CARDS  # seed 000
    assert JB_4LINE.paytable.id == JB_4LINE.paytable_id


def test_multi_hand_variant_offers_seed_004_coin_values_and_a_choice_of_hands() -> None:
    assert VARIANTS["jb-multi"] is JB_MULTI
    assert JB_MULTI.coin_values == (10, 20, 50, 100, 200, 500)  # 0.10 .. 5 in cents
    assert JB_MULTI.lines == (1, 3, 5, 10, 25, 50, 100)
    assert JB_MULTI.hold_policy is HoldPolicy.OPTIMAL  # seed 004: recommended hold


@pytest.mark.parametrize(
    "changes",
    [
        {"lines": ()},
        {"lines": (4, 3)},
        {"lines": (0, 4)},
        {"coin_values": (10, 10)},
        {"coin_values": (10.0,)},
        {"double_up_limit": -1},
        {"paytable_id": "no-such-table"},
        {"rules_version": ""},
    ],
)
def test_an_inconsistent_variant_is_refused(changes: dict[str, object]) -> None:
    with pytest.raises(GameRuleError) as info:
        dataclasses.replace(JB_4LINE, **changes)  # type: ignore[arg-type]  # bad on purpose
    assert info.value.code == "invalid-rules"


# --- bet --------------------------------------------------------------------------------


def test_total_stake_is_coin_value_times_coins_times_lines() -> None:
    state = deal(JB_4LINE, 50, 3, 4, SEED)
    assert state.stake == stake(50, 3, 4) == 600
    assert deal(JB_MULTI, 200, 5, 25, SEED).stake == 25_000


def test_bet_one_adds_a_coin_and_wraps_after_bet_max() -> None:
    assert [bet_one(c) for c in range(1, MAX_COINS + 1)] == [2, 3, 4, 5, 1]
    with pytest.raises(InvalidCoins):
        bet_one(0)


def test_bet_max_is_a_deal_with_five_coins() -> None:
    state = deal(JB_4LINE, 100, MAX_COINS, 4, SEED)
    assert state.coins == 5
    assert state.phase is Phase.DEALT


@pytest.mark.parametrize("coins", [0, 6, -1, True, 2.0, "3"])
def test_coins_outside_one_to_five_are_refused(coins: object) -> None:
    with pytest.raises(InvalidCoins) as info:
        deal(JB_4LINE, 100, coins, 4, SEED)  # type: ignore[arg-type]  # bad on purpose
    assert info.value.code == "invalid-coins"
    assert not can_deal(JB_4LINE, 100, coins, 4)


@pytest.mark.parametrize("coin_value", [0, 15, 1000, 100.0, True, "100"])
def test_a_coin_value_the_variant_does_not_offer_is_refused(coin_value: object) -> None:
    with pytest.raises(InvalidCoinValue) as info:
        verify_deal(JB_MULTI, coin_value, 1, 1)
    assert info.value.code == "invalid-coin-value"
    assert not can_deal(JB_MULTI, coin_value, 1, 1)


@pytest.mark.parametrize(("variant", "lines"), [(JB_4LINE, 1), (JB_4LINE, 3), (JB_MULTI, 2)])
def test_a_line_count_the_variant_does_not_offer_is_refused(variant: Variant, lines: int) -> None:
    with pytest.raises(InvalidLines) as info:
        deal(variant, 100, 1, lines, SEED)
    assert info.value.code == "invalid-lines"


def test_a_configured_coin_value_set_is_honoured() -> None:
    cheap = dataclasses.replace(JB_4LINE, coin_values=(1, 5))
    assert deal(cheap, 5, 1, 4, SEED).stake == 20
    assert not can_deal(cheap, 10, 1, 4)


# --- deal -------------------------------------------------------------------------------


def test_the_deal_shows_the_top_five_cards_of_the_deal_stream() -> None:
    for i in range(20):
        seed = seed_of(i)
        deck = RandomStream(seed, DEAL_LABEL).shuffled(full_deck())
        assert deal(JB_4LINE, 100, 1, 4, seed).dealt == tuple(deck[:5])


def test_four_line_game_proposes_holding_the_cards_that_already_win() -> None:
    for i in range(30):
        state = deal(JB_4LINE, 100, 1, 4, seed_of(i))
        assert state.recommended == tuple(sorted(winning_cards_hold(state.dealt)))


def test_multi_hand_game_proposes_the_hold_with_the_best_expected_return() -> None:
    for i in range(5):
        for coins in (1, 5):
            state = deal(JB_MULTI, 100, coins, 10, seed_of(i))
            best = optimal_hold(state.dealt, JB_MULTI.paytable, coins).hold
            assert state.recommended == tuple(sorted(best))


def test_a_dealt_state_holds_only_the_five_dealt_cards() -> None:
    state = deal(JB_4LINE, 100, 1, 4, SEED)
    assert set(cards_in(state)) == set(state.dealt)
    assert state.holds is None and state.line_results == () and state.win == 0


# --- holds ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "holds", [(5,), (-1,), (0, 0), (1, 2, 1), (True,), ("1",), (0, 1, 2, 3, 4, 4), "01"]
)
def test_holds_out_of_range_or_repeated_are_refused_and_change_nothing(holds: object) -> None:
    state = deal(JB_4LINE, 100, 1, 4, SEED)
    before = dataclasses.replace(state)
    with pytest.raises(InvalidHolds) as info:
        draw(state, holds, SEED)  # type: ignore[arg-type]  # bad on purpose
    assert info.value.code == "invalid-holds"
    assert not can_draw(state, holds)  # type: ignore[arg-type]
    assert state == before and state.phase is Phase.DEALT


def test_holds_are_a_set_of_positions_in_any_order() -> None:
    state = deal(JB_4LINE, 100, 1, 4, SEED)
    assert draw(state, (4, 0, 2), SEED) == draw(state, [0, 2, 4], SEED)
    assert normalize_holds(iter([3, 1])) == (1, 3)


def test_a_second_draw_is_out_of_phase_and_changes_nothing() -> None:
    state = deal(JB_4LINE, 100, 1, 4, SEED)
    drawn = draw(state, (), SEED)
    before = dataclasses.replace(drawn)
    with pytest.raises(ActionOutOfPhase) as info:
        draw(drawn, (), SEED)
    assert info.value.code == "action-out-of-phase"
    assert drawn == before


def test_a_draw_with_another_rounds_seed_is_refused() -> None:
    state = deal(JB_4LINE, 100, 1, 4, SEED)
    with pytest.raises(SeedMismatch):
        draw(state, (), seed_of(2))
    assert not can_draw(state, (), seed_of(2))
    assert can_draw(state, (), SEED)


# --- draw -------------------------------------------------------------------------------


def test_each_line_replaces_discards_from_its_own_deck_in_position_order() -> None:
    state = deal(JB_MULTI, 100, 1, 10, SEED)
    holds = (1, 3)
    drawn = draw(state, holds, SEED)
    rest = [c for c in full_deck() if c not in state.dealt]
    assert len(rest) == 47
    for i, line in enumerate(drawn.line_results):
        deck = RandomStream(SEED, line_label(i)).shuffled(rest)
        expected = list(state.dealt)
        expected[0], expected[2], expected[4] = deck[0], deck[1], deck[2]
        assert line.cards == tuple(expected)


def test_held_cards_are_common_to_all_lines() -> None:
    for i in range(10):
        seed = seed_of(i)
        state = deal(JB_MULTI, 100, 1, 25, seed)
        drawn = draw(state, (0, 4), seed)
        for line in drawn.line_results:
            assert line.cards[0] == state.dealt[0]
            assert line.cards[4] == state.dealt[4]


def test_holding_all_five_keeps_the_dealt_hand_on_every_line() -> None:
    state = deal(JB_4LINE, 100, 2, 4, SEED)
    drawn = draw(state, range(5), SEED)
    assert all(line.cards == state.dealt for line in drawn.line_results)
    assert len({line.rank for line in drawn.line_results}) == 1


def test_a_card_can_be_on_several_lines_but_never_twice_on_one_line() -> None:
    shared = 0
    for i in range(40):
        seed = seed_of(i)
        state = deal(JB_MULTI, 100, 1, 10, seed)
        drawn = draw(state, (), seed)
        for line in drawn.line_results:
            assert len(set(line.cards)) == 5
        replacements = [c for line in drawn.line_results for c in line.cards]
        shared += len(replacements) - len(set(replacements))
    assert shared > 0  # ten 5-card draws from 47 cards overlap almost every time


def test_the_dealt_cards_never_come_back_as_replacements() -> None:
    for i in range(40):
        seed = seed_of(i)
        state = deal(JB_MULTI, 100, 1, 25, seed)
        drawn = draw(state, (), seed)
        for line in drawn.line_results:
            assert not set(line.cards) & set(state.dealt)


def test_lines_draw_different_cards_because_their_streams_differ() -> None:
    for i in range(40):
        seed = seed_of(i)
        drawn = draw(deal(JB_MULTI, 100, 1, 10, seed), (), seed)
        hands = [line.cards for line in drawn.line_results]
        assert len(set(hands)) == len(hands)


def test_each_line_is_paid_on_the_paytable_column_for_the_coins_bet() -> None:
    paytable = JB_4LINE.paytable
    for i in range(60):
        seed = seed_of(i)
        coins = i % 5 + 1
        state = deal(JB_4LINE, 20, coins, 4, seed)
        drawn = draw(state, state.recommended, seed)
        for line in drawn.line_results:
            assert line.rank is evaluate(line.cards)
            assert line.multiplier == paytable.payout(line.rank, coins)
            assert line.win == line.multiplier * 20
        # seed 000: the round's win is the sum of the line wins.
        assert drawn.win == drawn.line_win == sum(line.win for line in drawn.line_results)


def test_a_winning_draw_waits_for_collect_or_double_and_a_losing_draw_settles() -> None:
    seen = set()
    for i in range(40):
        seed = seed_of(i)
        state = deal(JB_4LINE, 100, 1, 4, seed)
        drawn = draw(state, state.recommended, seed)
        expected = Phase.WIN_PENDING if drawn.win > 0 else Phase.SETTLED
        assert drawn.phase is expected
        seen.add(drawn.phase)
    assert seen == {Phase.WIN_PENDING, Phase.SETTLED}


def test_a_drawn_state_holds_only_dealt_and_drawn_cards() -> None:
    state = deal(JB_4LINE, 100, 1, 4, SEED)
    drawn = draw(state, (2,), SEED)
    shown = set(state.dealt) | {c for line in drawn.line_results for c in line.cards}
    assert set(cards_in(drawn)) == shown


def test_the_draw_is_recorded_as_a_decision() -> None:
    state = deal(JB_4LINE, 100, 1, 4, SEED)
    drawn = draw(state, (3, 1), SEED)
    assert drawn.holds == (1, 3)
    assert drawn.decisions == (Decision.draw((1, 3)),)


def test_a_state_is_frozen() -> None:
    state = deal(JB_4LINE, 100, 1, 4, SEED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.win = 5  # type: ignore[misc]  # frozen on purpose
    assert isinstance(state, VideoPokerState)


# --- decisions --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "decision",
    [
        Decision.draw(()),
        Decision.draw((0, 4)),
        Decision.collect(),
        Decision.double(),
        Decision.half_double(),
        Decision.pick(3),
    ],
)
def test_a_decision_survives_its_wire_form(decision: Decision) -> None:
    assert Decision.from_wire(decision.to_wire()) == decision
    assert Decision.from_wire(tuple(decision.to_wire())) == decision


def test_a_decision_kind_may_be_given_as_its_wire_string() -> None:
    assert Decision("pick", index=1) == Decision.pick(1)  # type: ignore[arg-type]
    assert Decision(DecisionKind.DRAW, holds=(2, 0)).holds == (0, 2)


@pytest.mark.parametrize(
    "wire",
    [
        [],
        "draw",
        ["fold"],
        ["draw"],
        ["draw", 3],
        ["pick"],
        ["pick", "1"],
        ["pick", True],
        ["collect", 1],
        ["double", []],
    ],
)
def test_a_malformed_decision_is_refused(wire: object) -> None:
    with pytest.raises(InvalidDecision):
        Decision.from_wire(wire)  # type: ignore[arg-type]  # bad on purpose


def test_a_decision_with_arguments_of_another_kind_is_refused() -> None:
    with pytest.raises(InvalidDecision):
        Decision(DecisionKind.COLLECT, holds=(1,))
    with pytest.raises(InvalidDecision):
        Decision(DecisionKind.DRAW, index=1)
    with pytest.raises(InvalidDecision):
        Decision(DecisionKind.PICK)
    with pytest.raises(InvalidHolds):
        Decision.draw((7,))
