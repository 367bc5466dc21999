"""Handlers of the seamless commands (composed in :func:`ledger.bootstrap.bootstrap`).

Each runs inside one batch of the group-commit writer, like every handler: none of them
calls the wallet (the gate and the outbox do, between commands).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any
from uuid import uuid5

from ledger import commands as c
from ledger.accounts import NAMESPACE, GameSession
from ledger.contracts import DebitOutcome
from ledger.handlers import AnyHandler
from ledger.results import (
    DeliveriesRecorded,
    SeamlessSessionOpened,
    StakeFinished,
    StakeIntended,
    wire_of,
)
from ledger.seamless import port
from ledger.seamless.claim import GameCodeClaim, GameCodeTaken, claim_id_for
from ledger.seamless.commands import (
    FinishStake,
    IntendStake,
    OpenSeamlessSession,
    RecordDeliveries,
)
from ledger.seamless.delivery import WalletDelivery, delivery_id_for
from ledger.seamless.errors import NoSeamlessWallet
from ledger.seamless.wire import from_wire, to_wire
from ledger.unit_of_work import UnitOfWork
from wallet.protocol import Transaction

FIRST_STAGE = "main"
"""The stage of a session round's first debit (Red Dog's bet, video poker's deal), whose
game code the probe has just drawn; a live table's stages name the seat (``main:…``) under
the table round's code, which the table has already made unique."""


class SeamlessHandlers:
    def __init__(
        self, operators: Collection[str], handlers: Mapping[type[c.Command[Any]], AnyHandler]
    ) -> None:
        self.operators = operators
        self.handlers = handlers  # the casino's: FinishStake runs the staking command's

    def open_session(self, uow: UnitOfWork, cmd: OpenSeamlessSession) -> SeamlessSessionOpened:
        if cmd.operator not in self.operators:
            raise NoSeamlessWallet(f"operator {cmd.operator!r} has no seamless wallet configured")
        session = GameSession(
            account_id=uuid5(NAMESPACE, f"wallet:{cmd.operator}:{cmd.player_token}"),
            player_id=cmd.player_token,
            currency=cmd.currency,
            buy_in=0,
            operator=cmd.operator,
        )
        uow.add(session)
        return SeamlessSessionOpened(
            session_id=str(session.id),
            player_id=cmd.player_token,
            operator=cmd.operator,
            currency=cmd.currency,
            wallet="seamless",
        )

    def intend_stake(self, uow: UnitOfWork, cmd: IntendStake) -> StakeIntended:
        session = uow.session(cmd.session_id)
        session.check_open()
        if session.pending_debit is not None:
            session.check_idle()  # raises SessionBusy naming the pending stake
        debit = from_wire(cmd.transaction)
        if debit.stage == FIRST_STAGE:
            # A round's first debit, under the code its probe just drew: claim the code
            # (its transaction id derives from it) before anything is sent.
            if uow.get(GameCodeClaim, claim_id_for(debit.game_code)) is not None:
                raise GameCodeTaken(
                    f"game code {debit.game_code} is taken", game_code=debit.game_code
                )
            uow.add(GameCodeClaim(debit.game_code, str(session.id), str(debit.transaction_id)))
        session.stake_intended(transaction=dict(cmd.transaction), request=cmd.request)
        return StakeIntended(
            session_id=str(session.id), transaction=dict(cmd.transaction), digest=cmd.digest
        )

    def finish_stake(self, uow: UnitOfWork, cmd: FinishStake) -> StakeFinished:
        session = uow.session(cmd.session_id)
        pending = session.pending_debit
        if pending is None or pending.get("transaction_id") != cmd.transaction_id:
            return resolved_result(session, cmd.transaction_id)
        debit = from_wire(pending)
        outcome = DebitOutcome(cmd.outcome)
        cause = cmd.cause
        if outcome is DebitOutcome.ACCEPTED and cmd.inner is not None:
            session.stake_resolved(
                transaction_id=cmd.transaction_id,
                outcome=outcome,
                cause=None,
                error=None,
                wallet_balance=cmd.wallet_balance,
            )
            inner = cmd.inner
            handler = self.handlers[type(inner)]
            with port.accepted(port.Accepted(debit.game_code, debit.stage, debit.amount)):
                result = handler(uow, inner)
            return StakeFinished(
                session_id=str(session.id),
                transaction_id=cmd.transaction_id,
                stake_outcome=str(outcome),
                balance=cmd.wallet_balance,
                started=wire_of(result),
            )
        if outcome is DebitOutcome.ACCEPTED:
            # Accepted, but the round could not start: the stake goes back.
            cause = cause or "the round could not start"
        session.stake_resolved(
            transaction_id=cmd.transaction_id,
            outcome=outcome,
            cause=cause,
            error=cmd.error,
            wallet_balance=cmd.wallet_balance,
        )
        if outcome is not DebitOutcome.REFUSED:
            session.wallet_call_queued(transaction=to_wire(Transaction.rollback(debit)))
        return resolved_result(session, cmd.transaction_id)

    def record_deliveries(self, uow: UnitOfWork, cmd: RecordDeliveries) -> DeliveriesRecorded:
        recorded = []
        for d in cmd.deliveries:
            tid = str(d["transaction_id"])
            if uow.get(WalletDelivery, delivery_id_for(tid)) is not None:
                continue  # recorded before (a flush retried after its answer was lost)
            uow.add(
                WalletDelivery(
                    transaction_id=tid,
                    session_id=str(d["session_id"]),
                    call=str(d["call"]),
                    state=str(d["state"]),
                    attempts=int(d["attempts"]),
                    cause=d.get("cause"),
                    wallet_balance=d.get("wallet_balance"),
                )
            )
            recorded.append(tid)
        return DeliveriesRecorded(recorded=recorded)


def resolved_result(session: GameSession, transaction_id: str) -> StakeFinished:
    """What became of a debit that is no longer pending (as the session last recorded)."""
    last = session.last_debit or {}
    if last.get("transaction_id") != transaction_id:
        return StakeFinished(
            session_id=str(session.id),
            transaction_id=transaction_id,
            stake_outcome="unknown",
            cause="no outcome of this debit is on the session any more",
        )
    outcome = last.get("outcome")
    rolled_back = outcome == DebitOutcome.ACCEPTED and last.get("cause") is not None
    return StakeFinished(
        session_id=str(session.id),
        transaction_id=transaction_id,
        stake_outcome="rolled-back" if rolled_back else str(outcome),
        cause=last.get("cause"),
        error=last.get("error"),
        balance=last.get("wallet_balance"),
    )
