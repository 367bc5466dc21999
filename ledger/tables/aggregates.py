"""The live tables' aggregates (DESIGN §6): a table, its shoes, its rounds and their seats.

- :class:`Table`: an operator's table and its configuration. A configuration change is
  an event; the runner copies the configuration into each round it opens, so a change
  applies from the next round (the open round keeps the copy it started with). The runner
  also records on the table which round and which shoe are current: that pointer is how a
  restarted runner finds where it was, and the table's version is one half of the fence
  between two runners (:mod:`ledger.tables.runner`).
- :class:`TableShoe` (DESIGN §5.3 "Randomness"): its first event commits to
  ``SHA-256(seed)`` and holds the seed sealed with AES-GCM under the sealing key (the
  helpers of :mod:`ledger.rounds`, the shoe's id as associated data), so a restarted
  runner deals the same cards; its last event, once the round that brought out the cut
  card has settled, reveals the seed. In between the log holds only cards already shown.
- :class:`TableRound`: the shared state of one round: the phase with its deadline, the
  cards as they are shown (the two player cards and the up card at the deal, each step's
  card when the step closes, the hole card and the dealer's draws when the dealer plays),
  the automatic actions the runner applied, the totals once settled. Only the runner
  writes it (and the operator's pause, resume and void); a player's command reads it and
  writes its own seat, so many players betting at once never contend on it. Its id
  derives from (table, round number): two runners opening the same round create the same
  aggregate, and the second save is a version conflict (the fence).
- :class:`TableRoundCode`: finds a round by its game code in one read (its id derives
  from the code), so the table keeps no index that grows with every round; two rounds
  that drew the same code collide at insert, and the open is retried with a new code.
- :class:`TableSeat`: one player's part of one round: the chips in the order placed (UNDO
  takes the last one back), the decisions per step (with seed 002's replacement when the
  balance did not cover a double or split), the connection, the settlement or void. Every
  event that goes with a money movement is saved in one transaction with the player's
  :class:`~ledger.accounts.GameSession`, whose events carry the movement itself; a seat's
  events carry no ``movement`` or ``balance``, so the books ``audit-cli verify`` replays
  are the sessions' alone. A seat holds no card: its hands follow from the cards the
  round has shown and its own decisions (:mod:`ledger.tables.context`).

Topics are the contracts' (:mod:`ledger.contracts`), so a class may move between modules
without changing what the log holds.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from games.blackjack import Phase
from ledger import contracts
from ledger.accounts import NAMESPACE
from ledger.ids import uuid5
from ledger.money import check_currency
from ledger.tables.config import TableConfig


def table_id_for(table: str) -> UUID:
    return uuid5(NAMESPACE, f"blackjack-table:{table}")


class Table(Aggregate):
    TOPIC = contracts.TABLE

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.TABLE_CREATED

    @staticmethod
    def create_id(table: str) -> UUID:
        return table_id_for(table)

    @event("Opened", topic=contracts.TABLE_OPENED)
    def __init__(self, table: str, currency: str, config: dict[str, Any]) -> None:
        self.table = table
        self.currency = currency
        self.config = dict(config)
        self.rounds = 0
        self.round_id: str | None = None
        self.round_code: str | None = None
        self.shoes = 0
        self.shoe_id: str | None = None

    @staticmethod
    def check_currency(currency: str) -> str:
        return check_currency(currency)

    @property
    def settings(self) -> TableConfig:
        """The configuration the next round opens with (``config`` is its wire form)."""
        return TableConfig.of(self.config)

    @event("Configured", topic=contracts.TABLE_CONFIGURED)
    def configured(self, config: dict[str, Any]) -> None:
        self.config = dict(config)

    @event("ShoeStarted", topic=contracts.TABLE_SHOE_STARTED)
    def shoe_started(self, number: int, shoe_id: str) -> None:
        self.shoes = number
        self.shoe_id = shoe_id

    @event("RoundStarted", topic=contracts.TABLE_ROUND_STARTED)
    def round_started(self, number: int, round_id: str, code: str) -> None:
        """The current round. No index of every round's code grows here: a round is found
        by its code through :class:`TableRoundCode`."""
        self.rounds = number
        self.round_id = round_id
        self.round_code = code


def shoe_id_for(table: str, number: int) -> UUID:
    return uuid5(NAMESPACE, f"blackjack-shoe:{table}:{number}")


class TableShoe(Aggregate):
    TOPIC = contracts.SHOE

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.SHOE_CREATED

    @staticmethod
    def create_id(table: str, number: int) -> UUID:
        return shoe_id_for(table, number)

    @event("Shuffled", topic=contracts.SHOE_SHUFFLED)
    def __init__(
        self,
        table: str,
        number: int,
        decks: int,
        rules_version: str,
        commitment: str,
        sealed_seed: str,
        sealing_kid: str,
        shuffled_at: str,
    ) -> None:
        self.table = table
        self.number = number
        self.decks = decks
        self.rules_version = rules_version
        self.commitment = commitment
        self.sealed_seed = sealed_seed
        self.sealing_kid = sealing_kid
        self.shuffled_at = shuffled_at
        self.seed: str | None = None
        self.rounds: int = 0

    @event("Revealed", topic=contracts.SHOE_REVEALED)
    def revealed(self, seed: str, rounds: int, last_round: str) -> None:
        """seed 002: the shoe is done once the cut-card round has settled."""
        self.seed = seed
        self.rounds = rounds


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

    @property
    def settings(self) -> TableConfig:
        """The round's configuration (fixed when it opened; ``config`` is its wire form)."""
        return TableConfig.of(self.config)

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


