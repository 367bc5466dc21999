"""Replay: a round as a pure function of (rules, shoe, start position, every seat's bets and
decisions per step). The ledger records exactly these; :func:`play_round` re-derives every
card shown, every automatic action and every payout from them.

A live table's round is replayed one seat at a time from the cards it has shown
(:class:`ShownRound`, its shared states) and the seat's own recorded inputs
(:func:`replay_seat`): the same steps as :func:`play_round`, in the same order (a seat's
insurance answer, then per step its decision and the step's close), so a seat's state never
needs another seat's, nor a card the round has not shown. A round of thousands of seats is
read one seat per command.

>>> from games.blackjack.rules import DEFAULT_RULES
>>> from games.blackjack.shoe import Shoe
>>> class Flat:
...     def offer(self, total: int, soft: bool, up: int) -> int | None:
...         return 50
>>> shoe = Shoe.of("Th 9c 7d 8s 4c 5h")
>>> record = play_round(DEFAULT_RULES, shoe, 0, [SeatPlan("a", 100)], cashout=Flat())
>>> [str(c) for c in record.shared.dealer_cards], record.settlements[0].returned
(['9c', '8s'], 100)

The same seat from the cards the round showed (here: every one, the round is over):

>>> shown = ShownRound.of(DEFAULT_RULES, 0, player_cards=("Th", "7d"), up="9c", hole="8s",
...     step_cards=(), dealer_draws=(), closed_steps=(1,), cashout=Flat())
>>> replay_seat(shown, SeatPlan("a", 100)) == record.seats[0]
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from games.blackjack.decisions import Decision
from games.blackjack.hand import total_of
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
from games.blackjack.seat import (
    Seat,
    close_insurance_seat,
    close_seat,
    deal_seat,
    decide,
    give_card,
)
from games.blackjack.settlement import SeatSettlement, settle_seats
from games.blackjack.shared import CashoutOffers, Phase, SharedRound
from games.cards import Card, Rank

__all__ = ["Observer", "RoundRecord", "SeatPlan", "ShownRound", "play_round", "replay_seat"]


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


Observer = Callable[[SharedRound, Seat, str], None]
"""Called with the state a seat decided in and what it asked for (decision statistics)."""


def _insure(shared: SharedRound, seat: Seat, plan: SeatPlan, observe: Observer | None) -> Seat:
    """The seat's insurance answer, if it gave one."""
    if plan.insurance is None:
        return seat
    answer = "insure" if plan.insurance else "no-insurance"
    if observe is not None:
        observe(shared, seat, answer)
    return decide(shared, seat, answer, funded=0 not in plan.unfunded)


def _decide(shared: SharedRound, seat: Seat, plan: SeatPlan, observe: Observer | None) -> Seat:
    """The seat's decision in the open step ``shared.step``, if it made one."""
    k = shared.step
    wanted = plan.decisions.get(k)
    if wanted is None:
        return seat
    if observe is not None:
        observe(shared, seat, str(wanted))
    return decide(shared, seat, wanted, funded=k not in plan.unfunded)


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
        seats = [_insure(shared, s, p, None) for s, p in zip(seats, plans, strict=True)]
        shared, seats, insured = close_insurance(shared, seats, shoe)
    steps: list[StepClosed] = []
    while shared.phase is Phase.STEP:
        seats = [_decide(shared, s, p, None) for s, p in zip(seats, plans, strict=True)]
        shared, seats, closed = close_step(shared, seats, shoe)
        steps.append(closed)
    if shared.phase is Phase.DEALER:
        shared = play_dealer(shared, shoe)
    settlements = settle_seats(shared, seats)
    return RoundRecord(shared, tuple(seats), insured, tuple(steps), tuple(settlements))


def _cards(cards: Iterable[Card | str]) -> tuple[Card, ...]:
    return tuple(c if isinstance(c, Card) else Card.parse(c) for c in cards)


