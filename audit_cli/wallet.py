"""``audit-cli wallet reconcile``: every transaction croupier sent to an operator's wallet,
with its state and totals per round and player; and the seamless rounds' check of
``verify --balances`` (each round's movements equal its wallet transactions)."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple, TextIO

from audit_cli.rows import read_rows
from ledger import envelope
from ledger.seamless.book import Entry, WalletBook, expected_round_nets

COLUMNS = [
    "seq",
    "time",
    "transaction_id",
    "call",
    "operator",
    "session_id",
    "player_token",
    "game_code",
    "stage",
    "amount",
    "currency",
    "reference_transaction_id",
    "state",
    "cause",
    "attempts",
    "outcome",
]


@dataclass
class SeamlessLog:
    book: WalletBook
    moved: dict[str, int]  # game code -> net moved to the player's wallet ledger


def read_seamless(db: str) -> SeamlessLog:
    book = WalletBook()
    moved: dict[str, int] = defaultdict(int)
    for row in read_rows(db):
        try:
            payload = envelope.decode(row.state).payload
        except (envelope.EnvelopeError, ValueError, TypeError, AttributeError):
            continue  # not an event of ours: `audit-cli verify` reports it
        book.feed_payload(row.notification_id, row.originator_id, row.topic, payload)
        if b'"wallet:' not in payload:
            continue
        try:
            doc = json.loads(payload)
        except ValueError:
            continue
        mv = doc.get("movement") if isinstance(doc, dict) else None
        if not isinstance(mv, dict) or type(mv.get("amount")) is not int:
            continue
        code = str(doc.get("game_code") or doc.get("round_code"))
        if str(mv.get("destination", "")).startswith("wallet:"):
            moved[code] += mv["amount"]
        elif str(mv.get("source", "")).startswith("wallet:"):
            moved[code] -= mv["amount"]
    return SeamlessLog(book, dict(moved))


class SeamlessRound(NamedTuple):
    """A seamless round's money: moved to the wallet by its movements, and by its wallet
    calls (net)."""

    game_code: str
    moved: int
    wallet_calls: int


def round_findings(log: SeamlessLog) -> tuple[list[SeamlessRound], list[str]]:
    """Per seamless round: its movements' net and its wallet transactions' net; a finding
    for every round where they differ (a stake moved without an accepted debit, a win
    without its credit queued, a void without its rollbacks)."""
    expected = expected_round_nets(log.book.listed())
    rows: list[SeamlessRound] = []
    findings: list[str] = []
    for code in sorted(set(expected) | set(log.moved)):
        moved, calls = log.moved.get(code, 0), expected.get(code, 0)
        rows.append(SeamlessRound(code, moved, calls))
        if moved != calls:
            findings.append(
                f"seamless round {code}: its movements net {moved} but its wallet "
                f"transactions net {calls}"
            )
    return rows, findings


def selected(
    log: SeamlessLog, operator: str | None, start: str | None, end: str | None
) -> list[Entry]:
    return log.book.listed(operator, start, end)


def write_csv(entries: list[Entry], out: TextIO) -> None:
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for e in entries:
        writer.writerow(e.to_dict())
