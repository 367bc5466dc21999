"""Wallet transactions as stored in events (str-keyed dicts of str/int), and back."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from wallet.protocol import Call, Transaction


def to_wire(t: Transaction) -> dict[str, Any]:
    return {
        "call": str(t.call),
        "transaction_id": str(t.transaction_id),
        "player_token": t.player_token,
        "game_code": t.game_code,
        "stage": t.stage,
        "amount": t.amount,
        "currency": t.currency,
        "reference_transaction_id": (
            None if t.reference_transaction_id is None else str(t.reference_transaction_id)
        ),
    }


def from_wire(w: dict[str, Any]) -> Transaction:
    ref = w.get("reference_transaction_id")
    return Transaction(
        Call(w["call"]),
        UUID(str(w["transaction_id"])),
        str(w["player_token"]),
        str(w["game_code"]),
        str(w["stage"]),
        int(w["amount"]),
        str(w["currency"]),
        None if ref is None else UUID(str(ref)),
    )
