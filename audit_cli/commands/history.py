"""``audit-cli history PLAYER``: a player's rounds from the log, newest first, with the
money columns' totals (as the HTTP history)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from audit_cli.commands.common import exit_code, print_json
from audit_cli.output import FoldingTable as Table
from audit_cli.rounds import MONEY_COLUMNS, history_totals, player_history


@dataclass(frozen=True)
class HistoryReport:
    player: str
    rows: list[dict[str, Any]]
    """The player's rounds, newest first (``rounds.player_history``)."""
    totals: dict[str, int]
    """Each money column summed."""
    ok: bool = True


def run(db: str, player: str) -> HistoryReport:
    rows = list(reversed(player_history(db, player)))  # newest first, as HTTP
    return HistoryReport(player, rows, history_totals(rows))


def render(report: HistoryReport, out: Console, *, as_json: bool) -> int:
    if as_json:
        print_json(out, report.rows, default=str)  # totals: sum the money columns
    else:
        _print(report, out)
    return exit_code(report)


def _print(report: HistoryReport, out: Console) -> None:
    table = Table(title=f"account history of {report.player}")
    for col in ("date", "game", "code", *MONEY_COLUMNS, "outcome", "void to", "bets"):
        table.add_column(col)
    for r in report.rows:
        table.add_row(
            str(r["date"]),
            str(r["game"]),
            str(r["code"]),
            *(str(r[k]) for k in MONEY_COLUMNS),
            str(r["outcome"]),
            r["landed_on"] or "",
            ", ".join(f"{b} {a}" for b, a in (r.get("bets") or {}).items()),  # live tables
        )
    table.add_row("total", "", "", *(str(report.totals[k]) for k in MONEY_COLUMNS), "", "", "")
    out.print(table)


def command(args: argparse.Namespace, out: Console) -> int:
    return render(run(args.db, args.player), out, as_json=args.json)
