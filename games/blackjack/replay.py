"""Replay: a round as a pure function of (rules, shoe, start position, every seat's bets and
decisions per step). The ledger records exactly these; :func:`play_round` re-derives every
card shown, every automatic action and every payout from them.

>>> from games.blackjack.rules import DEFAULT_RULES
>>> from games.blackjack.shoe import Shoe
>>> class Flat:
...     def offer(self, total: int, soft: bool, up: int) -> int | None:
...         return 50
>>> shoe = Shoe.of("Th 9c 7d 8s 4c 5h")
>>> record = play_round(DEFAULT_RULES, shoe, 0, [SeatPlan("a", 100)], cashout=Flat())
>>> [str(c) for c in record.shared.dealer_cards], record.settlements[0].returned
(['9c', '8s'], 100)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from games.blackjack.decisions import Decision
from games.blackjack.paytables import SideBet
from games.blackjack.round import (
    InsuranceClosed,
    StepClosed,
    close_insurance,
    close_step,
    deal,
    open_round,
    place_bets,
    play_dealer,
)
from games.blackjack.rules import Rules
from games.blackjack.seat import Seat, decide
from games.blackjack.settlement import SeatSettlement, settle_seats
from games.blackjack.shared import CashoutOffers, Phase, SharedRound
from games.cards import Card

__all__ = ["RoundRecord", "SeatPlan", "play_round"]


@dataclass(frozen=True)
class SeatPlan:
    """One seat's recorded inputs. ``decisions[k]`` is its decision in step ``k`` (a step
    without one took the automatic action); ``insurance`` its answer (``None``: none
    given); ``unfunded`` the steps (0 = insurance) whose double, split or insurance the
    balance did not cover."""

    seat_id: str
    main: int
    sides: Mapping[SideBet | str, int] = field(default_factory=dict)
    insurance: bool | None = None
    decisions: Mapping[int, Decision | str] = field(default_factory=dict)
    unfunded: frozenset[int] = frozenset()


@dataclass(frozen=True)
class RoundRecord:
    """Everything a played round produced."""

    shared: SharedRound
    seats: tuple[Seat, ...]
    insurance: InsuranceClosed | None
    steps: tuple[StepClosed, ...]
    settlements: tuple[SeatSettlement, ...]


def play_round(
    rules: Rules,
    shoe: Sequence[Card],
    start: int,
    plans: Sequence[SeatPlan],
    cashout: CashoutOffers | None = None,
) -> RoundRecord:
    """Play one round from its recorded inputs, start to settlement."""
    shared = open_round(rules, start, cashout)
    seats = [place_bets(shared, p.seat_id, p.main, p.sides) for p in plans]
    shared, seats = deal(shared, seats, shoe)
    insured: InsuranceClosed | None = None
    if shared.phase is Phase.INSURANCE:
        for i, plan in enumerate(plans):
            if plan.insurance is not None:
                answer = "insure" if plan.insurance else "no-insurance"
                seats[i] = decide(shared, seats[i], answer, funded=0 not in plan.unfunded)
        shared, seats, insured = close_insurance(shared, seats, shoe)
    steps: list[StepClosed] = []
    while shared.phase is Phase.STEP:
        k = shared.step
        for i, plan in enumerate(plans):
            wanted = plan.decisions.get(k)
            if wanted is not None:
                seats[i] = decide(shared, seats[i], wanted, funded=k not in plan.unfunded)
        shared, seats, closed = close_step(shared, seats, shoe)
        steps.append(closed)
    if shared.phase is Phase.DEALER:
        shared = play_dealer(shared, shoe)
    settlements = settle_seats(shared, seats)
    return RoundRecord(shared, tuple(seats), insured, tuple(steps), tuple(settlements))
