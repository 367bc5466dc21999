"""``audit-cli report``: the regulator's report from the log, per day, game, variant and
currency, and per session (``audit_cli.report``); console, CSV, JSON or HTML."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from audit_cli.commands.common import exit_code
from audit_cli.report import Report, build_report
from audit_cli.report_render import print_console, window, write_csv, write_html


@dataclass(frozen=True)
class ReportRun:
    report: Report
    html: str | None = None
    """The HTML report written to this file."""

    @property
    def ok(self) -> bool:
        return not self.report.findings


def run(
    db: str,
    zone: str = "UTC",
    level: float = 0.99,
    start: str | None = None,
    end: str | None = None,
    html: str | None = None,
) -> ReportRun:
    report = window(build_report(db, zone, level), start, end)
    if html:
        write_html(report, Path(html), db if "://" not in db else "PostgreSQL")
    return ReportRun(report, html)


def render(
    run: ReportRun, out: Console, *, as_json: bool, csv: bool = False, sessions: bool = False
) -> int:
    if run.html:
        out.print(f"wrote {run.html}", markup=False)
    if as_json:
        print(json.dumps(run.report.to_dict(), indent=2))
    elif csv:
        write_csv(run.report, sys.stdout, sessions=sessions)
    elif not run.html:
        print_console(run.report, out, sessions=sessions)
    return exit_code(run)


def command(args: argparse.Namespace, out: Console) -> int:
    report = run(args.db, args.zone, args.level, args.start, args.end, args.html)
    return render(report, out, as_json=args.json, csv=args.csv, sessions=args.sessions)


def add(sub: Any, common: argparse.ArgumentParser, when: Callable[[str], str]) -> None:
    rp = sub.add_parser(
        "report",
        parents=[common],
        help="regulator report from the log: per day, game, variant, currency; per session",
    )
    rp.add_argument(
        "--db",
        default=None,  # main() reads the server's settings, as every other command does
        help="SQLite file or postgresql://...?schema=NAME; default: the server's own store, "
        "CROUPIER_DATABASE_URL if set, else CROUPIER_DATA_DIR/casino.sqlite",
    )
    rp.add_argument(
        "--zone", default="UTC", help="the operator's time zone (IANA, e.g. Europe/Rome)"
    )
    rp.add_argument("--from", dest="start", type=when, help="first day (ISO 8601)")
    rp.add_argument("--to", dest="end", type=when, help="last day (inclusive)")
    rp.add_argument("--level", type=float, default=0.99, help="confidence level (default 0.99)")
    rp.add_argument("--sessions", action="store_true", help="the session rows (console, CSV)")
    rp.add_argument("--html", metavar="FILE.html", help="write the HTML report with its charts")
    fmt = rp.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV on stdout")
    fmt.add_argument("--json", action="store_true", help="the whole report as JSON")
    rp.set_defaults(func=command)
