"""One aggregate per delivered wallet call: the wallet acknowledged it (or refused it for
good). Its own aggregate, not the session's, so the sender never contends with the player."""

from __future__ import annotations

from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from ledger import contracts
from ledger.accounts import NAMESPACE


def delivery_id_for(transaction_id: str) -> UUID:
    return uuid5(NAMESPACE, f"wallet-delivery:{transaction_id}")


class WalletDelivery(Aggregate):
    TOPIC = contracts.WALLET_DELIVERY

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = contracts.WALLET_DELIVERY_CREATED

    @staticmethod
    def create_id(transaction_id: str) -> UUID:
        return delivery_id_for(transaction_id)

    @event("Delivered", topic=contracts.WALLET_DELIVERED)
    def __init__(
        self,
        transaction_id: str,
        session_id: str,
        call: str,
        state: str,
        attempts: int,
        cause: str | None,
        wallet_balance: int | None,
    ) -> None:
        self.transaction_id = transaction_id
        self.session_id = session_id
        self.call = call
        self.state = state
        self.attempts = attempts
        self.cause = cause
        self.wallet_balance = wallet_balance
