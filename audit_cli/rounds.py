"""Dispute tools on the raw log: one round checked event by event, a player's rounds.

Reads rows directly (no application); the checks themselves are in
:mod:`audit_cli.round_check`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit_cli.round_check import RoundReport, check_rows
from audit_cli.rows import Row, read_aggregate, read_rows, read_trust_rows
from ledger import envelope
from ledger.keys import load_public_keys
from ledger.rounds import round_id_for

__all__ = ["RoundReport", "check_round", "player_history", "round_rows"]


def round_rows(db: str, code: str) -> list[Row]:
    """The rows of one round, read by its aggregate id (derived from the game code)."""
    return read_aggregate(db, str(round_id_for(code)))


def default_keys(db: str) -> dict[str, Ed25519PublicKey] | None:
    """The public keys beside a SQLite file (``keys/keyring.json``), if there are any."""
    if db.startswith(("postgresql://", "postgres://")):
        return None
    path = Path(db.removeprefix("sqlite:///")).parent / "keys" / "keyring.json"
    if not path.exists():
        return None
    return load_public_keys(json.loads(path.read_text()))


def check_round(
    db: str, code: str, public_keys: dict[str, Ed25519PublicKey] | None = None
) -> RoundReport:
    """Every event of the round checked: signature and chain link (with the public keys:
    given, else the keyring beside a SQLite file), then every recorded view, decision,
    card and amount against the re-derivation from the revealed seed."""
    keys = public_keys if public_keys is not None else default_keys(db)
    return check_rows(code, round_rows(db, code), keys, read_trust_rows(db))


def _payload(row: Row) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(envelope.decode(row.state).payload)
    return doc


def player_history(db: str, player_id: str) -> list[dict[str, Any]]:
    rounds: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for row in read_rows(db, skip_malformed=True):
        if not row.topic.startswith("croupier/round/"):
            continue
        doc = _payload(row)
        if row.topic == "croupier/round/started@1":
            if doc.get("player_id") != player_id:
                continue
            rounds[row.originator_id] = {
                "date": doc.get("started_at"),
                "game": doc.get("game"),
                "code": doc.get("code"),
                "stakes": doc.get("stake", 0),
                "wins": 0,
                "outcome": "open",
            }
            order.append(row.originator_id)
        elif row.originator_id in rounds:
            r = rounds[row.originator_id]
            if row.topic == "croupier/round/acted@1":
                r["stakes"] += doc.get("stake_added", 0)
            elif row.topic == "croupier/round/settled@1":
                r.update(wins=doc.get("payout", 0), outcome=doc.get("outcome"))
            elif row.topic == "croupier/round/voided@1":
                r.update(
                    wins=0,
                    outcome="voided",
                    void_reason=doc.get("reason"),
                    incident_id=doc.get("incident_id"),
                )
    return [rounds[o] for o in order]


def is_uuid(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True