def round_code_id_for(code: str) -> UUID:
    return uuid5(NAMESPACE, f"blackjack-round-code:{code}")


class TableRoundCode(Aggregate):
    TOPIC = contracts.TABLE_ROUND_CODE

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.TABLE_ROUND_CODE_CREATED

    @staticmethod
    def create_id(code: str) -> UUID:
        return round_code_id_for(code)

    @event("Recorded", topic=contracts.TABLE_ROUND_CODE_RECORDED)
    def __init__(self, code: str, table: str, number: int, round_id: str) -> None:
        self.code = code
        self.table = table
        self.number = number
        self.round_id = round_id


def round_by_code(find: Callable[[type[Any], UUID], Any], table: str, code: str) -> Any:
    """The :class:`TableRound` of ``table`` with game code ``code``, or None (``find`` is
    ``UnitOfWork.get`` or ``Casino.find``)."""
    if not isinstance(code, str) or not code:
        return None
    index = find(TableRoundCode, round_code_id_for(code))
    if not isinstance(index, TableRoundCode) or index.table != table:
        return None
    rnd = find(TableRound, UUID(index.round_id))
    return rnd if isinstance(rnd, TableRound) and rnd.code == code else None


class SeatStatus(StrEnum):
    """Where a seat stands (wire format: the account history and the views show it)."""

    OPEN = "open"
    CANCELLED = "cancelled"
    """Its bets were given back before the deal (a disconnection, a bet after the deal)."""
    NO_BET = "no-bet"
    """Every chip was taken back (UNDO, UNDO ALL) and none placed again: the seat has no
    bet, so it is not part of the round, as a session that never bet (not dealt in, not
    settled, not voided, no account-history row). A chip placed again in the window
    opens it again."""
    SETTLED = "settled"
    VOIDED = "voided"


def seat_id_for(round_id: UUID | str, session_id: UUID | str) -> UUID:
    return uuid5(NAMESPACE, f"blackjack-seat:{round_id}:{session_id}")


def chip_moves(seat: TableSeat) -> int:
    """Chips the seat has placed or taken back (each one); a seat restored from a snapshot
    taken before seats counted them starts from there."""
    return int(getattr(seat, "moves", 0))


