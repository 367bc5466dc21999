"""Test-only money primitives: a stake, a win or a refund on a session with no round.

Production composes no handler for these (a win can only be credited by a round's
settlement: see ``ledger.bootstrap``). Ledger-rule tests still want to move a session's
balance directly, so these helpers register their own commands and handlers on the test's
Casino the first time they are used; every call still goes through ``Casino.command``
(idempotency record, one transaction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ledger.casino import Casino
from ledger.commands import Command
from ledger.errors import InvalidRequest
from ledger.money import check_amount
from ledger.unit_of_work import UnitOfWork


@dataclass(frozen=True)
class SessionMovement(Command):
    """``name`` and body as the old ``Casino.stake/credit_win/refund`` recorded them."""

    session_id: Any
    round_id: Any
    amount: Any

    def __post_init__(self) -> None:
        check_amount(self.amount)
        if not isinstance(self.round_id, str) or not self.round_id:
            raise InvalidRequest("round id must be a non-empty string")
        object.__setattr__(self, "session_id", str(self.session_id))

    @property
    def scope(self) -> str:
        return "operator"

    def move(self, uow: UnitOfWork) -> dict[str, Any]:
        session = uow.session(self.session_id)
        getattr(session, self.name)(self.round_id, self.amount)
        return {
            "session_id": str(session.id),
            "round_id": self.round_id,
            "amount": self.amount,
            "balance": session.balance,
        }


@dataclass(frozen=True)
class Stake(SessionMovement):
    name: ClassVar[str] = "stake"


@dataclass(frozen=True)
class CreditWin(SessionMovement):
    name: ClassVar[str] = "credit_win"


@dataclass(frozen=True)
class Refund(SessionMovement):
    name: ClassVar[str] = "refund"


def _handle(uow: UnitOfWork, cmd: SessionMovement) -> dict[str, Any]:
    return cmd.move(uow)


def _run(app: Casino, request_id: str, cmd: SessionMovement) -> dict[str, Any]:
    if type(cmd) not in app.handlers:
        app.handlers.add(type(cmd).handled_by(_handle))
    return app.command(request_id, cmd)


def stake(app: Casino, request_id: str, session_id: Any, round_id: Any, amount: Any) -> Any:
    return _run(app, request_id, Stake(session_id, round_id, amount))


def credit_win(app: Casino, request_id: str, session_id: Any, round_id: Any, amount: Any) -> Any:
    return _run(app, request_id, CreditWin(session_id, round_id, amount))


def refund(app: Casino, request_id: str, session_id: Any, round_id: Any, amount: Any) -> Any:
    return _run(app, request_id, Refund(session_id, round_id, amount))
