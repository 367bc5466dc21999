"""A seamless seat's calls to the operator's wallet (issue 16), made inside the table
handlers' transactions.

Debits are taken by :mod:`ledger.seamless.gate` before the command that stakes runs
(:func:`ledger.seamless.port.table_stake` names the stage); once accepted, the seat records
the debit (:meth:`TableSeat.wallet_debited`). What goes back to the wallet is queued on the
session in the same transaction as the state change (the outbox): the rollback of a
debit given back (an undo, bets cancelled, a stake the engine did not apply, a void), the
credit of a cash-out and of a settlement's payout (a loss sends nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ledger.accounts import GameSession
from ledger.seamless.wire import to_wire
from ledger.tables.seat import TableSeat
from wallet.protocol import Transaction, transaction_id


def session_tag(session: GameSession) -> str:
    return str(session.id).replace("-", "")


def record_debit(seat: TableSeat, stage: str | None, amount: int, chips: int) -> None:
    """The debit the wallet accepted for this command (``stage`` None: a transfer seat)."""
    if stage is not None:
        tid = str(transaction_id(seat.code, stage))
        seat.wallet_debited(transaction_id=tid, stage=stage, amount=amount, chips=chips)


def give_back(
    session: GameSession, seat: TableSeat, debits: Iterable[list[Any]], reason: str
) -> int:
    """Refund each debit to the wallet's ledger and queue its rollback; the total."""
    total = 0
    for tid, stage, amount, _chips in list(debits):
        debit = Transaction.debit(
            session.player_id, seat.code, stage, int(amount), session.currency
        )
        assert str(debit.transaction_id) == tid, "a seat's debit id derives from its stage"
        session.refund(seat.code, int(amount))
        session.wallet_call_queued(to_wire(Transaction.rollback(debit)))
        seat.wallet_returned(transaction_id=tid, reason=reason)
        total += int(amount)
    return total


def credit(session: GameSession, seat: TableSeat, stage: str, amount: int) -> None:
    """Queue a credit (``win``, ``cash-out:<step>``) of the seat; nothing for 0."""
    if session.seamless and amount > 0:
        tag = session_tag(session)
        full = f"{stage}.{tag}" if ":" in stage else f"{stage}:{tag}"
        tx = Transaction.credit(session.player_id, seat.code, amount, session.currency, stage=full)
        session.wallet_call_queued(to_wire(tx))


def unapplied(seat: TableSeat, refund: int) -> list[list[Any]]:
    """The decisions' debits (the latest first) that make up ``refund``: the stakes of
    decisions that landed after the engine closed their step."""
    out, left = [], refund
    for d in reversed(seat.wallet_debits):
        if int(d[3]) == 0 and int(d[2]) <= left:
            out.append(d)
            left -= int(d[2])
    return out
