"""What a statement line is: the movement kinds and :class:`Line` (shared by the book,
:mod:`ledger.statement`, and the statement view, :mod:`ledger.readside.statement`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

ACCOUNT_OPENED = "croupier/account/opened@1"

KINDS = {
    "deposited": "deposit",
    "withdrawn": "withdrawal",
    "session-funded": "buy-in",
    "session-returned": "session-return",
    "stake-debited": "stake",
    "win-credited": "win",
    "round-settled": "win",
    "refunded": "refund",
    "round-refunded": "refund",
    "win-reversed": "reversal",
    "round-win-reversed": "reversal",
}
"""Movement event -> statement kind; an event not listed (a future game's bet type) keeps
its own name, so no movement is ever left out."""


@dataclass(frozen=True)
class Line:
    """One movement of the player's money, with the balances right after it."""

    seq: int
    """The event's notification id: the cursor of the statement's pages."""
    time: str
    kind: str
    ledger: str
    """``account`` or ``session``: the ledger whose event recorded the movement."""
    session_id: str | None
    round_code: str | None
    amount: int
    """Signed change of that ledger (minor units)."""
    currency: str
    balance: int
    """The player's money after the movement: account plus sessions."""
    account_balance: int
    session_balance: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
