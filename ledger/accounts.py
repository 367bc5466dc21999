"""Aggregates that hold money: the player's game account and the game session.

Each money-moving event carries one ``movement`` (source, destination, amount, currency)
and the new ``balance`` of its aggregate, so an auditor can rebuild and cross-check every
balance from the raw log without this code.
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.errors import InsufficientFunds, SessionBusy, SessionClosed
from ledger.money import (
    account_ledger,
    bank_ledger,
    house_ledger,
    movement,
    session_ledger,
)
from ledger.seamless import port

NAMESPACE = uuid5(NAMESPACE_URL, "https://croupier.invalid/ids")


def _game_code_from_round_id(state: dict[str, Any]) -> None:
    """Upcaster of the session events' class version 1 (``round_id`` held the game code)."""
    state["game_code"] = state.pop("round_id")


def account_id_for(player_id: str) -> UUID:
    return uuid5(NAMESPACE, f"account:{player_id}")


class Account(Aggregate):
    """The player's game account (conto di gioco)."""

    TOPIC = contracts.ACCOUNT

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.ACCOUNT_CREATED

    @staticmethod
    def create_id(player_id: str) -> UUID:
        return account_id_for(player_id)

    @event("Opened", topic=contracts.ACCOUNT_OPENED)
    def __init__(self, player_id: str, currency: str) -> None:
        self.player_id = player_id
        self.currency = currency
        self.balance = 0
        self.open_sessions: list[str] = []
        self.voided_rounds: list[str] = []
        """Rounds voided after their session closed (their refund or reversal is here)."""

    def check_debit(self, amount: int) -> None:
        if amount > self.balance:
            raise InsufficientFunds(
                f"account balance {self.balance} is below {amount}",
                player_id=self.player_id,
            )

    def deposit(self, amount: int) -> None:
        self._deposited(
            amount=amount,
            balance=self.balance + amount,
            movement=movement(
                bank_ledger(self.currency), account_ledger(self.id), amount, self.currency
            ),
        )

    @event("Deposited", topic=contracts.ACCOUNT_DEPOSITED)
    def _deposited(self, amount: int, balance: int, movement: dict[str, Any]) -> None:
        self.balance = balance

    def withdraw(self, amount: int) -> None:
        self.check_debit(amount)
        self._withdrawn(
            amount=amount,
            balance=self.balance - amount,
            movement=movement(
                account_ledger(self.id), bank_ledger(self.currency), amount, self.currency
            ),
        )

    @event("Withdrawn", topic=contracts.ACCOUNT_WITHDRAWN)
    def _withdrawn(self, amount: int, balance: int, movement: dict[str, Any]) -> None:
        self.balance = balance

    def fund_session(self, session_id: UUID, amount: int) -> None:
        self.check_debit(amount)
        self._session_funded(
            session_id=str(session_id),
            amount=amount,
            balance=self.balance - amount,
            movement=movement(
                account_ledger(self.id), session_ledger(session_id), amount, self.currency
            ),
        )

    @event("SessionFunded", topic=contracts.ACCOUNT_SESSION_FUNDED)
    def _session_funded(
        self, session_id: str, amount: int, balance: int, movement: dict[str, Any]
    ) -> None:
        self.balance = balance
        self.open_sessions = [*self.open_sessions, session_id]

    def return_session(self, session_id: UUID, amount: int) -> None:
        self._session_returned(
            session_id=str(session_id),
            amount=amount,
            balance=self.balance + amount,
            movement=movement(
                session_ledger(session_id), account_ledger(self.id), amount, self.currency
            ),
        )

    @event("SessionReturned", topic=contracts.ACCOUNT_SESSION_RETURNED)
    def _session_returned(
        self, session_id: str, amount: int, balance: int, movement: dict[str, Any]
    ) -> None:
        self.balance = balance
        self.open_sessions = [s for s in self.open_sessions if s != session_id]

    def refund_round(self, code: str, amount: int) -> None:
        """A void after the session closed: the refund goes to the account."""
        self._round_refunded(
            round_code=code,
            amount=amount,
            balance=self.balance + amount,
            movement=movement(
                house_ledger(self.currency), account_ledger(self.id), amount, self.currency
            ),
        )

    @event("RoundRefunded", topic=contracts.ACCOUNT_ROUND_REFUNDED)
    def _round_refunded(
        self, round_code: str, amount: int, balance: int, movement: dict[str, Any]
    ) -> None:
        self.balance = balance
        self.voided_rounds = [*self.voided_rounds, round_code]

    def reverse_round_win(self, code: str, amount: int) -> None:
        self.check_debit(amount)
        self._round_win_reversed(
            round_code=code,
            amount=amount,
            balance=self.balance - amount,
            movement=movement(
                account_ledger(self.id), house_ledger(self.currency), amount, self.currency
            ),
        )

    @event("RoundWinReversed", topic=contracts.ACCOUNT_ROUND_WIN_REVERSED)
    def _round_win_reversed(
        self, round_code: str, amount: int, balance: int, movement: dict[str, Any]
    ) -> None:
        self.balance = balance


