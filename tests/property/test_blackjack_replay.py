"""Properties of the shared blackjack round under any decisions (hypothesis): every seat's
draws are the shoe's cards in order, money is conserved per seat, and replaying the
recorded (shoe seed, start position, bets, decisions per step) gives the live round, as
does replaying each seat alone from the cards the round showed (a live table's replay)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.blackjack.decisions import Decision, DecisionKind
from games.blackjack.replay import SeatPlan, ShownRound, play_round, replay_seat
from games.blackjack.round import (
    close_insurance,
    close_step,
    deal,
    open_round,
    place_bets,
    play_dealer,
)
from games.blackjack.rules import DEFAULT_RULES, Rules, TenUpReading
from games.blackjack.seat import Seat, decide, options
from games.blackjack.settlement import HandOutcome, SeatSettlement, settle_seats
from games.blackjack.shared import Phase, SharedRound
from games.blackjack.shoe import shoe_from_seed
from games.cards import Rank
from tests.unit.blackjack_support import FAKE_CASHOUT

K = DecisionKind
SIDES = ("perfect-pairs", "21+3", "hot-3", "bust-it")


@st.composite
def bets(draw: st.DrawFn) -> tuple[int, dict[str, int]]:
    main = draw(st.integers(100, 5_000))
    sides = {name: draw(st.sampled_from([0, 100, 155])) for name in SIDES}
    return main, sides


def _live(
    data: st.DataObject, rules: Rules, seed: bytes, start: int, n: int
) -> tuple[SharedRound, list[Seat], list[SeatSettlement], list[SeatPlan], list[int]]:
    shoe = shoe_from_seed(rules, seed)
    shared = open_round(rules, start, FAKE_CASHOUT)
    wagers = [data.draw(bets()) for _ in range(n)]
    seats = [place_bets(shared, f"s{i}", m, s) for i, (m, s) in enumerate(wagers)]
    shared, seats = deal(shared, seats, shoe)
    insurance: dict[int, bool] = {}
    decisions: dict[int, dict[int, Decision]] = {i: {} for i in range(n)}
    unfunded: dict[int, set[int]] = {i: set() for i in range(n)}
    if shared.phase is Phase.INSURANCE:
        for i in range(n):
            answer = data.draw(st.sampled_from([None, True, False]))
            if answer is not None:
                funded = data.draw(st.booleans())
                seats[i] = decide(shared, seats[i], "insure" if answer else "no-insurance", funded)
                insurance[i] = answer
                if not funded:
                    unfunded[i].add(0)
        shared, seats, _ = close_insurance(shared, seats, shoe)
    closed: list[int] = []
    while shared.phase is Phase.STEP:
        closed.append(shared.step)
        for i in range(n):
            offered = options(shared, seats[i])
            if not offered:
                continue
            pick = data.draw(st.sampled_from([None, *offered]))  # None: the timer runs out
            if pick is None:
                continue
            funded = data.draw(st.booleans()) if pick.kind in (K.DOUBLE, K.SPLIT) else True
            d = Decision(pick.kind)
            seats[i] = decide(shared, seats[i], d, funded)
            decisions[i][shared.step] = d
            if not funded:
                unfunded[i].add(shared.step)
        shared, seats, _ = close_step(shared, seats, shoe)
    if shared.phase is Phase.DEALER:
        shared = play_dealer(shared, shoe)
    plans = [
        SeatPlan(
            f"s{i}",
            wagers[i][0],
            wagers[i][1],
            insurance.get(i),
            decisions[i],
            frozenset(unfunded[i]),
        )
        for i in range(n)
    ]
    return shared, seats, settle_seats(shared, seats), plans, closed


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    seed=st.binary(min_size=32, max_size=32),
    start=st.integers(0, 340),
    n=st.integers(1, 4),
    all_bets=st.booleans(),
)
def test_any_decisions_draw_in_shoe_order_conserve_money_and_replay_equal_live(
    data: st.DataObject, seed: bytes, start: int, n: int, all_bets: bool
) -> None:
    rules = Rules(ten_up=TenUpReading.ALL_BETS if all_bets else TenUpReading.ORIGINAL_ONLY)
    shared, seats, settled, plans, closed = _live(data, rules, seed, start, n)
    shoe = shoe_from_seed(rules, seed)
    after_initial = list(shoe[start + 4 :])

    for seat, result in zip(seats, settled, strict=True):
        # every seat's draws are the shoe's cards in order, from the first after the four
        drawn = list(seat.drawn_cards())
        assert drawn == after_initial[: len(drawn)]
        # money: what was staked is the bets plus every double, split and insurance taken
        extra = sum(seat.main for a in seat.actions if a.kind in (K.DOUBLE, K.SPLIT))
        insured = (
            rules.insurance_stake(seat.main) if any(a.kind is K.INSURE for a in seat.actions) else 0
        )
        assert result.staked == seat.staked == seat.main + extra + insured + sum(seat.sides)
        parts = (
            sum(h.payout for h in result.hands)
            + result.insurance
            + sum(s.payout for s in result.sides)
        )
        assert result.returned == parts
        for hand in result.hands:
            assert hand.payout >= 0
            if hand.outcome is HandOutcome.BLACKJACK:
                assert hand.payout == hand.stake + hand.stake * 3 // 2
            elif hand.outcome is not HandOutcome.CASHED_OUT:
                assert hand.payout in (0, hand.stake - seat.main, hand.stake, 2 * hand.stake)
    # the dealer draws after the last step, from the next card on
    after_steps = start + 4 + len(shared.step_cards)
    assert list(shared.dealer_draws) == list(shoe[after_steps:][: len(shared.dealer_draws)])
    # replay from (rules, shoe seed, start, bets and decisions per step) equals the live round
    record = play_round(rules, shoe_from_seed(rules, seed), start, plans, cashout=FAKE_CASHOUT)
    assert record.shared == shared
    assert list(record.seats) == seats
    assert list(record.settlements) == settled
    # each seat alone, from the cards the round showed and its own inputs
    assert shared.up is not None
    shown = ShownRound.of(
        rules,
        start,
        player_cards=shared.player_cards,
        up=shared.up,
        hole=shared.hole,
        step_cards=shared.step_cards,
        dealer_draws=shared.dealer_draws,
        insurance_closed=shared.up.rank is Rank.ACE,
        closed_steps=closed,
        cashout=FAKE_CASHOUT,
    )
    assert shown.now == replace(shared, cut_out=False)
    assert [replay_seat(shown, plan) for plan in plans] == seats


@settings(max_examples=40, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32))
def test_rounds_played_through_a_whole_shoe_end_after_the_cut_card(seed: bytes) -> None:
    shoe = shoe_from_seed(DEFAULT_RULES, seed)
    start: int | None = 0
    rounds = 0
    while start is not None:
        record = play_round(DEFAULT_RULES, shoe, start, [SeatPlan("a", 100)], cashout=FAKE_CASHOUT)
        assert record.shared.start == start
        nxt = record.shared.next_position
        start = None if record.shared.cut_out else nxt
        rounds += 1
        if start is None:
            assert nxt > shoe.cut_index  # the round that took the cut card finished
    assert rounds >= 312 // 12
