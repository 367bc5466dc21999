"""The shared Infinite Blackjack round (DESIGN §5.3): the one place its phases change.

One round serves any number of seats. Its cards come from a shoe (any card sequence; the
production one is :func:`games.blackjack.shoe.shoe_from_seed`) starting at ``start``:

- the deal, in seed 002's order: ``shoe[start]`` the first player card, ``shoe[start+1]``
  the dealer's up card, ``shoe[start+2]`` the second player card, ``shoe[start+3]`` the
  hole card (face down). Every seat shares the two player cards;
- with an ace up, the insurance window, then the peek: a dealer blackjack is shown and
  ends the round;
- decision steps ``k = 1, 2, ...``: every seat decides alone (or gets the automatic
  action when the step closes); every hand that draws at step ``k`` takes the same card,
  ``shoe[start + 3 + k]``, the ``k``-th after the initial four, shown only after step
  ``k``'s decisions close. A seat's hands play in order and a seat draws at most one card
  per step, so each seat's draws are the shoe's cards in order: every player's game is a
  one-player game against the dealer. A step in which no hand draws shows no card and
  ends the steps;
- the dealer (after the last step) shows the hole card and draws from the next card on;
  seed 002: "Il dealer deve chiedere Carta in una mano con valore 16 o inferiore e deve
  Restare in una mano soft da 17 o superiore".

Every function takes a state and returns a new one; the shoe is an argument and is never
stored, so an undealt card cannot be read from any state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from games.blackjack.decisions import Action
from games.blackjack.errors import InvalidSideBet, ShoeExhausted, ShoeMismatch
from games.blackjack.hand import total_of
from games.blackjack.paytables import SideBet
from games.blackjack.rules import Rules
from games.blackjack.seat import (
    SIDE_BETS,
    Seat,
    close_insurance_seat,
    close_seat,
    deal_seat,
    give_card,
    new_seat,
)
from games.blackjack.shared import CashoutOffers, Phase, SharedRound, cashout_table
from games.cards import Card, Rank
from games.errors import (
    ActionOutOfPhase,
    BetAboveMaximum,
    BetBelowMinimum,
    GameRuleError,
    require_positive_amount,
)

__all__ = [
    "InsuranceClosed",
    "StepClosed",
    "can_bet",
    "check_bets",
    "close_insurance",
    "close_step",
    "deal",
    "next_start",
    "open_round",
    "place_bets",
    "play_dealer",
]


@dataclass(frozen=True, slots=True)
class StepClosed:
    """What happened when step ``step`` closed: every seat's action (automatic ones are
    marked) and the card shown (``None``: no hand drew, the steps are over)."""

    step: int
    card: Card | None
    actions: tuple[tuple[str, Action], ...]


@dataclass(frozen=True, slots=True)
class InsuranceClosed:
    """The insurance window closed and the dealer peeked."""

    actions: tuple[tuple[str, Action], ...]
    dealer_blackjack: bool


def open_round(rules: Rules, start: int, cashout: CashoutOffers | None = None) -> SharedRound:
    """A round in phase ``betting`` whose first card is the shoe's ``start``-th."""
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise GameRuleError(f"a shoe position is an int >= 0, got {start!r}")
    table = cashout_table(rules) if cashout is None else cashout
    return SharedRound(rules=rules, start=start, cashout=table)


# --- bets -------------------------------------------------------------------------------


_SIDE_INDEX = {bet.value: i for i, bet in enumerate(SIDE_BETS)}
"""Side bet name -> its index in ``Seat.sides`` (a StrEnum member hashes as its value)."""


def _side_stakes(sides: Mapping[SideBet | str, int]) -> tuple[int, int, int, int]:
    stakes = [0, 0, 0, 0]
    for name, stake in sides.items():
        stakes[_SIDE_INDEX[name]] = stake
    return stakes[0], stakes[1], stakes[2], stakes[3]