class TableSeat(Aggregate):
    TOPIC = contracts.SEAT

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.SEAT_CREATED

    @staticmethod
    def create_id(round_id: str, session_id: str) -> UUID:
        return seat_id_for(round_id, session_id)

    @event("Opened", topic=contracts.SEAT_OPENED)
    def __init__(
        self, round_id: str, session_id: str, table: str, code: str, player_id: str
    ) -> None:
        self.round_id = round_id
        self.session_id = session_id
        self.table = table
        self.code = code
        self.player_id = player_id
        self.chips: list[list[Any]] = []
        self.decisions: dict[str, list[Any]] = {}
        self.debited = 0
        self.credited = 0
        self.status = SeatStatus.OPEN
        self.connected = True
        self.result: dict[str, Any] = {}
        # A seamless seat's accepted debits not given back, oldest first: each
        # [transaction_id, stage, amount, chips] (chips: how many of the last chips it
        # paid for; 0 for a decision's stake). A transfer seat's stays empty.
        self.wallet_debits: list[list[Any]] = []
        # Chips placed or taken back in this round (each one): capped per round.
        self.moves = 0

    @event("WalletDebited", topic=contracts.SEAT_WALLET_DEBITED)
    def wallet_debited(self, transaction_id: str, stage: str, amount: int, chips: int) -> None:
        """The operator's wallet accepted this debit for the seat's last ``chips`` chips
        (or a decision's stake)."""
        self.wallet_debits = [*self.wallet_debits, [transaction_id, stage, amount, chips]]

    @event("WalletReturned", topic=contracts.SEAT_WALLET_RETURNED)
    def wallet_returned(self, transaction_id: str, reason: str) -> None:
        """The debit's rollback is queued (an undo, a cancellation, a void)."""
        self.wallet_debits = [d for d in self.wallet_debits if d[0] != transaction_id]

    def bets(self) -> dict[str, int]:
        """Total on each bet type, in minor units (types without chips left out)."""
        out: dict[str, int] = {}
        for bet, amount in self.chips:
            out[bet] = out.get(bet, 0) + int(amount)
        return out

    @property
    def main(self) -> int:
        return self.bets().get("main", 0)

    @event("BetPlaced", topic=contracts.SEAT_BET_PLACED)
    def bet_placed(self, bet: str, amount: int, via: str) -> None:
        self.chips = [*self.chips, [bet, amount]]
        self.debited += amount
        self.status = SeatStatus.OPEN
        self.moves = chip_moves(self) + 1

    @event("BetUndone", topic=contracts.SEAT_BET_UNDONE)
    def bet_undone(self, bet: str, amount: int) -> None:
        self.chips = self.chips[:-1]
        self.debited -= amount
        self.moves = chip_moves(self) + 1
        if not self.chips:  # the last chip taken back: no bet, not part of the round
            self.status = SeatStatus.NO_BET

    @event("BetsCancelled", topic=contracts.SEAT_BETS_CANCELLED)
    def bets_cancelled(self, reason: str, refunded: int) -> None:
        """seed 002: a player disconnected before the betting time ended gets the bets back."""
        self.status = SeatStatus.CANCELLED
        self.chips = []
        self.debited -= refunded

    @event("Decided", topic=contracts.SEAT_DECIDED)
    def decided(
        self,
        step: int,
        kind: str,
        requested: str | None,
        reason: str | None,
        cost: int,
        paid: int,
    ) -> None:
        """``kind`` is what applies; ``requested`` and ``reason`` say when seed 002's
        automatic action replaced the player's (an unfunded double or split)."""
        self.decisions = {**self.decisions, str(step): [kind, requested, reason]}
        self.debited += cost
        self.credited += paid

    @event("Connection", topic=contracts.SEAT_CONNECTION)
    def connection(self, connected: bool, at: str) -> None:
        self.connected = connected

    @event("Settled", topic=contracts.SEAT_SETTLED)
    def settled(self, credited: int, refunded: int, result: dict[str, Any]) -> None:
        self.status = SeatStatus.SETTLED
        self.credited += credited
        self.debited -= refunded
        self.result = dict(result)

    @event("Voided", topic=contracts.SEAT_VOIDED)
    def voided(self, reason: str, incident_id: str, refunded: int, reversed_win: int) -> None:
        self.status = SeatStatus.VOIDED
        self.void_reason = reason
        self.incident_id = incident_id
        self.refunded = refunded
        self.reversed_win = reversed_win
