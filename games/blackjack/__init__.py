"""Infinite Blackjack (seed 002): the pure shared-table engine's public API, re-exported.

A round is one :class:`SharedRound` plus one :class:`Seat` per player; the shoe (any card
sequence, :func:`shoe_from_seed` for production) is passed to the steps that show cards:

>>> from games.blackjack import DEFAULT_RULES, Shoe, open_round, place_bets, deal
>>> from games.blackjack import close_step, play_dealer, settle_seats, decide, options
>>> class Offers:
...     def offer(self, total: int, soft: bool, up: int) -> int | None:
...         return None if total >= 21 else 50
>>> shoe = Shoe.of("Tc 9h 6d 7s 5c Kd")
>>> shared = open_round(DEFAULT_RULES, 0, Offers())
>>> shared, seats = deal(shared, [place_bets(shared, "ann", 100)], shoe)
>>> [o.kind.value for o in options(shared, seats[0])]
['hit', 'stand', 'double', 'cash-out']
>>> seats[0] = decide(shared, seats[0], "hit")
>>> shared, seats, closed = close_step(shared, seats, shoe)
>>> str(closed.card), seats[0].done
('5c', True)
>>> shared = play_dealer(shared, shoe)
>>> [str(c) for c in shared.dealer_cards], settle_seats(shared, seats)[0].returned
(['9h', '7s', 'Kd'], 200)

(Importing this package does not import the maths: :mod:`games.blackjack.cashout` is
looked up lazily, by ``rules.cashout_table_id``, when a round opens without a table.)
"""

from games.blackjack.decisions import Action, AutoReason, Decision, DecisionKind, Option
from games.blackjack.errors import (
    AlreadyDecided,
    InvalidSideBet,
    NotAnOption,
    SeatNotInRound,
    ShoeExhausted,
    ShoeMismatch,
)
from games.blackjack.hand import CHARLIE_CARDS, Hand, total_of
from games.blackjack.paytables import DEFAULT_PAYTABLES, OUTCOMES, PAYTABLES, SideBet, SidePaytable
from games.blackjack.replay import RoundRecord, SeatPlan, ShownRound, play_round, replay_seat
from games.blackjack.round import (
    InsuranceClosed,
    StepClosed,
    can_bet,
    check_bets,
    close_insurance,
    close_step,
    deal,
    next_start,
    open_round,
    place_bets,
    play_dealer,
)
from games.blackjack.rules import DEFAULT_RULES, RULES_VERSION, Rules, TenUpReading
from games.blackjack.seat import (
    SIDE_BETS,
    Seat,
    can_decide,
    check_decision,
    close_insurance_seat,
    close_seat,
    deal_seat,
    decide,
    give_card,
    options,
    timeout_action,
)
from games.blackjack.settlement import (
    HandOutcome,
    HandResult,
    RoundOutcome,
    SeatSettlement,
    SideResult,
    round_outcome,
    settle_seat,
    settle_seats,
)
from games.blackjack.shared import CashoutOffers, Phase, SharedRound, cashout_table
from games.blackjack.shoe import CUT_LABEL, SHOE_LABEL, Shoe, shoe_from_seed

__all__ = [
    "CHARLIE_CARDS",
    "CUT_LABEL",
    "DEFAULT_PAYTABLES",
    "DEFAULT_RULES",
    "OUTCOMES",
    "PAYTABLES",
    "RULES_VERSION",
    "SHOE_LABEL",
    "SIDE_BETS",
    "Action",
    "AlreadyDecided",
    "AutoReason",
    "CashoutOffers",
    "Decision",
    "DecisionKind",
    "Hand",
    "HandOutcome",
    "HandResult",
    "InsuranceClosed",
    "InvalidSideBet",
    "NotAnOption",
    "Option",
    "Phase",
    "RoundOutcome",
    "RoundRecord",
    "Rules",
    "Seat",
    "SeatNotInRound",
    "SeatPlan",
    "SeatSettlement",
    "SharedRound",
    "Shoe",
    "ShoeExhausted",
    "ShoeMismatch",
    "ShownRound",
    "SideBet",
    "SidePaytable",
    "SideResult",
    "StepClosed",
    "TenUpReading",
    "can_bet",
    "can_decide",
    "cashout_table",
    "check_bets",
    "check_decision",
    "close_insurance",
    "close_insurance_seat",
    "close_seat",
    "close_step",
    "deal",
    "deal_seat",
    "decide",
    "give_card",
    "next_start",
    "open_round",
    "options",
    "place_bets",
    "play_dealer",
    "play_round",
    "replay_seat",
    "round_outcome",
    "settle_seat",
    "settle_seats",
    "shoe_from_seed",
    "timeout_action",
    "total_of",
]
