"""A wallet transaction as the reconciliation lists it: :class:`Entry`, its
:class:`State`, and the topics that make them (shared by the book,
:mod:`ledger.seamless.book`, and the wallet view, :mod:`ledger.readside.wallet`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ledger import contracts

TOPICS = (
    contracts.SESSION_OPENED,
    contracts.SESSION_STAKE_INTENDED,
    contracts.SESSION_STAKE_RESOLVED,
    contracts.SESSION_WALLET_CALL_QUEUED,
    contracts.WALLET_DELIVERED,
)


class State:
    """A transaction's state in the reconciliation (wire format of the report)."""

    PENDING_OUTCOME = "pending-outcome"  # a debit sent (or about to be), no outcome yet
    ACCEPTED = "accepted"  # a debit accepted, or a credit acknowledged
    REFUSED = "refused"  # a debit the wallet refused: nothing taken
    UNKNOWN = "unknown"  # a debit without a trustworthy answer (its rollback follows)
    ROLLED_BACK = "rolled-back"  # a debit whose rollback the wallet acknowledged
    ROLLBACK_PENDING = "rollback-pending"  # a debit whose rollback awaits delivery
    PENDING_DELIVERY = "pending-delivery"  # a credit or rollback not yet acknowledged
    REJECTED = "rejected"  # a credit or rollback the wallet refused for good: a person


@dataclass
class Entry:
    seq: int
    time: str
    transaction_id: str
    call: str
    operator: str
    session_id: str
    player_token: str
    game_code: str
    stage: str
    amount: int
    currency: str
    reference_transaction_id: str | None
    state: str
    cause: str | None = None
    attempts: int | None = None
    outcome: str | None = None  # a debit's outcome as recorded (accepted, refused, unknown)
    transaction: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc.pop("transaction")
        return doc


def _instant(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def in_range(time: str, start: str | None, end: str | None) -> bool:
    when = _instant(time)
    if start is not None and when < _instant(start):
        return False
    if end is not None:
        last = _instant(end)
        return when < last + timedelta(days=1) if len(end) == 10 else when <= last
    return True


def _time(doc: dict[str, Any]) -> str:
    ts = doc.get("timestamp")
    return str(ts.get("_data_") if isinstance(ts, dict) else ts)
