"""Settlement of one Infinite Blackjack seat: main hands, insurance, cash-out, side bets.

Every amount is what goes back to the player (stake included), in int minor units,
**rounded down** to the minor unit wherever a ratio does not divide (3:2 on an odd bet;
cash-out amounts are rounded down when taken, :mod:`games.blackjack.seat`). Rules, seed 002:

- a bust loses; a cashed-out hand gets its amount; Six Card Charlie wins 1:1 "anche se il
  dealer ha un Blackjack", each split hand alone;
- a blackjack pays 3:2 and pushes against a dealer blackjack; a split 21 is no blackjack;
- a dealer blackjack at the peek (ace up) beats every other hand; under a ten up it shows
  at the end and takes, by ``rules.ten_up``, either every stake or the original bet only:
  the main bet once, from the first hand still standing (not bust, not a charlie), while a
  double's extra stake and the other split hand's stake come back (a hand that busted lost
  its stake when it busted, seed 002 "in quella mano, perdi la puntata");
- otherwise a dealer bust or a higher total wins 1:1, equal totals push
  ("la partita viene congelata");
- insurance pays 2:1 when the dealer has a blackjack;
- side bets are settled by :mod:`games.blackjack.side_bets` and the table's paytables, each
  on its own; Bust It pushes when the player has a blackjack.

>>> from games.blackjack.rules import DEFAULT_RULES
>>> DEFAULT_RULES.blackjack_win(101)
151
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from games.blackjack.hand import Hand, total_of
from games.blackjack.paytables import SideBet
from games.blackjack.rules import TenUpReading
from games.blackjack.seat import SIDE_BETS, Seat
from games.blackjack.shared import Phase, SharedRound
from games.blackjack.side_bets import bust_it, hot_three, perfect_pairs, twenty_one_plus_three
from games.errors import ActionOutOfPhase

__all__ = [
    "HandOutcome",
    "HandResult",
    "SeatSettlement",
    "SideOutcomes",
    "SideResult",
    "settle_seat",
    "settle_seats",
    "side_outcomes",
]


class HandOutcome(StrEnum):
    """How one hand ended (wire format)."""

    BLACKJACK = "blackjack"
    CHARLIE = "charlie"
    WIN = "win"
    PUSH = "push"
    LOSE = "lose"
    BUST = "bust"
    CASHED_OUT = "cash-out"
    DEALER_BLACKJACK = "dealer-blackjack"


@dataclass(frozen=True, slots=True)
class HandResult:
    outcome: HandOutcome
    stake: int
    payout: int


@dataclass(frozen=True, slots=True)
class SideResult:
    """One side bet's result: ``outcome`` is its paying outcome, ``"push"`` (Bust It on a
    player blackjack) or ``None`` (lost)."""

    bet: SideBet
    stake: int
    outcome: str | None
    payout: int


@dataclass(frozen=True, slots=True)
class SideOutcomes:
    """Every side bet's outcome in a settled round (the same for every seat)."""

    perfect_pairs: str | None
    twenty_one_plus_three: str | None
    hot_three: str | None
    bust_it: str | None

    def of(self, bet: SideBet) -> str | None:
        return (
            self.perfect_pairs,
            self.twenty_one_plus_three,
            self.hot_three,
            self.bust_it,
        )[SIDE_BETS.index(bet)]


@dataclass(frozen=True, slots=True)
class SeatSettlement:
    """What one seat staked and gets back. ``returned - staked`` is the player's net."""

    seat_id: str
    staked: int
    hands: tuple[HandResult, ...]
    insurance: int
    sides: tuple[SideResult, ...]
    returned: int

    @property
    def net(self) -> int:
        return self.returned - self.staked


def side_outcomes(shared: SharedRound) -> SideOutcomes:
    """The side bets' outcomes of a settled round."""
    _require_settled(shared)
    first, second = shared.player_cards
    up = shared.up
    assert up is not None
    # seed 002: Bust It "viene restituita (push) se il giocatore ottiene un Blackjack"
    bust = "push" if shared.player_blackjack else bust_it(shared.dealer_cards)
    return SideOutcomes(
        perfect_pairs(first, second),
        twenty_one_plus_three(first, second, up),
        hot_three(first, second, up),
        bust,
    )


def _require_settled(shared: SharedRound) -> None:
    if shared.phase is not Phase.SETTLED:
        raise ActionOutOfPhase("settle", shared.phase.value, allowed=Phase.SETTLED.value)


def _hand(shared: SharedRound, seat: Seat, index: int, hand: Hand) -> HandResult:
    stake = hand.stake
    if seat.cashed_out is not None:
        return HandResult(HandOutcome.CASHED_OUT, stake, seat.cashed_out)
    total = total_of(hand.cards)[0]
    if total > 21:
        return HandResult(HandOutcome.BUST, stake, 0)
    if hand.charlie:
        # seed 002: Six Card Charlie wins at once, even against a dealer blackjack
        return HandResult(HandOutcome.CHARLIE, stake, 2 * stake)
    rules = shared.rules
    if shared.dealer_blackjack:
        if hand.blackjack:
            return HandResult(HandOutcome.PUSH, stake, stake)
        if shared.peeked or rules.ten_up is TenUpReading.ALL_BETS:
            return HandResult(HandOutcome.DEALER_BLACKJACK, stake, 0)
        # ten up, original bet only: the dealer takes the main bet once, from the first
        # hand still standing (not bust, not a charlie); every other stake comes back
        lost = seat.main if index == _first_live(seat) else 0
        return HandResult(HandOutcome.DEALER_BLACKJACK, stake, stake - lost)
    if hand.blackjack:
        return HandResult(HandOutcome.BLACKJACK, stake, stake + rules.blackjack_win(stake))
    dealer = shared.dealer_total
    if dealer > 21 or total > dealer:
        return HandResult(HandOutcome.WIN, stake, 2 * stake)
    if total == dealer:
        return HandResult(HandOutcome.PUSH, stake, stake)
    return HandResult(HandOutcome.LOSE, stake, 0)


def _first_live(seat: Seat) -> int:
    for i, hand in enumerate(seat.hands):
        if hand.total <= 21 and not hand.charlie:
            return i
    return -1


def settle_seat(
    shared: SharedRound, seat: Seat, outcomes: SideOutcomes | None = None
) -> SeatSettlement:
    """Settle ``seat`` in a settled round (``outcomes`` may be passed to share the side
    bets' classification between seats)."""
    sides_known = side_outcomes(shared) if outcomes is None else outcomes
    hands = tuple(_hand(shared, seat, i, h) for i, h in enumerate(seat.hands))
    insurance = 0
    if seat.insurance and shared.dealer_blackjack:
        insurance = seat.insurance * (1 + shared.rules.insurance_pays)  # seed 002: 2:1
    sides: list[SideResult] = []
    for bet, stake in zip(SIDE_BETS, seat.sides, strict=True):
        if not stake:
            continue
        outcome = sides_known.of(bet)
        if outcome == "push":
            payout = stake
        else:
            payout = shared.rules.side_paytable(bet).payout(outcome, stake)
        sides.append(SideResult(bet, stake, outcome, payout))
    returned = sum(h.payout for h in hands) + insurance + sum(s.payout for s in sides)
    return SeatSettlement(seat.seat_id, seat.staked, hands, insurance, tuple(sides), returned)


def settle_seats(shared: SharedRound, seats: Iterable[Seat]) -> list[SeatSettlement]:
    """Settle many seats of one round (the side bets are classified once)."""
    outcomes = side_outcomes(shared)
    return [settle_seat(shared, seat, outcomes) for seat in seats]
