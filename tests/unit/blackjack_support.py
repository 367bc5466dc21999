"""Test support for the blackjack engine: a fake cash-out table and a small table driver.

The driver is a thin, mutable convenience over the pure engine (open, bet, deal, decide,
close, dealer, settle) so that rule tests read as the rule. It never reaches into the
engine's internals.
"""

from __future__ import annotations

from collections.abc import Mapping

from games.blackjack.decisions import Decision, DecisionKind
from games.blackjack.paytables import SideBet
from games.blackjack.round import (
    close_insurance,
    close_step,
    deal,
    open_round,
    place_bets,
    play_dealer,
)
from games.blackjack.rules import DEFAULT_RULES, Rules
from games.blackjack.seat import Seat, decide, options
from games.blackjack.settlement import SeatSettlement, settle_seats
from games.blackjack.shared import Phase, SharedRound
from games.blackjack.shoe import Shoe


class FakeCashout:
    """A cash-out table shaped like ``games.blackjack.cashout.CashoutTable``: offers
    ``40 + 6 * (total - 4)`` hundredths (40..136) below 21, none on 21 or more."""

    def __init__(self, none_for: frozenset[int] = frozenset()) -> None:
        self.none_for = none_for

    def offer(self, total: int, soft: bool, up: int) -> int | None:
        if total >= 21 or total in self.none_for:
            return None
        return 40 + 6 * max(0, total - 4)


FAKE_CASHOUT = FakeCashout()


class Table:
    """Drive one round over a shoe given as text, positions 0..3 being P1, up, P2, hole."""

    def __init__(
        self,
        cards: str,
        bets: Mapping[str, int] | None = None,
        sides: Mapping[str, Mapping[SideBet | str, int]] | None = None,
        rules: Rules = DEFAULT_RULES,
        start: int = 0,
        cut_index: int | None = None,
        prefix: str = "",
    ) -> None:
        self.shoe = Shoe.of((prefix + " " + cards).strip(), cut_index)
        self.shared: SharedRound = open_round(rules, start, FAKE_CASHOUT)
        wanted = {"a": 100} if bets is None else bets
        side_bets = sides or {}
        self.seats: dict[str, Seat] = {
            sid: place_bets(self.shared, sid, main, side_bets.get(sid))
            for sid, main in wanted.items()
        }
        self.staked_at_bet = {sid: s.staked for sid, s in self.seats.items()}
        shared, seats = deal(self.shared, list(self.seats.values()), self.shoe)
        self.shared = shared
        self.seats = {s.seat_id: s for s in seats}
        self.closed: list[object] = []

    @property
    def phase(self) -> Phase:
        return self.shared.phase

    def seat(self, sid: str = "a") -> Seat:
        return self.seats[sid]

    def options(self, sid: str = "a") -> list[str]:
        return [o.kind.value for o in options(self.shared, self.seats[sid])]

    def option_amount(self, kind: str, sid: str = "a") -> int:
        (amount,) = [
            o.amount for o in options(self.shared, self.seats[sid]) if o.kind.value == kind
        ]
        return amount

    def decide(self, decision: str, sid: str = "a", funded: bool = True) -> Table:
        self.seats[sid] = decide(
            self.shared, self.seats[sid], Decision(DecisionKind(decision)), funded
        )
        return self

    def close(self) -> Table:
        seats = list(self.seats.values())
        if self.shared.phase is Phase.INSURANCE:
            self.shared, seats, closed = close_insurance(self.shared, seats, self.shoe)
        else:
            self.shared, seats, closed = close_step(self.shared, seats, self.shoe)  # type: ignore[assignment]
        self.closed.append(closed)
        self.seats = {s.seat_id: s for s in seats}
        return self

    def play(self, *decisions: str, sid: str = "a") -> Table:
        """One decision per step for seat ``sid`` (other seats time out), each step closed."""
        for d in decisions:
            self.decide(d, sid)
            self.close()
        return self

    def finish(self) -> dict[str, SeatSettlement]:
        """Close every remaining window with automatic actions, play the dealer, settle."""
        while self.shared.phase in (Phase.INSURANCE, Phase.STEP):
            self.close()
        if self.shared.phase is Phase.DEALER:
            self.shared = play_dealer(self.shared, self.shoe)
        return {s.seat_id: s for s in settle_seats(self.shared, self.seats.values())}

    def cards(self, sid: str = "a", hand: int = 0) -> str:
        return " ".join(str(c) for c in self.seats[sid].hands[hand].cards)

    def dealer(self) -> str:
        return " ".join(str(c) for c in self.shared.dealer_cards)