class GameSession(Aggregate):
    """A game session funded by a buy-in; stakes and wins move its balance.

    A *seamless* session (``operator`` set, issue 16) has no buy-in: its money stays at
    the operator's wallet, so its stakes and wins move between the wallet's ledger and the
    house and its own balance stays 0. It records each debit's intent and outcome and
    queues every credit and rollback (the outbox, :mod:`ledger.seamless.outbox`)."""

    TOPIC = contracts.SESSION
    # Defaults for sessions opened (or snapshotted) before seamless mode existed.
    operator: str | None = None
    pending_debit: dict[str, Any] | None = None
    last_debit: dict[str, Any] | None = None
    stake_intents = 0  # debit intents recorded (a live table's stages count them)

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.SESSION_CREATED

    @event("Opened", topic=contracts.SESSION_OPENED)
    def __init__(
        self,
        account_id: UUID,
        player_id: str,
        currency: str,
        buy_in: int,
        operator: str | None = None,
    ) -> None:
        self.operator = operator
        self.account_id = account_id
        self.player_id = player_id
        self.currency = currency
        self.balance = buy_in
        self.closed = False
        self.open_round: str | None = None
        self.last_stake: dict[str, Any] | None = None

    def check_open(self) -> None:
        if self.closed:
            raise SessionClosed("the game session is closed", session_id=self.id)

    def check_idle(self) -> None:
        self.check_open()
        if self.open_round is not None:
            raise SessionBusy(
                "a round is open in this session", session_id=self.id, game_code=self.open_round
            )
        if self.pending_debit is not None:
            raise SessionBusy(
                "a stake is waiting for the wallet's answer in this session",
                session_id=self.id,
                game_code=self.pending_debit.get("game_code"),
            )

    @property
    def seamless(self) -> bool:
        return self.operator is not None

    def _funds(self) -> str:
        """Where this session's stakes come from and its wins go."""
        if self.operator is None:
            return session_ledger(self.id)
        return contracts.wallet_ledger(self.operator, self.player_id)

    def _after(self, delta: int) -> int:
        """The session's balance after moving ``delta``: a seamless one stays at 0."""
        return self.balance if self.seamless else self.balance + delta

    def check_debit(self, amount: int) -> None:
        if self.seamless:
            return  # the operator's wallet decides (the debit was accepted before this)
        if amount > self.balance:
            raise InsufficientFunds(
                f"session balance {self.balance} is below {amount}", session_id=self.id
            )

    # Session events name the round by its game code. Before class_version 2 that field
    # was called ``round_id`` (while results call the round's UUID ``round_id``): the
    # upcasters rename it when an old event is read, so logs written before still replay.
    # The topics (wire format) do not change.

    class StakeDebited(Aggregate.Event):
        TOPIC = contracts.SESSION_STAKE_DEBITED
        class_version = 2
        game_code: str
        amount: int
        balance: int
        movement: dict[str, Any]
        upcast_v1_v2 = staticmethod(_game_code_from_round_id)

    class WinCredited(Aggregate.Event):
        TOPIC = contracts.SESSION_WIN_CREDITED
        class_version = 2
        game_code: str
        amount: int
        balance: int
        movement: dict[str, Any]
        upcast_v1_v2 = staticmethod(_game_code_from_round_id)

    class Refunded(Aggregate.Event):
        TOPIC = contracts.SESSION_REFUNDED
        class_version = 2
        game_code: str
        amount: int
        balance: int
        movement: dict[str, Any]
        upcast_v1_v2 = staticmethod(_game_code_from_round_id)

    class WinReversed(Aggregate.Event):
        TOPIC = contracts.SESSION_WIN_REVERSED
        class_version = 2
        game_code: str
        amount: int
        balance: int
        movement: dict[str, Any]
        upcast_v1_v2 = staticmethod(_game_code_from_round_id)

    class RoundOpened(Aggregate.Event):
        TOPIC = contracts.SESSION_ROUND_OPENED
        class_version = 2
        game_code: str
        upcast_v1_v2 = staticmethod(_game_code_from_round_id)

    class RoundClosed(Aggregate.Event):
        TOPIC = contracts.SESSION_ROUND_CLOSED
        class_version = 2
        game_code: str
        last_stake: dict[str, Any] | None
        upcast_v1_v2 = staticmethod(_game_code_from_round_id)

    class RoundSettled(Aggregate.Event):
        """The win of a round credited and the round closed, in one event: what
        :class:`WinCredited` then :class:`RoundClosed` record (a live table settles a
        winning seat with it; logs written before hold the pair, which still replays)."""

        TOPIC = contracts.SESSION_ROUND_SETTLED
        game_code: str
        amount: int
        balance: int
        movement: dict[str, Any]
        last_stake: dict[str, Any] | None

    def stake(self, game_code: str, amount: int) -> None:
        self.check_open()
        self.check_debit(amount)
        port.check_taken(self, amount)
        self._stake_debited(
            game_code=game_code,
            amount=amount,
            balance=self._after(-amount),
            movement=movement(self._funds(), house_ledger(self.currency), amount, self.currency),
        )

    @event(StakeDebited)
    def _stake_debited(
        self, game_code: str, amount: int, balance: int, movement: dict[str, Any]
    ) -> None:
        self.balance = balance

    def credit_win(self, game_code: str, amount: int) -> None:
        self.check_open()
        self._win_credited(
            game_code=game_code,
            amount=amount,
            balance=self._after(amount),
            movement=movement(house_ledger(self.currency), self._funds(), amount, self.currency),
        )

    @event(WinCredited)
    def _win_credited(
        self, game_code: str, amount: int, balance: int, movement: dict[str, Any]
    ) -> None:
        self.balance = balance

    def settle_round(self, game_code: str, amount: int, last_stake: dict[str, Any] | None) -> None:
        """Credit a round's win (``amount`` > 0) and close the round, as one event."""
        self.check_open()
        if amount <= 0:
            raise ValueError("a settled round's credit is positive (close it without one)")
        self._round_settled(
            game_code=game_code,
            amount=amount,
            balance=self._after(amount),
            movement=movement(house_ledger(self.currency), self._funds(), amount, self.currency),
            last_stake=last_stake,
        )

    @event(RoundSettled)
    def _round_settled(
        self,
        game_code: str,
        amount: int,
        balance: int,
        movement: dict[str, Any],
        last_stake: dict[str, Any] | None,
    ) -> None:
        self.balance = balance
        self.open_round = None
        if last_stake is not None:
            self.last_stake = dict(last_stake)

    def refund(self, game_code: str, amount: int) -> None:
        if not self.seamless:  # a seamless refund goes to the wallet, even after the close
            self.check_open()
        self._refunded(
            game_code=game_code,
            amount=amount,
            balance=self._after(amount),
            movement=movement(house_ledger(self.currency), self._funds(), amount, self.currency),
        )

    @event(Refunded)
    def _refunded(
        self, game_code: str, amount: int, balance: int, movement: dict[str, Any]
    ) -> None:
        self.balance = balance

    def reverse_win(self, game_code: str, amount: int) -> None:
        self.check_open()
        self.check_debit(amount)
        self._win_reversed(
            game_code=game_code,
            amount=amount,
            balance=self._after(-amount),
            movement=movement(self._funds(), house_ledger(self.currency), amount, self.currency),
        )

    @event(WinReversed)
    def _win_reversed(
        self, game_code: str, amount: int, balance: int, movement: dict[str, Any]
    ) -> None:
        self.balance = balance

    @event(RoundOpened)
    def round_opened(self, game_code: str) -> None:
        self.open_round = game_code

    @event(RoundClosed)
    def round_closed(self, game_code: str, last_stake: dict[str, Any] | None) -> None:
        self.open_round = None
        if last_stake is not None:
            self.last_stake = dict(last_stake)

    # -- seamless wallet calls (issue 16) ------------------------------------------------

    @event("StakeIntended", topic=contracts.SESSION_STAKE_INTENDED)
    def stake_intended(self, transaction: dict[str, Any], request: str) -> None:
        """About to debit ``transaction`` at the wallet (for the request ``request``)."""
        self.pending_debit = dict(transaction)
        self.stake_intents += 1

    @event("StakeResolved", topic=contracts.SESSION_STAKE_RESOLVED)
    def stake_resolved(
        self,
        transaction_id: str,
        outcome: str,
        cause: str | None,
        error: str | None,
        wallet_balance: int | None,
    ) -> None:
        """The debit's outcome: accepted, refused or unknown (then a rollback is queued)."""
        self.pending_debit = None
        self.last_debit = {
            "transaction_id": transaction_id,
            "outcome": outcome,
            "cause": cause,
            "error": error,
            "wallet_balance": wallet_balance,
        }

    @event("WalletCallQueued", topic=contracts.SESSION_WALLET_CALL_QUEUED)
    def wallet_call_queued(self, transaction: dict[str, Any]) -> None:
        """A credit or rollback for the outbox: delivered until the wallet acknowledges."""

    def close(self) -> int:
        self.check_idle()
        final = self.balance
        self._closed(final_balance=final, balance=0)
        return final

    @event("Closed", topic=contracts.SESSION_CLOSED)
    def _closed(self, final_balance: int, balance: int) -> None:
        self.balance = balance
        self.closed = True
