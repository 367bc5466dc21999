"""``audit-cli statement PLAYER``: every movement of a player's money with running
balances, from the log (``audit_cli.statement``); as a table, CSV or JSON."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from rich.console import Console

from audit_cli.commands.common import exit_code, print_json
from audit_cli.output import FoldingTable as Table
from audit_cli.statement import read_statement, write_csv
from ledger.statement import Line


@dataclass(frozen=True)
class StatementReport:
    player: str
    lines: list[Line]
    ok: bool = True


def run(db: str, player: str, start: str | None = None, end: str | None = None) -> StatementReport:
    return StatementReport(player, read_statement(db, player, start, end))


def render(report: StatementReport, out: Console, *, as_json: bool, csv: bool = False) -> int:
    if as_json:
        print_json(out, [ln.to_dict() for ln in report.lines])
    elif csv:
        write_csv(report.lines, sys.stdout)
    else:
        _print(report, out)
    return exit_code(report)


def _print(report: StatementReport, out: Console) -> None:
    table = Table(title=f"statement of {report.player}")
    for col in ("seq", "time", "kind", "round", "session", "amount", "balance", "account"):
        table.add_column(
            col, justify="right" if col in ("amount", "balance", "account") else "left"
        )
    for ln in report.lines:
        table.add_row(
            str(ln.seq),
            ln.time,
            ln.kind,
            ln.round_code or "",
            ln.session_id or "",
            f"{ln.amount:+d}",
            str(ln.balance),
            str(ln.account_balance),
        )
    out.print(table)


def command(args: argparse.Namespace, out: Console) -> int:
    report = run(args.db, args.player, args.start, args.end)
    return render(report, out, as_json=args.json, csv=args.csv)
