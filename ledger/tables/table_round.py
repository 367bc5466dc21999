"""The TableRound aggregate: the shared state of one live round (DESIGN §6).

It holds only what every seat shares: the phase with its deadline, the cards as they are
shown (the two player cards and the up card at the deal, each step's card when the step
closes, the hole card and the dealer's draws when the dealer plays), the automatic actions
the runner applied, and the totals once settled. Only the runner writes it (and the
operator's pause, resume and void); a player's command reads it and writes its own seat,
so many players betting at once never contend on this aggregate.

Its id derives from (table, round number): two runners opening the same round create the
same aggregate, and the second save is a version conflict (the fence).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from games.blackjack import Phase
from ledger import contracts
from ledger.accounts import NAMESPACE


def table_round_id_for(table: str, number: int) -> UUID:
    return uuid5(NAMESPACE, f"blackjack-round:{table}:{number}")


class TableRound(Aggregate):
    TOPIC = contracts.TABLE_ROUND

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.TABLE_ROUND_CREATED

    @staticmethod
    def create_id(table: str, number: int) -> UUID:
        return table_round_id_for(table, number)

    @event("Opened", topic=contracts.TABLE_ROUND_OPENED)
    def __init__(
        self,
        table: str,
        number: int,
        code: str,
        currency: str,
        shoe_id: str,
        shoe_number: int,
        start: int,
        config: dict[str, Any],
        started_at: str,
        deadline: str,
        seats_from: int,
    ) -> None:
        self.table = table
        self.number = number
        self.code = code
        self.currency = currency
        self.shoe_id = shoe_id
        self.shoe_number = shoe_number
        self.start = start
        self.config = dict(config)
        self.started_at = started_at
        self.phase = Phase.BETTING
        """The engine's :class:`~games.blackjack.Phase`, with the table's own ``settling``
        (the dealer has played, seats are being paid: the engine's ``settled``),
        ``settled`` (every seat paid) and ``voided``; an event carries its wire string."""
        self.step = 0
        self.deadline: str | None = deadline
        self.waiting_since: str | None = None
        """When the betting window closed with no bet (the round waits for one, no deadline)."""
        self.seats_from = seats_from
        self.seats: list[str] = []
        self.seated: frozenset[str] = frozenset()
        """The dealt seats again, for a membership test that does not scan ``seats``."""
        self.player_cards: list[str] = []
        self.up: str | None = None
        self.hole: str | None = None
        self.peeked = False
        self.step_cards: list[str] = []
        self.dealer_draws: list[str] = []
        self.automatic: dict[str, list[list[str]]] = {}
        """step ("0" = insurance) -> [[seat id, kind, reason], ...] applied by the runner."""
        self.automatic_seats: dict[str, frozenset[str]] = {}
        """step -> the seat ids in ``automatic[step]`` (a seat's replay asks per step)."""
        self.phases: list[list[Any]] = [[Phase.BETTING.value, started_at, deadline]]
        self.paused_at: str | None = None
        self.settled_seats = 0
        self.totals: dict[str, int] = {}
        self.next_start: int | None = None
        self.shoe_done = False

    def _phase(self, phase: str, step: int, deadline: str | None, at: str) -> None:
        self.phase = Phase(phase)
        self.step = step
        self.deadline = deadline
        shown = f"step-{step}" if self.phase is Phase.STEP else self.phase.value
        self.phases = [*self.phases, [shown, at, deadline]]

    def _automatic(self, step: str, automatic: list[list[str]]) -> None:
        self.automatic = {**self.automatic, step: [list(a) for a in automatic]}
        self.automatic_seats = {**self.automatic_seats, step: frozenset(a[0] for a in automatic)}

    def dealt_in(self, seat_id: str) -> bool:
        """Whether the seat was dealt into this round."""
        return seat_id in self.seated

    @event("BettingWaiting", topic=contracts.TABLE_ROUND_BETTING_WAITING)
    def betting_waiting(self, at: str) -> None:
        """No seat bet in the window: the round stays open for bets with no deadline, and
        nothing more is written while nobody bets (an idle table writes nothing); the
        first bet starts the timer again (:meth:`betting_reopened`)."""
        self.deadline = None
        self.waiting_since = at

    @event("BettingReopened", topic=contracts.TABLE_ROUND_BETTING_REOPENED)
    def betting_reopened(self, at: str, deadline: str) -> None:
        """The betting timer starts again, closing at ``deadline``: once a seat has bet
        in a round that was waiting for its first bet. (Logs written before idle rounds
        waited hold one of these for every window nobody bet in; they replay the same.)"""
        self.deadline = deadline
        self.waiting_since = None

    @event("Dealt", topic=contracts.TABLE_ROUND_DEALT)
    def dealt(
        self,
        at: str,
        seats: list[str],
        player_cards: list[str],
        up: str,
        phase: str,
        step: int,
        deadline: str | None,
    ) -> None:
        self.seats = list(seats)
        self.seated = frozenset(seats)
        self.player_cards = list(player_cards)
        self.up = up
        self._phase(phase, step, deadline, at)

    @event("InsuranceClosed", topic=contracts.TABLE_ROUND_INSURANCE_CLOSED)
    def insurance_closed(
        self,
        at: str,
        automatic: list[list[str]],
        dealer_blackjack: bool,
        hole: str | None,
        phase: str,
        step: int,
        deadline: str | None,
    ) -> None:
        self._automatic("0", automatic)
        self.peeked = True
        self.hole = hole
        self._phase(phase, step, deadline, at)

    @event("StepClosed", topic=contracts.TABLE_ROUND_STEP_CLOSED)
    def step_closed(
        self,
        at: str,
        closed: int,
        card: str | None,
        automatic: list[list[str]],
        phase: str,
        step: int,
        deadline: str | None,
    ) -> None:
        self._automatic(str(closed), automatic)
        if card is not None:
            self.step_cards = [*self.step_cards, card]
        self._phase(phase, step, deadline, at)

    @event("DealerPlayed", topic=contracts.TABLE_ROUND_DEALER_PLAYED)
    def dealer_played(self, at: str, hole: str, draws: list[str]) -> None:
        self.hole = hole
        self.dealer_draws = list(draws)
        self._phase(Phase.SETTLING, 0, None, at)

    @event("Settled", topic=contracts.TABLE_ROUND_SETTLED)
    def settled(self, at: str, seats: int, totals: dict[str, int], next_start: int | None) -> None:
        self.settled_seats = seats
        self.totals = dict(totals)
        self.next_start = next_start
        self.shoe_done = next_start is None
        self._phase(Phase.SETTLED, 0, None, at)

    @event("Paused", topic=contracts.TABLE_ROUND_PAUSED)
    def paused(self, at: str, reason: str) -> None:
        self.paused_at = at

    @event("Resumed", topic=contracts.TABLE_ROUND_RESUMED)
    def resumed(self, at: str, deadline: str | None) -> None:
        """Deadlines were frozen while paused: the open one moves by the pause's length."""
        self.paused_at = None
        self.deadline = deadline

    @event("Voided", topic=contracts.TABLE_ROUND_VOIDED)
    def voided(
        self,
        at: str,
        reason: str,
        incident_id: str,
        refunded: int,
        reversed_win: int,
        next_start: int | None,
    ) -> None:
        self.void_reason = reason
        self.incident_id = incident_id
        self.refunded = refunded
        self.reversed_win = reversed_win
        self.next_start = next_start
        self._phase(Phase.VOIDED, 0, None, at)

    @property
    def closed(self) -> bool:
        return self.phase in (Phase.SETTLED, Phase.VOIDED)
