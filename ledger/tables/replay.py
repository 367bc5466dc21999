"""A live round's engine state rebuilt from its log (never trusted beyond the events).

The shared state comes from the table round's events (the cards shown, the phase), each
seat's state from its own bets and decisions replayed through the pure engine's per-seat
functions step by step, exactly as :func:`games.blackjack.close_step` applies them (close
each seat, then give the step card to every drawing hand). So a restarted runner, a
player's command and the auditor all see the same seats without any undealt card: only
the runner, when it closes a window, reads the next card from the shoe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from games.blackjack import (
    Phase,
    Rules,
    Seat,
    SharedRound,
    close_insurance_seat,
    close_seat,
    deal_seat,
    decide,
    give_card,
    open_round,
    place_bets,
)
from games.blackjack.shared import CashoutOffers
from games.cards import Card, Rank
from ledger.tables.seat import TableSeat
from ledger.tables.table_round import TableRound


def card(text: str) -> Card:
    return Card.parse(text)


def closed_steps(rnd: TableRound) -> list[int]:
    return sorted(int(k) for k in rnd.automatic if k != "0")


def automatic_at(rnd: TableRound, step: int) -> frozenset[str]:
    return rnd.automatic_seats.get(str(step), frozenset())


def _dealt(rnd: TableRound, base: SharedRound) -> SharedRound:
    up = card(rnd.up or "")
    ace_up = up.rank is Rank.ACE
    return replace(
        base,
        phase=Phase.INSURANCE if ace_up else Phase.STEP,
        player_cards=tuple(card(c) for c in rnd.player_cards),
        up=up,
        step=0 if ace_up else 1,
    )


def _step_state(after_deal: SharedRound, rnd: TableRound, k: int) -> SharedRound:
    return replace(
        after_deal,
        phase=Phase.STEP,
        step=k,
        step_cards=tuple(card(c) for c in rnd.step_cards[: k - 1]),
        peeked=after_deal.phase is Phase.INSURANCE,
    )


def shared_of(rnd: TableRound, rules: Rules, cashout: CashoutOffers | None = None) -> SharedRound:
    """The engine's shared round as the table round's events have left it."""
    base = open_round(rules, rnd.start, cashout)
    if rnd.up is None:
        return base
    dealt = _dealt(rnd, base)
    if rnd.phase == Phase.INSURANCE.value:
        return dealt
    if rnd.peeked and rnd.hole is not None and not rnd.dealer_draws and rnd.phase != "step":
        hole = card(rnd.hole)
        if dealt.up is not None and dealt.up.rank is Rank.ACE and _is_bj(dealt.up, hole):
            return replace(dealt, phase=Phase.SETTLED, hole=hole, peeked=True)
    shown = tuple(card(c) for c in rnd.step_cards)
    if rnd.phase == "step":
        return replace(_step_state(dealt, rnd, rnd.step), step_cards=shown)
    at_dealer = replace(
        dealt, phase=Phase.DEALER, step_cards=shown, peeked=dealt.phase is Phase.INSURANCE
    )
    if rnd.hole is None:
        return at_dealer
    return replace(
        at_dealer,
        phase=Phase.SETTLED,
        hole=card(rnd.hole),
        dealer_draws=tuple(card(c) for c in rnd.dealer_draws),
    )


def _is_bj(up: Card, hole: Card) -> bool:
    values = {up.rank, hole.rank}
    tens = {Rank.TEN, Rank.JACK, Rank.QUEEN, Rank.KING}
    return Rank.ACE in values and bool(values & tens)


Observer = Callable[[SharedRound, Seat, str], None]
"""Called with the state a player decided in and what they asked for (statistics)."""


def _decide(
    shared: SharedRound, seat: Seat, recorded: list[object] | None, observe: Observer | None
) -> Seat:
    if recorded is None:
        return seat
    kind, requested, reason = recorded
    asked = str(requested if requested is not None else kind)
    if observe is not None:
        observe(shared, seat, asked)
    return decide(shared, seat, asked, funded=reason is None)


class RoundStates:
    """The shared states every seat of one round version replays through: the open round,
    the deal, each closed step and now. They depend on the table round alone, so a
    handler computes them once for all the seats it replays (:meth:`TableBase.states`
    keeps them per committed round version) instead of once per seat."""

    def __init__(self, rnd: TableRound, rules: Rules, cashout: CashoutOffers | None = None):
        self.rules = rules
        self.base = open_round(rules, rnd.start, cashout)
        self.dealt = None if rnd.up is None else _dealt(rnd, self.base)
        self.steps: list[tuple[str, SharedRound, frozenset[str], Card | None]] = []
        if self.dealt is not None:
            for k in closed_steps(rnd):
                shown = card(rnd.step_cards[k - 1]) if k - 1 < len(rnd.step_cards) else None
                self.steps.append(
                    (str(k), _step_state(self.dealt, rnd, k), automatic_at(rnd, k), shown)
                )
        self.insurance_closed = "0" in rnd.automatic
        self.insured_automatically = automatic_at(rnd, 0)
        self.open_step = str(rnd.step) if rnd.phase == "step" else None
        self.shared = shared_of(rnd, rules, cashout)
        """The shared round as the table round's events have left it (:func:`shared_of`)."""


def seat_of(
    rnd: TableRound,
    rules: Rules,
    record: TableSeat,
    cashout: CashoutOffers | None = None,
    observe: Observer | None = None,
    states: RoundStates | None = None,
) -> Seat:
    """One seat's engine state now: its bets, the deal, its decisions step by step
    (``states``: the round's shared states, if the caller has them already)."""
    st = states if states is not None else RoundStates(rnd, rules, cashout)
    bets = record.bets()
    sides = {k: v for k, v in bets.items() if k != "main"}
    sid = str(record.id)
    seat = place_bets(st.base, sid, bets.get("main", 0), sides)
    dealt = st.dealt
    if dealt is None:
        return seat
    seat = deal_seat(dealt, seat)
    decisions = record.decisions
    if dealt.phase is Phase.INSURANCE:
        if sid not in st.insured_automatically:
            seat = _decide(dealt, seat, decisions.get("0"), observe)
        if not st.insurance_closed:
            return seat
        seat = close_insurance_seat(seat, st.rules.insurance_stake(seat.main) > 0)
    for k, shared_k, automatic, step_card in st.steps:
        if sid not in automatic:
            seat = _decide(shared_k, seat, decisions.get(k), observe)
        seat = close_seat(shared_k, seat)
        seat = give_card(seat, step_card)
    if st.open_step is not None:
        seat = _decide(st.shared, seat, decisions.get(st.open_step), observe)
    return seat
