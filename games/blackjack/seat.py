"""One seat of an Infinite Blackjack round: its bets, hands, options and decisions.

A seat is its own frozen value, apart from the :class:`~games.blackjack.shared.SharedRound`
every seat shares, so a decision is ``decide(shared, seat, decision) -> seat'`` and never
touches another seat. A decision takes effect at once (a double doubles the stake, a split
makes two hands, a cash-out ends the hand) except for the card, which comes when the step
closes (:func:`games.blackjack.round.close_step`); ``pending`` records it and a second
decision in the same step is refused.

Rules applied here (seed 002, "Raddoppio, carta o stai", "Dividi", "Incassare"):

- hit: not on a hard total of 17 or more ("Non puoi chiedere una carta se l'hard totale è
  pari o superiore a 17"); no decision at all on 21, soft 21 included;
- double: on the two initial cards when their total is not 21, hard 17+ included unless
  ``rules.double_on_hard_17`` is off; one card, then the hand is done;
- split: two initial cards of equal *value* (10-J splits), once; each hand's stake equals
  the main bet; split aces take one card each; no double and no cash-out after a split;
- cash-out: on the unsplit, undoubled main hand with a total under 21, once the dealer has
  no blackjack (after the peek with an ace up; with a ten up there is no peek), for
  ``main * offer // 100`` (rounded down);
- insurance: with an ace up, before the peek, even on a blackjack, for ``main // 2``.

>>> from games.blackjack.rules import DEFAULT_RULES
>>> Seat("s1", 0, 1000).staked, Seat("s1", 0, 1000, sides=(100, 0, 0, 50)).staked
(1000, 1150)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Final

from games.blackjack.decisions import (
    INSURANCE_KINDS,
    Action,
    AutoReason,
    Decision,
    DecisionKind,
    Option,
)
from games.blackjack.errors import AlreadyDecided, NotAnOption, SeatNotInRound
from games.blackjack.hand import Hand, hard_value, make_hand, total_of
from games.blackjack.paytables import SideBet
from games.blackjack.shared import Phase, SharedRound
from games.cards import Card
from games.errors import ActionOutOfPhase, GameRuleError

__all__ = [
    "SIDE_BETS",
    "Seat",
    "can_decide",
    "check_decision",
    "decide",
    "options",
    "timeout_action",
]

SIDE_BETS: Final = tuple(SideBet)
"""The order of ``Seat.sides``: perfect-pairs, 21+3, hot-3, bust-it."""

K = DecisionKind


@dataclass(frozen=True, slots=True)
class Seat:
    """One player's part of a round. Amounts are int minor units.

    ``hands`` is empty before the deal; ``hands[active]`` is the hand in play and
    ``active == len(hands)`` once the seat is done. ``drawing`` says the hand in play takes
    the step's card when the step closes. ``insurance`` is ``None`` while not offered or
    not answered, 0 when declined, else its stake. ``cashed_out`` is the amount paid.
    """

    seat_id: str
    start: int
    main: int
    sides: tuple[int, int, int, int] = (0, 0, 0, 0)
    hands: tuple[Hand, ...] = ()
    active: int = 0
    drawing: bool = False
    insurance: int | None = None
    cashed_out: int | None = None
    pending: Action | None = None
    actions: tuple[Action, ...] = ()

    @property
    def done(self) -> bool:
        """No hand of this seat takes another card or decision."""
        return bool(self.hands) and self.active >= len(self.hands)

    @property
    def staked(self) -> int:
        """Everything the seat has put on the table so far (the ledger debits it)."""
        hands = sum(h.stake for h in self.hands) if self.hands else self.main
        return hands + (self.insurance or 0) + sum(self.sides)

    def side_stake(self, bet: SideBet) -> int:
        return self.sides[SIDE_BETS.index(bet)]

    def drawn_cards(self) -> tuple[Card, ...]:
        """The cards this seat drew after the initial two, in the order it drew them
        (hand 1 completes before hand 2, so hand order is draw order)."""
        if len(self.hands) == 2:
            return self.hands[0].cards[1:] + self.hands[1].cards[1:]
        return self.hands[0].cards[2:] if self.hands else ()


_new = object.__new__
(
    _set_id,
    _set_start,
    _set_main,
    _set_sides,
    _set_hands,
    _set_active,
    _set_drawing,
    _set_insurance,
    _set_cashed_out,
    _set_pending,
    _set_actions,
) = (Seat.__dict__[f.name].__set__ for f in fields(Seat))


def _seat(
    s: Seat,
    hands: tuple[Hand, ...],
    active: int,
    drawing: bool,
    pending: Action | None,
    actions: tuple[Action, ...],
    insurance: int | None = None,
    cashed_out: int | None = None,
) -> Seat:
    """A copy of ``s`` with these fields. It runs once or twice per seat per step, for
    every seat, so it fills the slots directly: the frozen dataclass ``__init__`` (one
    ``object.__setattr__`` per field) costs several times more. Same value, same checks
    (Seat has no ``__post_init__``)."""
    out = _new(Seat)
    _set_id(out, s.seat_id)
    _set_start(out, s.start)
    _set_main(out, s.main)
    _set_sides(out, s.sides)
    _set_hands(out, hands)
    _set_active(out, active)
    _set_drawing(out, drawing)
    _set_insurance(out, s.insurance if insurance is None else insurance)
    _set_cashed_out(out, s.cashed_out if cashed_out is None else cashed_out)
    _set_pending(out, pending)
    _set_actions(out, actions)
    return out


def new_seat(seat_id: str, start: int, main: int, sides: tuple[int, int, int, int]) -> Seat:
    """``Seat(seat_id, start, main, sides)`` built the fast way (see :func:`_seat`)."""
    out = _new(Seat)
    _set_id(out, seat_id)
    _set_start(out, start)
    _set_main(out, main)
    _set_sides(out, sides)
    _set_hands(out, ())
    _set_active(out, 0)
    _set_drawing(out, False)
    _set_insurance(out, None)
    _set_cashed_out(out, None)
    _set_pending(out, None)
    _set_actions(out, ())
    return out


def advance(hands: tuple[Hand, ...], active: int) -> tuple[int, bool]:
    """Skip finished hands; return the hand in play and whether it must draw now (a
    split hand waiting for its second card draws without a decision).

    A split hand on a hard 17 or more has no choice left (no hit, no double, no cash-out
    after a split), so it stands here; that does not move any card: standing by decision
    in the next step would let the next hand draw in that same step.
    """
    while active < len(hands):
        hand = hands[active]
        if len(hand.cards) == 1:
            return active, True
        if hand.finished:
            active += 1
            continue
        if hand.split:
            total, soft = total_of(hand.cards)
            if total >= 17 and not soft:
                active += 1
                continue
        return active, False
    return active, False


_HIT = Option(K.HIT)
_STAND = Option(K.STAND)
_DOUBLE, _SPLIT, _CASH_OUT = K.DOUBLE, K.SPLIT, K.CASH_OUT


def hand_options(shared: SharedRound, seat: Seat, hand: Hand) -> tuple[Option, ...]:
    """The decisions open to ``hand`` (a hand in play, not finished) in a decision step."""
    cards = hand.cards
    total, soft = total_of(cards)
    hit = soft or total < 17  # seed 002: no card on a hard 17 or more
    out = [_HIT, _STAND] if hit else [_STAND]
    if len(cards) == 2 and not hand.split:
        # seed 002: "Se il valore della tua mano iniziale è diverso da 21, puoi raddoppiare"
        if total != 21 and (hit or shared.rules.double_on_hard_17):
            out.append(Option(_DOUBLE, seat.main))
        # seed 002: "una coppia di carte di pari valore"; "un solo Dividi per mano"
        if len(seat.hands) == 1 and hard_value(cards[0]) == hard_value(cards[1]):
            out.append(Option(_SPLIT, seat.main))
    # seed 002: cash-out on the main bet only; never after a double, a bust, on 21
    if total < 21 and not hand.split and not hand.doubled:
        offer = shared.cashout.offer(total, soft, shared.up_value)
        if offer is not None:
            out.append(Option(_CASH_OUT, seat.main * offer // 100))
    return tuple(out)


def options(shared: SharedRound, seat: Seat) -> tuple[Option, ...]:
    """Every decision ``seat`` may take at this moment, with costs and the cash-out
    amount (seed 002: only the available decisions are active)."""
    if seat.pending is not None or seat.start != shared.start:
        return ()
    if shared.phase is Phase.INSURANCE:
        stake = shared.rules.insurance_stake(seat.main)
        if seat.insurance is None and stake > 0:
            return (Option(K.INSURE, stake), Option(K.NO_INSURANCE))
        return ()
    if shared.phase is not Phase.STEP or seat.done or seat.drawing or not seat.hands:
        return ()
    return hand_options(shared, seat, seat.hands[seat.active])


def check_decision(
    shared: SharedRound, seat: Seat, decision: Decision | str | Sequence[object]
) -> Decision:
    """Raise a typed error saying why ``seat`` cannot take ``decision`` now; return the
    parsed decision otherwise."""
    d = Decision.from_wire(decision)
    if seat.start != shared.start:
        raise SeatNotInRound(
            f"seat {seat.seat_id!r} is in the round at {seat.start}, not {shared.start}"
        )
    wanted = Phase.INSURANCE if d.kind in INSURANCE_KINDS else Phase.STEP
    if shared.phase is not wanted:
        raise ActionOutOfPhase(d.kind.value, shared.phase.value, allowed=wanted.value)
    if seat.pending is not None:
        raise AlreadyDecided(seat.seat_id, shared.step)
    offered = options(shared, seat)
    if all(o.kind is not d.kind for o in offered):
        raise NotAnOption(d.kind.value, [o.kind.value for o in offered])
    return d


def can_decide(
    shared: SharedRound, seat: Seat, decision: Decision | str | Sequence[object]
) -> bool:
    try:
        check_decision(shared, seat, decision)
    except GameRuleError:
        return False
    return True


def decide(
    shared: SharedRound,
    seat: Seat,
    decision: Decision | str | Sequence[object],
    funded: bool = True,
) -> Seat:
    """Take ``decision`` for ``seat`` in the open step (or insurance window).

    ``funded=False`` says the balance does not cover the double, split or insurance
    asked for; seed 002 then rejects it and applies the automatic action: a double
    becomes a hit (a stand where no hit is allowed, on a hard 17+), a split a hit if the
    total is 11 or less, else a stand; insurance becomes no insurance.
    """
    d = check_decision(shared, seat, decision)
    if d.kind in INSURANCE_KINDS:
        insure = d.kind is K.INSURE
        if insure and not funded:
            action = Action(0, K.NO_INSURANCE, AutoReason.INSUFFICIENT_BALANCE, K.INSURE)
            insure = False
        else:
            action = Action(0, d.kind)
        stake = shared.rules.insurance_stake(seat.main) if insure else 0
        return _seat(seat, seat.hands, seat.active, False, action, seat.actions, insurance=stake)
    step = shared.step
    if not funded and d.kind in (K.DOUBLE, K.SPLIT):
        hand = seat.hands[seat.active]
        total, soft = total_of(hand.cards)
        can_hit = soft or total < 17
        hit = can_hit if d.kind is K.DOUBLE else total <= 11
        kind = K.HIT if hit else K.STAND
        action = Action(step, kind, AutoReason.INSUFFICIENT_BALANCE, d.kind)
    else:
        action = Action(step, d.kind)
    return apply_action(shared, seat, action)


def timeout_action(shared: SharedRound, seat: Seat) -> Action:
    """seed 002: with no decision before time runs out, a total of 11 or less hits and a
    total over 11 stands."""
    total, _ = total_of(seat.hands[seat.active].cards)
    kind = K.HIT if total <= 11 else K.STAND
    return Action(shared.step, kind, AutoReason.TIMEOUT)


def apply_action(shared: SharedRound, seat: Seat, action: Action) -> Seat:
    """Apply a step action to the hand in play, all but its card; mark it pending."""
    hands = seat.hands
    i = seat.active
    hand = hands[i]
    kind = action.kind
    if kind is K.HIT:
        return _seat(seat, hands, i, True, action, seat.actions)
    if kind is K.STAND:
        active, drawing = advance(hands, i + 1)
        return _seat(seat, hands, active, drawing, action, seat.actions)
    if kind is K.DOUBLE:
        doubled = make_hand(hand.cards, hand.stake + seat.main, True, hand.split)
        return _seat(seat, _replace(hands, i, doubled), i, True, action, seat.actions)
    if kind is K.SPLIT:
        first, second = hand.cards
        split = (
            make_hand((first,), seat.main, False, True),
            make_hand((second,), seat.main, False, True),
        )
        return _seat(seat, split, 0, True, action, seat.actions)
    if kind is K.CASH_OUT:
        offer = shared.cashout.offer(hand.total, hand.soft, shared.up_value)
        if offer is None:
            raise NotAnOption(kind.value, [])
        amount = seat.main * offer // 100  # rounded down to the minor unit
        return _seat(seat, hands, len(hands), False, action, seat.actions, cashed_out=amount)
    raise ActionOutOfPhase(kind.value, shared.phase.value, allowed=Phase.INSURANCE.value)


def _replace(hands: tuple[Hand, ...], i: int, hand: Hand) -> tuple[Hand, ...]:
    return (*hands[:i], hand, *hands[i + 1 :])


def close_seat(shared: SharedRound, seat: Seat) -> Seat:
    """At the close of a step: the seat's own decision, or the automatic one if it did not
    decide. The result's ``drawing`` says whether it takes the step card."""
    if seat.pending is not None or seat.done or seat.drawing or not seat.hands:
        return seat
    return apply_action(shared, seat, timeout_action(shared, seat))


