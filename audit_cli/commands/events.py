"""``audit-cli events``: the significant events of the log (start and stop, keys, table
configuration, pauses, voids, refusals; ``audit_cli.events``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from audit_cli.commands.common import exit_code
from audit_cli.events import KINDS, SignificantRow, select, significant_events
from audit_cli.output import FoldingTable


@dataclass(frozen=True)
class EventsReport:
    rows: list[SignificantRow]
    ok: bool = True


def run(db: str, since: str | None = None, kinds: list[str] | None = None) -> EventsReport:
    return EventsReport(select(significant_events(db), since, kinds))


def render(report: EventsReport, out: Console, *, as_json: bool) -> int:
    if as_json:
        print(json.dumps([r.to_dict() for r in report.rows], indent=2))
    else:
        table = FoldingTable(title="significant events")
        for column in ("#", "time (UTC)", "kind", "subject", "detail"):
            table.add_column(column)
        for r in report.rows:
            detail = ", ".join(f"{k}={json.dumps(v)}" for k, v in r.detail.items())
            table.add_row(str(r.notification_id), r.time, r.kind, r.subject, detail)
        out.print(table)
    return exit_code(report)


def command(args: argparse.Namespace, out: Console) -> int:
    return render(run(args.db, args.since, args.kind), out, as_json=args.json)


def add(sub: Any, common: argparse.ArgumentParser, when: Callable[[str], str]) -> None:
    ev = sub.add_parser(
        "events",
        parents=[common],
        help="significant events: start/stop, keys, table config, pauses, voids, refusals",
    )
    ev.add_argument(
        "--db",
        default=None,  # main() reads the server's settings, as every other command does
        help="SQLite file or postgresql://...?schema=NAME; default: the server's own store, "
        "CROUPIER_DATABASE_URL if set, else CROUPIER_DATA_DIR/casino.sqlite",
    )
    ev.add_argument("--since", type=when, help="from this day or instant (ISO 8601, UTC)")
    ev.add_argument("--kind", action="append", choices=KINDS, help="only this kind (repeatable)")
    ev.add_argument("--json", action="store_true", help="machine-readable output")
    ev.set_defaults(func=command)
