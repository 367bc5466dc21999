"""``audit-cli verify --cells cells.json``: every cell's log and the signed index of their
heads (``audit_cli.cells``), and whether every key was pinned."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from audit_cli.cells import CellsReport, verify_cells
from audit_cli.checker import Trust
from audit_cli.commands.common import exit_code, print_json
from audit_cli.output import FoldingTable as Table
from cells.cellmap import CellMap, CellMapError, load
from ledger.keys import KeyringError


@dataclass(frozen=True)
class CellsVerifyReport:
    cellmap: CellMap
    cells: CellsReport
    trusted: bool
    """Every cell and the index key pinned, or the auditor accepted the local keyrings."""

    @property
    def ok(self) -> bool:
        return self.cells.ok and self.trusted

    def to_json(self) -> dict[str, Any]:
        return {**self.cells.to_dict(), "ok": self.ok}


def run(
    cells: str, *, jobs: int | None = None, trust_local_keyring: bool = False
) -> CellsVerifyReport:
    try:
        cellmap = load(cells)
    except CellMapError as e:
        raise KeyringError(str(e)) from e
    report = verify_cells(cellmap, jobs=jobs)
    trusted = trust_local_keyring or (
        report.index_trust == Trust.PINNED
        and all(r.trust == Trust.PINNED for r in report.reports.values())
    )
    return CellsVerifyReport(cellmap, report, trusted)


def render(report: CellsVerifyReport, out: Console, *, as_json: bool) -> int:
    if as_json:
        print_json(out, report.to_json())
    else:
        _print(report, out)
    return exit_code(report)


def _print(report: CellsVerifyReport, out: Console) -> None:
    cells = report.cells
    summary = Table(title="audit-cli verify --cells")
    for col in ("cell", "database", "events", "checkpoints", "covered", "trust", "genesis key"):
        summary.add_column(col)
    for cell in report.cellmap.cells:
        r = cells.reports[cell.name]
        summary.add_row(
            cell.name,
            cell.db,
            str(r.events),
            str(r.checkpoints),
            str(r.covered),
            r.trust,
            r.genesis_fingerprint or "-",
        )
    out.print(summary)
    for w in cells.warnings:
        out.print(f"[yellow]warning[/yellow]: {w}.", markup=True)
    if cells.ok:
        out.print("[green]OK[/green]: every cell verifies and the signed index matches them.")
        if not report.trusted:
            out.print(
                "[red]NOT TRUSTED[/red]: pin every cell ('pin') and the index key "
                "('index_pin') in the cell map, or pass --trust-local-keyring."
            )
        return
    findings = Table(title=f"{len(cells.findings)} finding(s)")
    for col in ("cell", "check", "row", "aggregate", "version", "message"):
        findings.add_column(col)
    for cell_name, f in cells.findings:
        findings.add_row(
            cell_name,
            f.check,
            str(f.notification_id or ""),
            f.originator_id or "",
            str(f.version or ""),
            f.message,
        )
    out.print(findings)
    out.print("[red]FAILED[/red]")


def command(args: argparse.Namespace, out: Console) -> int:
    report = run(args.cells, jobs=args.jobs, trust_local_keyring=args.trust_local_keyring)
    return render(report, out, as_json=args.json)
