"""``audit-cli rtp``: observed RTP per game, variant, paytable and coins, and per bet type
of the live blackjack tables, against the certified maths (``audit_cli.rtp``,
``audit_cli.table_rtp``); ``--theoretical``: the certified-RTP table alone."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from audit_cli import rtp
from audit_cli.commands.common import exit_code, print_json
from audit_cli.output import FoldingTable as Table
from audit_cli.rows import SourceError
from audit_cli.table_rtp import TableRtp, print_table_rtp, table_rtp
from games.audit import TheoryRow
from games.percent import as_percent


@dataclass(frozen=True)
class RtpRun:
    db: str
    report: rtp.RtpReport
    tables: TableRtp
    """The live blackjack tables, per bet type (informational: never a finding)."""
    plot: str | None = None
    panels: int = 0
    """Panels drawn in ``plot``."""

    @property
    def ok(self) -> bool:
        return self.report.ok

    @property
    def message(self) -> str:
        """Nothing settled is not a finding: an empty (or only voided/open) log has no RTP."""
        r = self.report
        message = f"no settled rounds in {self.db}: no RTP to compare"
        if r.voided or r.open:
            message += f" ({r.voided} voided, {r.open} open)"
        return message


@dataclass(frozen=True)
class TheoryReport:
    rows: list[TheoryRow]
    findings: list[str]

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        doc = [{**r.to_dict(), "known_difference": rtp.known_difference(r)} for r in self.rows]
        return {"ok": self.ok, "rows": doc, "problems": self.findings}


def run(db: str, plot: str | None = None) -> RtpRun:
    """The observed RTP of ``db``'s settled rounds; ``plot``: draw it to this PNG file."""
    report = rtp.rtp_report(db, series=bool(plot))
    tables = table_rtp(db)
    panels = 0
    if plot and (report.rounds or tables.rows):
        try:
            panels = rtp.plot(report, Path(plot), tables)
        except ImportError as e:
            raise SourceError(f"--plot needs matplotlib ({e})") from e
    return RtpRun(db, report, tables, plot, panels)


def run_theoretical() -> TheoryReport:
    rows = rtp.theoretical_rows()
    return TheoryReport(rows, rtp.theory_findings(rows))


def render(report: RtpRun | TheoryReport, out: Console, *, as_json: bool) -> int:
    if isinstance(report, TheoryReport):
        if as_json:
            print_json(out, report.to_json())
        else:
            _print_theory(report, out)
    elif as_json:
        print_json(out, _json(report), allow_nan=False)  # strict JSON: no bare Infinity
    else:
        _print(report, out)
    return exit_code(report)


def _json(run: RtpRun) -> dict[str, Any]:
    doc = run.report.to_dict()
    if run.report.rounds == 0 and not run.tables.rows:
        doc["message"] = run.message
    if run.tables.rows:
        doc["tables"] = [run.tables.to_dict()]
    return doc


def _print(run: RtpRun, out: Console) -> None:
    report, tables = run.report, run.tables
    if report.rounds == 0:
        if tables.rows:
            print_table_rtp(tables, out)
            if run.plot:
                out.print(f"plot of {run.panels} panel(s) written to {run.plot}")
        else:
            out.print(run.message)
        return
    table = Table(title=f"audit-cli rtp: observed vs theoretical ({report.level:.0%} interval)")
    for col in ("game, variant\npaytable", "coins", "play", "rounds", "voided"):
        table.add_column(col, no_wrap=True)
    for col in ("staked", "paid"):
        table.add_column(col, justify="right", no_wrap=True)
    for col in ("measure", "observed", "interval", "theoretical", "inside"):
        table.add_column(col, no_wrap=True)
    for g in report.groups:
        d = g.to_dict()
        head = [
            f"{d['game']} {d['variant']}\n{d['paytable_id']}",
            "-" if d["coins"] is None else str(d["coins"]),
            str(d["play"] or "-"),
            str(d["rounds"]),
            f"{d['voided']} (+{d['open']} open)" if d["open"] else str(d["voided"]),
            str(d["staked"]),
            str(d["paid"]),
        ]
        if not g.measures:
            table.add_row(*head, "-", "-", "-", "-", "-")
        for m in g.measures:
            i = m.interval
            inside = {True: "[green]yes[/green]", False: "[red]NO[/red]", None: "n/a"}[m.inside]
            table.add_row(
                *head,
                m.measure,
                f"{as_percent(i.observed)} %",
                (
                    f"[{as_percent(i.low, 2)}, {as_percent(i.high, 2)}] %"
                    + ("" if i.basis == "exact" else " (sample)")
                    if i.known
                    else "n/a (one round: no spread yet)"
                ),
                "-" if m.theoretical is None else f"{as_percent(m.theoretical)} %",
                inside,
            )
            head = [""] * len(head)
    # Wide enough for the whole table even when piped (rich assumes 80 columns then).
    Console(file=out.file, width=max(out.width, 160)).print(table)
    out.print(
        f"{report.rounds} settled rounds; {report.voided} voided and {report.open} open rounds "
        "excluded. Intervals: normal approximation with the exact per-round variance of the "
        "play observed; (sample): the sample variance (mixed play or double-up). Theoretical: "
        "the RTP of the play observed (n/a for mixed play).",
        markup=False,
    )
    if run.plot:
        out.print(f"plot of {run.panels} panel(s) written to {run.plot}")
    if tables.rows:
        print_table_rtp(tables, out)
    if report.ok:
        out.print("[green]OK[/green]: every theoretical RTP lies inside its interval.")
        return
    for p in report.problems:
        out.print(f"[red]FINDING[/red] {p}")


def _print_theory(report: TheoryReport, out: Console) -> None:
    table = Table(title="certified RTP: exact full-cycle maths")
    for col in ("game", "variant", "paytable / bet", "play", "coins", "RTP", "published"):
        table.add_column(col, no_wrap=True)
    table.add_column("agreement", min_width=29, max_width=29)
    table.add_column("max paid", justify="right", no_wrap=True)
    table.add_column("hit freq.", justify="right", no_wrap=True)
    for r in report.rows:
        known = " (known: see notes)" if rtp.known_difference(r) else ""
        table.add_row(
            r.game,
            r.variant,
            r.paytable_id,
            r.play,
            r.coins,
            f"{as_percent(r.rtp)} %",
            f"{r.published} %" if r.published else "-",
            r.agreement + known,
            str(r.max_paid_per_bet),
            "-" if r.hit_frequency is None else f"{as_percent(r.hit_frequency, 2)} %",
        )
    # Wide enough for the whole table even when piped (rich assumes 80 columns then).
    wide = Console(file=out.file, width=max(out.width, 180))
    wide.print(table)
    for note in rtp.theory_notes():
        wide.print(note, markup=False)
    for finding in report.findings:
        wide.print(f"FINDING: {finding}", markup=False)


def command(args: argparse.Namespace, out: Console) -> int:
    report = run_theoretical() if args.theoretical else run(args.db, args.plot)
    return render(report, out, as_json=args.json)