def check_bets(shared: SharedRound, main: object, sides: Mapping[SideBet | str, int]) -> None:
    """Raise a typed error saying why these bets cannot be placed now."""
    if shared.phase is not Phase.BETTING:
        raise ActionOutOfPhase("bet", shared.phase.value, allowed=Phase.BETTING.value)
    rules = shared.rules
    amount = require_positive_amount("main bet", main)
    if amount < rules.min_bet:
        raise BetBelowMinimum(amount, rules.min_bet)
    if amount > rules.max_bet:
        raise BetAboveMaximum(amount, rules.max_bet)
    for name, stake in sides.items():
        if name not in _SIDE_INDEX:
            raise InvalidSideBet(f"unknown side bet {name!r} (seed 002 has {list(_SIDE_INDEX)})")
        if stake == 0 and not isinstance(stake, bool):
            continue
        require_positive_amount(f"{name} bet", stake)
        if stake < rules.side_min_bet:
            raise BetBelowMinimum(stake, rules.side_min_bet)
        if stake > rules.side_max_bet:
            raise BetAboveMaximum(stake, rules.side_max_bet, what=f"{name} bet")


def can_bet(shared: SharedRound, main: object, sides: Mapping[SideBet | str, int]) -> bool:
    try:
        check_bets(shared, main, sides)
    except GameRuleError:
        return False
    return True


def place_bets(
    shared: SharedRound,
    seat_id: str,
    main: int,
    sides: Mapping[SideBet | str, int] | None = None,
) -> Seat:
    """A seat with a main bet and optional side bets (seed 002: side bets go with a main
    bet). The ledger debits ``seat.staked``."""
    given = {} if sides is None else sides
    check_bets(shared, main, given)
    return new_seat(seat_id, shared.start, main, _side_stakes(given))


# --- cards ------------------------------------------------------------------------------


def _card(shoe: Sequence[Card], position: int) -> Card:
    if position >= len(shoe):
        raise ShoeExhausted(f"the shoe has no card at position {position} ({len(shoe)} cards)")
    return shoe[position]


def _cut(shoe: Sequence[Card], position: int) -> bool:
    return position >= getattr(shoe, "cut_index", len(shoe))


def _check_shoe(shared: SharedRound, shoe: Sequence[Card]) -> None:
    """The shoe must hold the cards this round has shown, where it showed them."""
    s = shared.start
    shown = [(s, shared.player_cards[0]), (s + 1, shared.up), (s + 2, shared.player_cards[1])]
    if shared.hole is not None:
        shown.append((s + 3, shared.hole))
    shown += [(s + 4 + i, c) for i, c in enumerate(shared.step_cards)]
    if any(p >= len(shoe) or shoe[p] != card for p, card in shown):
        raise ShoeMismatch("the shoe does not hold the cards shown in this round")


def _require(shared: SharedRound, phase: Phase, action: str) -> None:
    if shared.phase is not phase:
        raise ActionOutOfPhase(action, shared.phase.value, allowed=phase.value)


def deal(
    shared: SharedRound, seats: Sequence[Seat], shoe: Sequence[Card]
) -> tuple[SharedRound, list[Seat]]:
    """Deal the initial four cards (seed 002's order) and give every seat its hand."""
    _require(shared, Phase.BETTING, "deal")
    s = shared.start
    first, up, second = _card(shoe, s), _card(shoe, s + 1), _card(shoe, s + 2)
    _card(shoe, s + 3)  # the hole card is dealt (face down), so the shoe must hold it
    ace_up = up.rank is Rank.ACE
    dealt = replace(
        shared,
        phase=Phase.INSURANCE if ace_up else Phase.STEP,
        player_cards=(first, second),
        up=up,
        step=0 if ace_up else 1,
        cut_out=_cut(shoe, s + 3),
    )
    return dealt, [deal_seat(dealt, seat) for seat in seats]


