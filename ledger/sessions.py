"""Handlers of the operator's session commands: buy-in, close (and voids of rounds)."""

from __future__ import annotations

from ledger.accounts import GameSession
from ledger.commands import CloseSession, OpenSession, VoidRound
from ledger.errors import CurrencyMismatch
from ledger.play import Rounds
from ledger.results import RoundVoided, SessionClosed, SessionOpened
from ledger.unit_of_work import UnitOfWork


class Sessions:
    def __init__(self, rounds: Rounds) -> None:
        self.rounds = rounds

    def open_session(self, uow: UnitOfWork, cmd: OpenSession) -> SessionOpened:
        account = uow.account(cmd.player_id)
        if cmd.currency is not None and cmd.currency != account.currency:
            raise CurrencyMismatch(
                f"account is in {account.currency}, buy-in in {cmd.currency}",
                player_id=cmd.player_id,
            )
        session = GameSession(
            account_id=account.id,
            player_id=cmd.player_id,
            currency=account.currency,
            buy_in=cmd.buy_in,
        )
        uow.add(session)
        account.fund_session(session.id, cmd.buy_in)
        return SessionOpened(
            session_id=str(session.id),
            player_id=cmd.player_id,
            currency=account.currency,
            balance=cmd.buy_in,
            account_balance=account.balance,
        )

    def close_session(self, uow: UnitOfWork, cmd: CloseSession) -> SessionClosed:
        session = uow.session(cmd.session_id)
        session.check_open()
        self.rounds.complete_with_default(uow, session)
        final = session.close()
        if session.seamless:  # its money is at the operator's wallet: nothing to return
            return SessionClosed(session_id=str(session.id), final_balance=0, account_balance=0)
        account = uow.account_by_id(session.account_id)
        if final > 0:
            account.return_session(session.id, final)
        return SessionClosed(
            session_id=str(session.id), final_balance=final, account_balance=account.balance
        )

    def void_round(self, uow: UnitOfWork, cmd: VoidRound) -> RoundVoided:
        return self.rounds.void(uow, cmd.code, cmd.reason, cmd.incident_id)
