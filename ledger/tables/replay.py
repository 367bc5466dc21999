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


def automatic_at(rnd: TableRound, step: int) -> set[str]:
    return {a[0] for a in rnd.automatic.get(str(step), [])}


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


def seat_of(
    rnd: TableRound,
    rules: Rules,
    record: TableSeat,
    cashout: CashoutOffers | None = None,
    observe: Observer | None = None,
) -> Seat:
    """One seat's engine state now: its bets, the deal, its decisions step by step."""
    base = open_round(rules, rnd.start, cashout)
    bets = record.bets()
    sides = {k: v for k, v in bets.items() if k != "main"}
    sid = str(record.id)
    seat = place_bets(base, sid, bets.get("main", 0), sides)
    if rnd.up is None:
        return seat
    dealt = _dealt(rnd, base)
    seat = deal_seat(dealt, seat)
    if dealt.phase is Phase.INSURANCE:
        if sid not in automatic_at(rnd, 0):
            seat = _decide(dealt, seat, record.decisions.get("0"), observe)
        if "0" not in rnd.automatic:
            return seat
        seat = close_insurance_seat(seat, rules.insurance_stake(seat.main) > 0)
    for k in closed_steps(rnd):
        shared_k = _step_state(dealt, rnd, k)
        if sid not in automatic_at(rnd, k):
            seat = _decide(shared_k, seat, record.decisions.get(str(k)), observe)
        seat = close_seat(shared_k, seat)
        step_card = card(rnd.step_cards[k - 1]) if k - 1 < len(rnd.step_cards) else None
        seat = give_card(seat, step_card)
    if rnd.phase == "step":
        shared = shared_of(rnd, rules, cashout)
        seat = _decide(shared, seat, record.decisions.get(str(rnd.step)), observe)
    return seat
