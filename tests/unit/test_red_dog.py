"""Red Dog rules (seed 003) through the engine's public API."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from decimal import Decimal

import pytest

from games.cards import Card
from games.errors import (
    ActionOutOfPhase,
    BetAboveMaximum,
    BetBelowMinimum,
    GameRuleError,
    InvalidAmount,
    InvalidDecision,
    InvalidRules,
    RaiseTooLarge,
    SeedMismatch,
)
from games.red_dog import (
    DEFAULT_RULES,
    PAYS,
    PAYTABLE_ID,
    Decision,
    DecisionKind,
    Outcome,
    Phase,
    RedDogRules,
    RedDogState,
    apply,
    can_deal,
    can_raise,
    can_see,
    deal,
    default_action,
    raise_bet,
    replay,
    see,
    shuffled_deck,
    spread_of,
    verify_deal,
    verify_raise,
    verify_see,
)

RULES = RedDogRules(min_bet=100, max_bet=10_000)
BET = 1_000

Deal = tuple[int, int, int]  # ranks of deck[0], deck[1], deck[2]


def seed_where(predicate: Callable[[Deal], bool], tag: str = "") -> bytes:
    """The first seed of a fixed sequence whose deck starts with ranks satisfying
    ``predicate``; deterministic, so a failing test always fails the same way."""
    for i in range(200_000):
        seed = hashlib.sha256(f"red-dog-unit/{tag}/{i}".encode()).digest()
        a, b, c = shuffled_deck(seed)[:3]
        if predicate((a.rank, b.rank, c.rank)):
            return seed
    raise AssertionError("no seed found")


def spread_is(spread: int) -> Callable[[Deal], bool]:
    return lambda d: d[0] != d[1] and abs(d[0] - d[1]) - 1 == spread


def between(d: Deal) -> bool:
    return min(d[0], d[1]) < d[2] < max(d[0], d[1])


def open_round(seed: bytes | None = None, bet: int = BET) -> tuple[RedDogState, bytes]:
    seed = seed or seed_where(lambda d: abs(d[0] - d[1]) >= 2, "open")
    state = deal(RULES, bet, seed)
    assert state.phase is Phase.AWAITING_DECISION
    return state, seed


# --- the paytable and spreads -----------------------------------------------------------


def test_paytable_is_seed_003() -> None:
    assert dict(PAYS) == {1: 5, 2: 4, 3: 2, 4: 1, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1, 10: 1, 11: 1}
    assert RULES.paytable_id == PAYTABLE_ID


def test_paytable_cannot_be_changed_at_run_time() -> None:
    with pytest.raises(TypeError):
        PAYS[1] = 50  # type: ignore[index]


def test_spread_is_the_number_of_ranks_strictly_between() -> None:
    from games.cards import Rank

    # seed 003's own examples: 2 and 4 have a spread of 1; 6 and Q a spread of 5.
    assert spread_of(Rank.TWO, Rank.FOUR) == 1
    assert spread_of(Rank.SIX, Rank.QUEEN) == 5
    assert spread_of(Rank.ACE, Rank.TWO) == 11
    assert spread_of(Rank.NINE, Rank.TEN) == 0
    assert spread_of(Rank.KING, Rank.KING) is None


# --- deal: consecutive and pairs settle at once -----------------------------------------


def test_consecutive_cards_push() -> None:
    seed = seed_where(spread_is(0), "consecutive")
    state = deal(RULES, BET, seed)
    assert state.phase is Phase.SETTLED
    assert state.outcome is Outcome.PUSH_CONSECUTIVE
    assert state.spread == 0
    assert len(state.cards) == 2  # the round is over: no third card is shown
    assert state.payout == BET == state.staked
    assert state.net == 0


def test_pair_then_third_of_a_kind_pays_eleven_to_one() -> None:
    seed = seed_where(lambda d: d[0] == d[1] == d[2], "trips")
    state = deal(RULES, BET, seed)
    assert state.phase is Phase.SETTLED
    assert state.outcome is Outcome.THREE_OF_A_KIND
    assert len({c.rank for c in state.cards}) == 1 and len(state.cards) == 3
    assert state.payout == BET + 11 * BET
    assert state.net == 11 * BET


def test_pair_without_a_third_of_the_rank_pushes() -> None:
    seed = seed_where(lambda d: d[0] == d[1] != d[2], "pair")
    state = deal(RULES, BET, seed)
    assert state.outcome is Outcome.PUSH_PAIR
    assert state.spread is None
    assert len(state.cards) == 3
    assert state.payout == BET


def test_a_pair_offers_no_raise() -> None:
    seed = seed_where(lambda d: d[0] == d[1], "pair-raise")
    state = deal(RULES, BET, seed)
    assert not can_raise(state, BET)
    assert state.max_raise == 0


def test_other_cards_show_the_spread_and_wait_for_a_decision() -> None:
    state, _ = open_round()
    assert state.outcome is None
    assert state.spread is not None and 1 <= state.spread <= 11
    assert state.payout == 0
    assert state.staked == BET
    assert len(state.cards) == 2  # the third card is not in the state until it is drawn
    assert can_see(state) and can_raise(state, BET)


# --- settlement -------------------------------------------------------------------------


def test_spread_one_pays_five_to_one() -> None:
    seed = seed_where(lambda d: spread_is(1)(d) and between(d), "s1")
    state = see(deal(RULES, BET, seed), seed)
    assert (state.outcome, state.spread, state.payout) == (Outcome.WIN, 1, BET + 5 * BET)


@pytest.mark.parametrize(("spread", "odds"), [(2, 4), (3, 2), (4, 1), (7, 1), (11, 1)])
def test_spread_pays_its_odds(spread: int, odds: int) -> None:
    seed = seed_where(lambda d: spread_is(spread)(d) and between(d), f"s{spread}")
    state = see(deal(RULES, BET, seed), seed)
    assert state.outcome is Outcome.WIN
    assert state.payout == BET * (1 + odds)


def test_a_win_after_a_raise_pays_on_bet_and_raise() -> None:
    seed = seed_where(lambda d: spread_is(2)(d) and between(d), "raise-win")
    state = raise_bet(deal(RULES, BET, seed), 400, seed)
    assert state.raise_amount == 400
    assert state.staked == 1_400
    assert state.payout == 1_400 * 5  # seed 003: spread 2 pays 4:1 on the whole stake


def test_third_card_outside_the_spread_loses_bet_and_raise() -> None:
    seed = seed_where(lambda d: abs(d[0] - d[1]) >= 2 and not between(d), "lose")
    state = raise_bet(deal(RULES, BET, seed), BET, seed)
    assert state.outcome is Outcome.LOSE
    assert state.payout == 0
    assert state.net == -2 * BET


def test_third_card_equal_to_an_end_card_loses() -> None:
    seed = seed_where(lambda d: abs(d[0] - d[1]) >= 2 and d[2] in (d[0], d[1]), "edge")
    state = see(deal(RULES, BET, seed), seed)
    assert state.outcome is Outcome.LOSE  # seed 003: strictly between


# --- raise limits -----------------------------------------------------------------------


def test_raise_above_original_bet_is_refused() -> None:
    state, seed = open_round()
    assert not can_raise(state, BET + 1, seed)
    with pytest.raises(RaiseTooLarge) as info:
        raise_bet(state, BET + 1, seed)
    assert info.value.code == "raise-too-large"
    assert "original bet" in str(info.value)
    assert state.phase is Phase.AWAITING_DECISION and state.raise_amount == 0


def test_raise_of_one_unit_up_to_the_original_bet_is_accepted() -> None:
    state, seed = open_round()
    for amount in (1, BET // 2, BET):
        assert can_raise(state, amount, seed)
        assert raise_bet(state, amount, seed).staked == BET + amount


def test_raise_beyond_the_table_maximum_is_refused() -> None:
    state, seed = open_round(bet=8_000)
    assert state.max_raise == 2_000
    assert can_raise(state, 2_000, seed)
    with pytest.raises(BetAboveMaximum, match="bet plus raise 10001"):
        verify_raise(state, 2_001, seed)


def test_no_raise_at_the_table_maximum() -> None:
    state, seed = open_round(bet=RULES.max_bet)
    assert state.max_raise == 0
    assert not can_raise(state, 1, seed)
    assert can_see(state, seed)


@pytest.mark.parametrize("amount", [0, -5, 2.5, 100.0, True, False, "100", None, Decimal(100)])
def test_bad_raise_amounts_are_refused_and_leave_the_round_open(amount: object) -> None:
    state, seed = open_round()
    before = state
    assert not can_raise(state, amount, seed)
    with pytest.raises(InvalidAmount) as info:
        raise_bet(state, amount, seed)  # type: ignore[arg-type]
    assert info.value.code == "invalid-amount"
    assert state == before
    assert see(state, seed).phase is Phase.SETTLED  # still playable


# --- bets -------------------------------------------------------------------------------


def test_bet_below_minimum_is_refused() -> None:
    assert not can_deal(RULES, 99)
    with pytest.raises(BetBelowMinimum) as info:
        deal(RULES, 99, bytes(32))
    assert info.value.code == "bet-below-minimum"
    assert (info.value.bet, info.value.minimum) == (99, 100)
    assert "minimum 100" in str(info.value)


def test_bet_above_maximum_is_refused() -> None:
    with pytest.raises(BetAboveMaximum, match="maximum 10000"):
        deal(RULES, 10_001, bytes(32))


def test_bets_at_the_limits_are_accepted() -> None:
    assert can_deal(RULES, RULES.min_bet) and can_deal(RULES, RULES.max_bet)
    verify_deal(RULES, RULES.min_bet)


@pytest.mark.parametrize(
    "bet", [0, -1, -1_000, 500.0, 0.5, True, False, "500", None, Decimal(500), [500]]
)
def test_zero_negative_non_int_and_bool_bets_are_refused(bet: object) -> None:
    assert not can_deal(RULES, bet)
    with pytest.raises(InvalidAmount) as info:
        deal(RULES, bet, bytes(32))  # type: ignore[arg-type]
    assert info.value.value is bet
    assert isinstance(info.value, GameRuleError) and isinstance(info.value, ValueError)


# --- phases -----------------------------------------------------------------------------


def test_actions_after_settlement_are_out_of_phase() -> None:
    state, seed = open_round()
    done = see(state, seed)
    assert not can_see(done) and not can_raise(done, 1)
    actions: list[Callable[[], RedDogState]] = [
        lambda: see(done, seed),
        lambda: raise_bet(done, 1, seed),
    ]
    for action in actions:
        with pytest.raises(ActionOutOfPhase) as info:
            action()
        assert info.value.code == "action-out-of-phase"
        assert info.value.phase == "settled"
    with pytest.raises(ActionOutOfPhase):
        default_action(done)


def test_a_pushed_round_takes_no_decision() -> None:
    seed = seed_where(spread_is(0), "push-phase")
    state = deal(RULES, BET, seed)
    with pytest.raises(ActionOutOfPhase, match="cannot see in phase 'settled'"):
        verify_see(state)


def test_the_seed_must_match_the_cards_shown() -> None:
    state, _ = open_round()
    other = seed_where(lambda d: True, "other")
    assert not can_see(state, other)
    with pytest.raises(SeedMismatch):
        see(state, other)
    with pytest.raises(SeedMismatch):
        raise_bet(state, 1, other)


def test_states_are_frozen() -> None:
    state, _ = open_round()
    with pytest.raises(FrozenInstanceError):
        state.bet = 5  # type: ignore[misc]


# --- default action and replay ----------------------------------------------------------


def test_default_action_is_to_see_without_raising() -> None:
    state, seed = open_round()
    decision = default_action(state)
    assert decision == Decision(DecisionKind.SEE)
    done = apply(state, decision, seed)
    assert done.raise_amount == 0
    assert done == see(state, seed)


def test_replay_reproduces_the_live_round() -> None:
    state, seed = open_round()
    live = raise_bet(state, 250, seed)
    assert replay(RULES, BET, [Decision.raise_by(250)], seed) == live
    assert replay(RULES, BET, [("raise", 250)], seed) == live
    assert replay(RULES, BET, [["raise", 250]], seed) == live
    assert replay(RULES, BET, [("see",)], seed) == see(state, seed)


def test_replay_without_decisions_stops_where_the_round_stopped() -> None:
    state, seed = open_round()
    assert replay(RULES, BET, [], seed) == state


def test_replay_refuses_a_decision_after_settlement() -> None:
    _, seed = open_round()
    with pytest.raises(ActionOutOfPhase):
        replay(RULES, BET, [("see",), ("see",)], seed)


@pytest.mark.parametrize(
    "wire",
    [(), ("fold",), ("see", 5), ("raise",), ("raise", 5, 6), ("raise", "5"), "see", 7, [None]],
)
def test_malformed_decisions_are_refused(wire: object) -> None:
    with pytest.raises((InvalidDecision, InvalidAmount)):
        Decision.from_wire(wire)  # type: ignore[arg-type]


def test_decisions_round_trip_through_the_wire_form() -> None:
    for d in (Decision.see(), Decision.raise_by(300)):
        assert Decision.from_wire(d.to_wire()) == d
    assert Decision.raise_by(300).to_wire() == ["raise", 300]


# --- rules and wire values --------------------------------------------------------------


def test_table_rules_are_validated() -> None:
    with pytest.raises(InvalidRules):
        RedDogRules(min_bet=500, max_bet=100)
    with pytest.raises(InvalidRules):
        RedDogRules(min_bet=0, max_bet=100)
    with pytest.raises(InvalidRules, match="not implemented"):
        RedDogRules(min_bet=1, max_bet=100, rules_version="red-dog/2")
    assert DEFAULT_RULES.min_bet <= DEFAULT_RULES.max_bet


def test_wire_values_are_stable() -> None:
    assert [p.value for p in Phase] == ["decide", "settled"]
    assert [o.value for o in Outcome] == [
        "push-consecutive",
        "push-pair",
        "three-of-a-kind",
        "win",
        "lose",
    ]
    assert [k.value for k in DecisionKind] == ["raise", "see"]
    assert DEFAULT_RULES.rules_version == "red-dog/1"


def test_the_deck_derivation_is_pinned() -> None:
    # Golden vector: changing the label or the shuffle would break replay of stored rounds.
    deck = shuffled_deck(bytes([4]) * 32)
    assert " ".join(str(c) for c in deck[:8]) == GOLDEN_DECK_4
    assert sorted(deck) == sorted(Card.from_id(i) for i in range(52))


GOLDEN_DECK_4 = "3d Kd Js 6d 3h 7h Td 9s"  # seed bytes([4]) * 32, label red-dog/deck
