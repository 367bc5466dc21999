"""Handlers of the operator's money commands on a player's game account."""

from __future__ import annotations

from ledger.accounts import Account, account_id_for
from ledger.commands import Deposit, OpenAccount, Withdraw
from ledger.errors import AccountExists
from ledger.results import AccountMoved, AccountOpened
from ledger.unit_of_work import UnitOfWork


class Banking:
    def open_account(self, uow: UnitOfWork, cmd: OpenAccount) -> AccountOpened:
        if uow.get(Account, account_id_for(cmd.player_id)) is not None:
            raise AccountExists(
                f"player {cmd.player_id!r} already has an account", player_id=cmd.player_id
            )
        uow.add(Account(player_id=cmd.player_id, currency=cmd.currency))
        return AccountOpened(player_id=cmd.player_id, currency=cmd.currency, balance=0)

    def deposit(self, uow: UnitOfWork, cmd: Deposit) -> AccountMoved:
        account = uow.account(cmd.player_id)
        account.deposit(cmd.amount)
        return AccountMoved(player_id=cmd.player_id, balance=account.balance)

    def withdraw(self, uow: UnitOfWork, cmd: Withdraw) -> AccountMoved:
        account = uow.account(cmd.player_id)
        account.withdraw(cmd.amount)
        return AccountMoved(player_id=cmd.player_id, balance=account.balance)