def close_insurance(
    shared: SharedRound, seats: Sequence[Seat], shoe: Sequence[Card]
) -> tuple[SharedRound, list[Seat], InsuranceClosed]:
    """Close the insurance window (no answer: no insurance), then the dealer peeks. A
    dealer blackjack is shown and settles the round; otherwise step 1 opens."""
    _require(shared, Phase.INSURANCE, "close insurance")
    _check_shoe(shared, shoe)
    offered = shared.rules.insurance_stake
    closed = [close_insurance_seat(seat, offered(seat.main) > 0) for seat in seats]
    actions = tuple(
        (seat.seat_id, seat.actions[-1])
        for seat, before in zip(closed, seats, strict=True)
        if len(seat.actions) > len(before.actions)
    )
    hole = shoe[shared.start + 3]
    assert shared.up is not None
    if total_of((shared.up, hole))[0] == 21:
        # seed 002: "Se il dealer ottiene un Blackjack e tu no, la mano del dealer vince
        # e la partita termina"; a player blackjack pushes (settlement).
        after = replace(shared, phase=Phase.SETTLED, hole=hole, peeked=True)
        return after, closed, InsuranceClosed(actions, True)
    after = replace(shared, phase=Phase.STEP, step=1, peeked=True)
    return after, closed, InsuranceClosed(actions, False)


def close_step(
    shared: SharedRound, seats: Sequence[Seat], shoe: Sequence[Card]
) -> tuple[SharedRound, list[Seat], StepClosed]:
    """Close the open step: every seat that did not decide gets seed 002's automatic
    action; if any hand draws, the step's card is shown and every drawing hand takes it.
    The next step opens while some seat still plays; otherwise the dealer's turn."""
    _require(shared, Phase.STEP, "close the step")
    _check_shoe(shared, shoe)
    k = shared.step
    resolved = [close_seat(shared, seat) for seat in seats]
    drew = any(seat.drawing for seat in resolved)
    position = shared.start + 3 + k
    card = _card(shoe, position) if drew else None
    after = [give_card(seat, card) for seat in resolved]
    actions = tuple((seat.seat_id, seat.pending) for seat in resolved if seat.pending is not None)
    playing = drew and any(not seat.done for seat in after)
    shown = shared.step_cards if card is None else (*shared.step_cards, card)
    cut_out = shared.cut_out or (drew and _cut(shoe, position))
    if playing:
        nxt = replace(shared, step=k + 1, step_cards=shown, cut_out=cut_out)
    else:
        nxt = replace(shared, phase=Phase.DEALER, step_cards=shown, cut_out=cut_out)
    return nxt, after, StepClosed(k, card, actions)


def play_dealer(shared: SharedRound, shoe: Sequence[Card]) -> SharedRound:
    """Show the hole card and draw to 17 (the dealer stands on all 17s, seed 002)."""
    _require(shared, Phase.DEALER, "play the dealer")
    _check_shoe(shared, shoe)
    assert shared.up is not None
    hole = shoe[shared.start + 3]
    cards = [shared.up, hole]
    position = shared.start + 4 + len(shared.step_cards)
    cut_out = shared.cut_out
    draws: list[Card] = []
    while total_of(cards)[0] < 17:
        card = _card(shoe, position)
        cut_out = cut_out or _cut(shoe, position)
        cards.append(card)
        draws.append(card)
        position += 1
    return replace(
        shared, phase=Phase.SETTLED, hole=hole, dealer_draws=tuple(draws), cut_out=cut_out
    )


def next_start(shared: SharedRound) -> int | None:
    """Where the shoe's next round starts, or ``None`` when the cut card came out in this
    round: seed 002, the game goes on "fino a quando non viene distribuita la carta di
    taglio"; this round finishes, then the shoe is done and a new one is shuffled."""
    _require(shared, Phase.SETTLED, "start the next round")
    return None if shared.cut_out else shared.next_position