@dataclass(frozen=True)
class ShownRound:
    """A round's shared states as far as its cards have been shown: the open round, the
    deal, each closed step (with the card it showed) and the round now. They depend on the
    shared cards alone, so they are built once for every seat replayed through them
    (:func:`replay_seat`), and never hold a card the round has not shown."""

    base: SharedRound
    dealt: SharedRound | None
    """After the deal (None: not dealt yet)."""
    insurance_closed: bool
    steps: tuple[tuple[SharedRound, Card | None], ...]
    """Each closed step's state (its decisions open) and the card it showed (None: none)."""
    now: SharedRound
    """The round as it stands: its open window, or past the steps."""

    @classmethod
    def of(
        cls,
        rules: Rules,
        start: int,
        *,
        player_cards: Sequence[Card | str] = (),
        up: Card | str | None = None,
        hole: Card | str | None = None,
        step_cards: Sequence[Card | str] = (),
        dealer_draws: Sequence[Card | str] = (),
        insurance_closed: bool = False,
        closed_steps: Sequence[int] = (),
        open_step: int | None = None,
        cashout: CashoutOffers | None = None,
    ) -> ShownRound:
        """The states of a round from the cards it has shown: ``closed_steps`` the decision
        steps closed so far, ``open_step`` the one open now (None: none), ``hole`` once the
        dealer showed it (a blackjack found at the peek, or the dealer's turn)."""
        base = open_round(rules, start, cashout)
        if up is None:
            return cls(base, None, False, (), base)
        up_card, players = _cards([up])[0], _cards(player_cards)
        shown, draws = _cards(step_cards), _cards(dealer_draws)
        ace_up = up_card.rank is Rank.ACE
        dealt = replace(
            base,
            phase=Phase.INSURANCE if ace_up else Phase.STEP,
            player_cards=players,
            up=up_card,
            step=0 if ace_up else 1,
        )
        steps = tuple(
            (
                replace(dealt, phase=Phase.STEP, step=k, step_cards=shown[: k - 1], peeked=ace_up),
                shown[k - 1] if k - 1 < len(shown) else None,
            )
            for k in closed_steps
        )
        last = closed_steps[-1] if closed_steps else dealt.step  # the steps over: the last
        now: SharedRound
        if ace_up and not insurance_closed:
            now = dealt
        elif open_step is not None:
            now = replace(dealt, phase=Phase.STEP, step=open_step, step_cards=shown, peeked=ace_up)
        elif hole is None:
            now = replace(dealt, phase=Phase.DEALER, step=last, step_cards=shown, peeked=ace_up)
        else:
            hole_card = _cards([hole])[0]
            at_peek = ace_up and not closed_steps and total_of((up_card, hole_card))[0] == 21
            # a dealer blackjack found at the peek ends the round: no step was played
            now = replace(
                dealt,
                phase=Phase.SETTLED,
                step=dealt.step if at_peek else last,
                hole=hole_card,
                step_cards=() if at_peek else shown,
                dealer_draws=() if at_peek else draws,
                peeked=ace_up,
            )
        return cls(base, dealt, insurance_closed, steps, now)


def replay_seat(shown: ShownRound, plan: SeatPlan, observe: Observer | None = None) -> Seat:
    """One seat's state in ``shown``: its bets, the deal, its insurance answer and the
    peek, then each closed step (its decision, the close: the automatic action where it
    made none, the step's card), and its decision in the open step; as :func:`play_round`
    plays it. ``observe`` sees every decision with the state it was made in."""
    seat = place_bets(shown.base, plan.seat_id, plan.main, plan.sides)
    dealt = shown.dealt
    if dealt is None:
        return seat
    seat = deal_seat(dealt, seat)
    if dealt.phase is Phase.INSURANCE:
        seat = _insure(dealt, seat, plan, observe)
        if not shown.insurance_closed:
            return seat
        seat = close_insurance_seat(seat, dealt.rules.insurance_stake(seat.main) > 0)
    for shared, card in shown.steps:
        seat = _decide(shared, seat, plan, observe)
        seat = give_card(close_seat(shared, seat), card)
    if shown.now.phase is Phase.STEP:  # the open step (a closed one is in ``steps``)
        seat = _decide(shown.now, seat, plan, observe)
    return seat
