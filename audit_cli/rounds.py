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

from audit_cli.reexec import (
    MONEY_TOPICS,
    MoneyFinding,
    compare_round,
    expect_round,
    move_of,
)
from audit_cli.round_check import RoundFinding, RoundReport, check_rows
from audit_cli.rows import Row, read_aggregate, read_rows, read_topic_rows, read_trust_rows
from ledger import contracts, envelope
from ledger.keys import load_public_keys
from ledger.rounds import round_id_for
from ledger.tables import account_rows

__all__ = ["RoundReport", "check_round", "history_totals", "player_history", "round_rows"]


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
    rows = round_rows(db, code)
    report = check_rows(code, rows, keys, read_trust_rows(db))
    if report.status != "missing":
        report.money = money_check(db, code, rows)
        report.findings.extend(
            RoundFinding("money", f.version or 0, str(f.kind), f.message, f.recorded, f.expected)
            for f in report.money
        )
    return report


def money_check(db: str, code: str, rows: list[Row]) -> list[MoneyFinding]:
    """The round's movements on any session or account against what re-executing it gives
    (as ``verify`` compares them, :mod:`audit_cli.reexec`)."""
    facts = []
    for row in rows:
        try:
            doc = _payload(row)
        except (envelope.EnvelopeError, ValueError, TypeError):
            continue  # the row checks report it
        facts.append((row.notification_id, row.originator_id, row.version, row.topic, doc))
    if not facts or facts[0][3] != contracts.ROUND_STARTED:
        return []
    expect = expect_round(facts)
    moves = []
    for row in read_topic_rows(db, tuple(MONEY_TOPICS)):
        try:
            move = move_of(row, _payload(row))
        except (envelope.EnvelopeError, ValueError, TypeError):
            continue
        if move is not None and move.code == code:
            moves.append(move)
    accounts = {}
    session = read_aggregate(db, expect.session)
    if session and session[0].topic == contracts.SESSION_OPENED:
        account = _payload(session[0]).get("account_id")
        if isinstance(account, dict):
            account = account.get("_data_")
        accounts[expect.session] = str(UUID(str(account)))
    return [f for f in compare_round(expect, moves, accounts) if isinstance(f, MoneyFinding)]


def _payload(row: Row) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(envelope.decode(row.state).payload)
    return doc


MONEY_COLUMNS = ("stakes", "wins", "refunded", "reversed_win", "net")


def player_history(db: str, player_id: str) -> list[dict[str, Any]]:
    """The player's rounds in the order they started, from the raw rows (as
    :class:`ledger.projections.History`). A voided round shows no win, its stakes with
    their refund and the reversed win; ``net`` = wins - stakes + refunded is what the round
    did to the balance (0 for a void); ``landed_on`` says where the void moved money: the
    session while it was open, the account once it had closed. A live table's seat is a
    row too (:mod:`ledger.tables.account_rows`), with its table and bets by type."""
    rounds: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    closed_sessions: set[str] = set()
    seats = account_rows.SeatRows()  # the live tables: one row per seat
    for row in read_rows(db, skip_malformed=True):
        if row.topic == contracts.SESSION_CLOSED:
            closed_sessions.add(str(row.originator_id))
            continue
        if account_rows.wanted(row.topic):
            opened = seats.apply(row.topic, row.originator_id, _payload(row), closed_sessions)
            if opened is not None and opened["player_id"] == player_id:
                rounds[row.originator_id] = opened
                order.append(row.originator_id)
            continue
        if not row.topic.startswith(contracts.ROUND_PREFIX):
            continue
        doc = _payload(row)
        if row.topic == contracts.ROUND_STARTED:
            if doc.get("player_id") != player_id:
                continue
            rounds[row.originator_id] = {
                "date": doc.get("started_at"),
                "game": doc.get("game"),
                "code": doc.get("code"),
                "session_id": doc.get("session_id"),
                "stakes": doc.get("stake", 0),
                "wins": 0,
                "refunded": 0,
                "reversed_win": 0,
                "landed_on": None,
                "outcome": "open",
                "status": "open",
            }
            order.append(row.originator_id)
        elif row.originator_id in rounds:
            r = rounds[row.originator_id]
            if row.topic == contracts.ROUND_ACTED:
                r["stakes"] += doc.get("stake_added", 0)
            elif row.topic == contracts.ROUND_SETTLED:
                r.update(wins=doc.get("payout", 0), outcome=doc.get("outcome"), status="settled")
            elif row.topic == contracts.ROUND_VOIDED:
                closed = str(r["session_id"]) in closed_sessions
                r.update(
                    wins=0,  # no win stands; the credited one shows as reversed_win
                    outcome="voided",
                    status="voided",
                    refunded=doc.get("refunded", 0),
                    reversed_win=doc.get("reversed_win", 0),
                    landed_on="account" if closed else "session",
                    void_reason=doc.get("reason"),
                    incident_id=doc.get("incident_id"),
                )
    history = [rounds[o] for o in order]
    for r in history:
        r["net"] = r["wins"] - r["stakes"] + r["refunded"]
    return [r for r in history if r.get("game") != account_rows.GAME or account_rows.played(r)]


def history_totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {k: sum(r[k] for r in rows) for k in MONEY_COLUMNS}


def is_uuid(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True
