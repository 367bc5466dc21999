"""``audit-cli wallet reconcile``: every transaction croupier sent to an operator's
seamless wallet, with its state, and the totals per player (``audit_cli.wallet``)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from audit_cli.commands.common import exit_code
from audit_cli.output import FoldingTable as Table
from audit_cli.wallet import read_seamless, selected, write_csv
from ledger.seamless.book import Entry, totals


@dataclass(frozen=True)
class ReconcileReport:
    operator: str
    entries: list[Entry]
    totals: dict[str, Any]
    """Per round and per player (``ledger.seamless.book.totals``)."""
    ok: bool = True


def run(
    db: str, operator: str, start: str | None = None, end: str | None = None
) -> ReconcileReport:
    entries = selected(read_seamless(db), operator, start, end)
    return ReconcileReport(operator, entries, totals(entries))


def render(report: ReconcileReport, out: Console, *, as_json: bool, csv: bool = False) -> int:
    if csv:
        write_csv(report.entries, sys.stdout)
    elif as_json:
        doc = {"transactions": [e.to_dict() for e in report.entries], "totals": report.totals}
        print(json.dumps(doc))
    else:
        _print(report, out)
    return exit_code(report)


def _print(report: ReconcileReport, out: Console) -> None:
    table = Table(title=f"wallet transactions of {report.operator}")
    for col in ("time", "call", "player", "round", "stage", "amount", "state", "cause"):
        table.add_column(col)
    for e in report.entries:
        table.add_row(
            e.time,
            e.call,
            e.player_token,
            e.game_code,
            e.stage,
            str(e.amount),
            e.state,
            e.cause or "",
        )
    out.print(table)
    players = Table(title="totals per player (minor units)")
    for col in ("player", "debited", "credited", "rolled back", "pending", "net"):
        players.add_column(col)
    for name, v in sorted(report.totals["players"].items()):
        players.add_row(
            name, *(str(v[k]) for k in ("debited", "credited", "rolled_back", "pending", "net"))
        )
    out.print(players)


def command(args: argparse.Namespace, out: Console) -> int:
    report = run(args.db, args.operator, args.start, args.end)
    return render(report, out, as_json=args.json, csv=args.csv)