def give_card(seat: Seat, card: Card | None) -> Seat:
    """After the step card is shown: the drawing hand takes it, then play moves on. The
    step's action goes into ``actions``."""
    if seat.pending is None and not seat.drawing:
        return seat  # a seat that is done (or has nothing to do) is not copied
    actions = seat.actions if seat.pending is None else (*seat.actions, seat.pending)
    hands, active, drawing = seat.hands, seat.active, seat.drawing
    if drawing:
        if card is None:
            raise ValueError("a drawing seat needs the step card")
        hands = _replace(hands, active, hands[active].with_card(card))
        active, drawing = advance(hands, active)
    return _seat(seat, hands, active, drawing, None, actions)


def deal_seat(shared: SharedRound, seat: Seat) -> Seat:
    """The seat's hand once the initial cards are out (every seat shares them)."""
    if seat.start != shared.start:
        raise SeatNotInRound(
            f"seat {seat.seat_id!r} is in the round at {seat.start}, not {shared.start}"
        )
    hands = (make_hand(shared.player_cards, seat.main, False, False),)
    active, drawing = advance(hands, 0)
    return _seat(seat, hands, active, drawing, None, seat.actions)


def close_insurance_seat(seat: Seat, offered: bool) -> Seat:
    """Close the insurance window for one seat: no answer means no insurance (seed 002)."""
    actions = seat.actions if seat.pending is None else (*seat.actions, seat.pending)
    insurance = seat.insurance
    if seat.pending is None and offered and insurance is None:
        actions = (*actions, Action(0, K.NO_INSURANCE, AutoReason.TIMEOUT))
        insurance = 0
    return _seat(seat, seat.hands, seat.active, seat.drawing, None, actions, insurance=insurance)
