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
from typing import NamedTuple

from games.blackjack.hand import CHARLIE_CARDS, Hand, total_of
from games.blackjack.paytables import SideBet
from games.blackjack.rules import TenUpReading
from games.blackjack.seat import SIDE_BETS, Seat
from games.blackjack.shared import Phase, SharedRound
from games.blackjack.side_bets import bust_it, hot_three, perfect_pairs, twenty_one_plus_three
from games.errors import ActionOutOfPhase

__all__ = [
    "HandOutcome",
    "HandResult",
    "RoundOutcome",
    "SeatSettlement",
    "SideResult",
    "round_outcome",
    "settle_seat",
    "settle_seats",
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


class HandResult(NamedTuple):
    """One hand's result (named tuples here: settlement builds several per seat)."""

    outcome: HandOutcome
    stake: int
    payout: int


class SideResult(NamedTuple):
    """One side bet's result: ``outcome`` is its paying outcome, ``"push"`` (Bust It on a
    player blackjack) or ``None`` (lost)."""

    bet: SideBet
    stake: int
    outcome: str | None
    payout: int


@dataclass(frozen=True, slots=True)
class RoundOutcome:
    """What settlement needs from a settled round, computed once for all its seats: the
    dealer's result and every side bet's outcome (the same for every seat)."""

    dealer_total: int
    dealer_blackjack: bool
    takes_every_stake: bool
    """A dealer blackjack takes every stake: found at the peek (nothing more was staked)
    or under the ``all-bets`` ten-up reading."""
    side_names: tuple[str | None, str | None, str | None, str | None]
    """Each side bet's outcome, in ``SIDE_BETS`` order: a paying outcome, ``"push"``
    (Bust It on a player blackjack) or ``None`` (lost)."""
    side_multipliers: tuple[int, int, int, int]
    """What each side bet returns per unit staked: ``1 + pays``, 1 on a push, 0 lost."""

    def side(self, bet: SideBet) -> str | None:
        return self.side_names[SIDE_BETS.index(bet)]


class SeatSettlement(NamedTuple):
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


def round_outcome(shared: SharedRound) -> RoundOutcome:
    """The dealer's result and the side bets' outcomes of a settled round."""
    _require_settled(shared)
    first, second = shared.player_cards
    up = shared.up
    assert up is not None
    # seed 002: Bust It "viene restituita (push) se il giocatore ottiene un Blackjack"
    bust = "push" if shared.player_blackjack else bust_it(shared.dealer_cards)
    names = (
        perfect_pairs(first, second),
        twenty_one_plus_three(first, second, up),
        hot_three(first, second, up),
        bust,
    )
    rules = shared.rules
    mults = [0, 0, 0, 0]
    for i, (bet, name) in enumerate(zip(SIDE_BETS, names, strict=True)):
        if name == "push":
            mults[i] = 1
        elif name is not None:
            mults[i] = 1 + rules.side_paytable(bet).pays[name]
    return RoundOutcome(
        shared.dealer_total,
        shared.dealer_blackjack,
        shared.peeked or rules.ten_up is TenUpReading.ALL_BETS,
        names,
        (mults[0], mults[1], mults[2], mults[3]),
    )


def _require_settled(shared: SharedRound) -> None:
    if shared.phase is not Phase.SETTLED:
        raise ActionOutOfPhase("settle", shared.phase.value, allowed=Phase.SETTLED.value)


def _hand(
    shared: SharedRound, seat: Seat, index: int, hand: Hand, known: RoundOutcome
) -> HandResult:
    stake = hand.stake
    if seat.cashed_out is not None:
        return HandResult(HandOutcome.CASHED_OUT, stake, seat.cashed_out)
    total = total_of(hand.cards)[0]
    if total > 21:
        return HandResult(HandOutcome.BUST, stake, 0)
    n = len(hand.cards)
    if n >= CHARLIE_CARDS:
        # seed 002: Six Card Charlie wins at once, even against a dealer blackjack
        return HandResult(HandOutcome.CHARLIE, stake, 2 * stake)
    blackjack = n == 2 and total == 21 and not hand.split
    if known.dealer_blackjack:
        if blackjack:
            return HandResult(HandOutcome.PUSH, stake, stake)
        if known.takes_every_stake:
            return HandResult(HandOutcome.DEALER_BLACKJACK, stake, 0)
        # ten up, original bet only: the dealer takes the main bet once, from the first
        # hand still standing (not bust, not a charlie); every other stake comes back
        lost = seat.main if index == _first_live(seat) else 0
        return HandResult(HandOutcome.DEALER_BLACKJACK, stake, stake - lost)
    if blackjack:
        return HandResult(HandOutcome.BLACKJACK, stake, stake + shared.rules.blackjack_win(stake))
    dealer = known.dealer_total
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
    shared: SharedRound, seat: Seat, known: RoundOutcome | None = None
) -> SeatSettlement:
    """Settle ``seat`` in a settled round (``known`` may be passed to share the round's
    outcome between seats)."""
    outcome = round_outcome(shared) if known is None else known
    hands = tuple([_hand(shared, seat, i, h, outcome) for i, h in enumerate(seat.hands)])
    returned = 0
    staked = 0
    for h in hands:
        returned += h.payout
        staked += h.stake
    insurance = 0
    if seat.insurance:
        staked += seat.insurance
        if outcome.dealer_blackjack:
            insurance = seat.insurance * (1 + shared.rules.insurance_pays)  # seed 002: 2:1
            returned += insurance
    names, mults = outcome.side_names, outcome.side_multipliers
    sides: list[SideResult] = []
    for i, stake in enumerate(seat.sides):
        if stake:
            payout = stake * mults[i]
            sides.append(SideResult(SIDE_BETS[i], stake, names[i], payout))
            staked += stake
            returned += payout
    return SeatSettlement(seat.seat_id, staked, hands, insurance, tuple(sides), returned)


def settle_seats(shared: SharedRound, seats: Iterable[Seat]) -> list[SeatSettlement]:
    """Settle many seats of one round (the round's outcome is worked out once)."""
    known = round_outcome(shared)
    return [settle_seat(shared, seat, known) for seat in seats]
