"""The TableSeat aggregate: one player's part of one live round (DESIGN §6).

Per player per round: the chips in the order placed (so UNDO takes the last one back),
the decisions per step (with seed 002's replacement when the balance did not cover a
double or split), the connection state, and the settlement or void. Every event that goes
with a money movement is saved in one transaction with the player's
:class:`~ledger.accounts.GameSession`, whose events carry the movement itself; a seat's
events carry no ``movement`` or ``balance`` field, so the books ``audit-cli verify``
replays are the sessions' alone. A seat holds no card: its hands follow from the cards
the table round has shown and its own decisions (:mod:`ledger.tables.replay`).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE

OPEN, CANCELLED, SETTLED, VOIDED = "open", "cancelled", "settled", "voided"


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
        self.status = OPEN
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
        self.status = OPEN
        self.moves = chip_moves(self) + 1

    @event("BetUndone", topic=contracts.SEAT_BET_UNDONE)
    def bet_undone(self, bet: str, amount: int) -> None:
        self.chips = self.chips[:-1]
        self.debited -= amount
        self.moves = chip_moves(self) + 1

    @event("BetsCancelled", topic=contracts.SEAT_BETS_CANCELLED)
    def bets_cancelled(self, reason: str, refunded: int) -> None:
        """seed 002: a player disconnected before the betting time ended gets the bets back."""
        self.status = CANCELLED
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
        self.status = SETTLED
        self.credited += credited
        self.debited -= refunded
        self.result = dict(result)

    @event("Voided", topic=contracts.SEAT_VOIDED)
    def voided(self, reason: str, incident_id: str, refunded: int, reversed_win: int) -> None:
        self.status = VOIDED
        self.void_reason = reason
        self.incident_id = incident_id
        self.refunded = refunded
        self.reversed_win = reversed_win
