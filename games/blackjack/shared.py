"""The shared state of one Infinite Blackjack round: phase, cards shown, dealer (DESIGN §5.3).

Every seat of a round shares this one value; per-seat state lives in
:class:`games.blackjack.seat.Seat`, so a seat's decision never copies the table. The state
holds only cards already shown: the two player cards and the dealer's up card after the
deal, the step cards revealed so far, and the hole card and dealer draws once shown. The
shoe is never stored; steps that reveal cards take it as an argument.

Cash-out offers come from a :class:`CashoutOffers` table (``rules.cashout_table_id`` in
:mod:`games.blackjack.cashout`, or one passed in).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from games.blackjack.hand import total_of
from games.blackjack.rules import Rules
from games.cards import Card, Rank
from games.errors import InvalidRules

__all__ = ["CashoutOffers", "Phase", "SharedRound", "cashout_table"]


class Phase(StrEnum):
    """Where a round stands (wire format, never renamed): betting -> (the deal) ->
    insurance, with an ace up -> (the peek) -> step 1..n -> dealer -> settled. The deal
    and the peek are transitions, not phases: a state is never left between them."""

    BETTING = "betting"
    """Seats place their main and side bets."""
    INSURANCE = "insurance"
    """The initial cards are out and the dealer shows an ace: seats answer insurance
    (seed 002); closing the window is the peek."""
    STEP = "step"
    """Decision step ``SharedRound.step`` is open."""
    DEALER = "dealer"
    """Every seat is done; the dealer plays next."""
    SETTLED = "settled"
    """The dealer's hand is final; every seat can be settled. (A live table's round is
    ``settled`` once every seat is paid: until then it is ``settling``.)"""
    SETTLING = "settling"
    """A live table's round whose dealer has played and whose seats are being paid
    (:mod:`ledger.tables`); the engine's state is then ``settled``. Never an engine phase."""
    VOIDED = "voided"
    """A live table's round voided by the operator (seed 002 "Malfunzionamento"). Never an
    engine phase."""


class CashoutOffers(Protocol):
    """A cash-out table: the offer in hundredths of the main bet (40..177), or ``None``
    where no offer is made. ``up`` is the dealer's up card value, 2..10, 11 for an ace."""

    def offer(self, total: int, soft: bool, up: int) -> int | None: ...


def cashout_table(rules: Rules) -> CashoutOffers:
    """The table named by ``rules.cashout_table_id`` in :mod:`games.blackjack.cashout`.

    Imported lazily: the tables are derived by the certified maths, which imports the
    rules from this package."""
    try:
        module = importlib.import_module("games.blackjack.cashout")
    except ImportError as exc:
        raise InvalidRules("no cash-out tables are published (games.blackjack.cashout)") from exc
    tables = getattr(module, "CASHOUT_TABLES", {})
    table = tables.get(rules.cashout_table_id)
    if table is None:
        raise InvalidRules(f"unknown cash-out table {rules.cashout_table_id!r}")
    return table  # type: ignore[no-any-return]


_UP_VALUES = {rank: 11 if rank is Rank.ACE else min(int(rank), 10) for rank in Rank}


@dataclass(frozen=True, slots=True)
class SharedRound:
    """What every seat of a round shares. ``start`` is the shoe position of its first card.

    ``step`` is the open decision step (1-based) in phase ``step``; step ``k``'s card is
    ``step_cards[k - 1]``, the ``k``-th card after the initial four, shown only once step
    ``k`` has closed. ``hole`` is ``None`` until the dealer shows it (a blackjack found at
    the peek, or the dealer's turn).
    """

    rules: Rules
    start: int
    cashout: CashoutOffers
    phase: Phase = Phase.BETTING
    player_cards: tuple[Card, ...] = ()
    up: Card | None = None
    hole: Card | None = None
    step: int = 0
    step_cards: tuple[Card, ...] = ()
    dealer_draws: tuple[Card, ...] = ()
    peeked: bool = False
    """With an ace up, the dealer has checked the hole card (and found no blackjack unless
    ``hole`` is shown and makes 21)."""
    cut_out: bool = False
    """The cut card came out in this round: after it, the shoe is done (seed 002)."""

    @property
    def up_value(self) -> int:
        """The up card's value, 2..10 or 11 for an ace (0 before the deal)."""
        return 0 if self.up is None else _UP_VALUES[self.up.rank]

    @property
    def dealer_cards(self) -> tuple[Card, ...]:
        """The dealer's cards shown so far (up card, then hole and draws once shown)."""
        if self.up is None:
            return ()
        if self.hole is None:
            return (self.up,)
        return (self.up, self.hole, *self.dealer_draws)

    @property
    def dealer_total(self) -> int:
        return total_of(self.dealer_cards)[0]

    @property
    def dealer_blackjack(self) -> bool:
        """True once the dealer's first two cards are shown and make 21."""
        return self.hole is not None and total_of((self.up, self.hole))[0] == 21  # type: ignore[arg-type]

    @property
    def next_position(self) -> int:
        """The shoe position after the cards this round has taken (the hole included)."""
        if self.up is None:
            return self.start
        return self.start + 4 + len(self.step_cards) + len(self.dealer_draws)

    @property
    def player_blackjack(self) -> bool:
        """The shared initial cards make a blackjack (every unsplit seat has it)."""
        return len(self.player_cards) == 2 and total_of(self.player_cards)[0] == 21
