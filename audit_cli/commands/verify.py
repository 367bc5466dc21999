"""``audit-cli verify``: the whole log's signatures, chains, checkpoints and books
(``audit_cli.verify``), how far its keys are trusted, and with ``--balances`` every
ledger's balance and the seamless rounds against their wallet calls."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from audit_cli.checker import Report, Trust
from audit_cli.commands.common import exit_code, load_keys, print_json, read_pin
from audit_cli.output import FoldingTable as Table
from audit_cli.rows import count_rows
from audit_cli.verify import verify_db
from audit_cli.wallet import SeamlessRound, read_seamless, round_findings


@dataclass(frozen=True)
class Seamless:
    """Each seamless round's movements against its wallet transactions (net), and a
    finding for every round where they differ."""

    rounds: list[SeamlessRound]
    findings: list[str]


@dataclass(frozen=True)
class VerifyReport:
    db: str
    log: Report
    trusted: bool
    """The log verifies against a pinned genesis key, or the auditor accepted the local
    keyring (``--trust-local-keyring``)."""
    warning: str | None = None
    """Why an unpinned check is weaker, when it was not pinned."""
    seamless: Seamless | None = None
    """With ``--balances``."""
    balances: bool = False

    @property
    def ok(self) -> bool:
        seamless_ok = self.seamless is None or not self.seamless.findings
        return self.log.ok and self.trusted and seamless_ok

    def to_json(self) -> dict[str, Any]:
        doc = self.log.to_dict()
        doc["ok"] = self.log.ok and self.trusted
        if self.warning:
            doc["warning"] = self.warning
        if self.balances:
            doc["balances"] = dict(sorted(self.log.balances.items()))
            doc["players"] = self.log.players
        if self.seamless is not None:
            doc["seamless_rounds"] = [r._asdict() for r in self.seamless.rounds]
            if self.seamless.findings:
                doc["ok"] = False
                doc["seamless_findings"] = self.seamless.findings
        return doc


def run(
    db: str,
    public_keys: dict[str, Ed25519PublicKey],
    *,
    pin: str | None = None,
    anchor: str | None = None,
    jobs: int | None = None,
    reexecute: bool = True,
    trust_local_keyring: bool = False,
    balances: bool = False,
    progress: Callable[[int], None] | None = None,
) -> VerifyReport:
    """Verify the log of ``db`` against ``public_keys`` and the genesis key ``pin``
    (``SHA256:…``); ``anchor``: a file holding a tree head published earlier."""
    head = json.loads(Path(anchor).read_text()) if anchor else None
    log = verify_db(
        db,
        public_keys,
        jobs=jobs,
        progress=progress,
        anchor=head,
        pin=pin,
        reexecute=reexecute,
    )
    # Without a pinned genesis key the check is only as good as the local keyring, which
    # whoever runs the server can edit: say so, and fail unless the auditor accepts that.
    warning = (
        None
        if log.trust == Trust.PINNED
        else "checked against an UNPINNED local keyring: a key added to it would be trusted; "
        "pass --pin FINGERPRINT (the genesis key from `audit-cli keys`)"
        + ("" if trust_local_keyring else ", or --trust-local-keyring to accept this")
    )
    seamless = Seamless(*round_findings(read_seamless(db))) if balances else None
    return VerifyReport(
        db,
        log,
        trusted=log.trust == Trust.PINNED or trust_local_keyring,
        warning=warning,
        seamless=seamless,
        balances=balances,
    )


def render(report: VerifyReport, out: Console, *, as_json: bool) -> int:
    if as_json:
        print_json(out, report.to_json())
    else:
        _print(report, out)
    return exit_code(report)


def _print(report: VerifyReport, out: Console) -> None:
    log = report.log
    if report.seamless is not None:
        if report.seamless.rounds:
            seamless = Table(title="seamless rounds: movements vs wallet transactions (net)")
            for col in ("round", "moved to the wallet", "by its wallet calls"):
                seamless.add_column(col)
            for r in report.seamless.rounds:
                seamless.add_row(r.game_code, str(r.moved), str(r.wallet_calls))
            out.print(seamless)
        for finding in report.seamless.findings:
            out.print(f"[red]FINDING[/red]: {finding}", markup=True)
    if report.balances:
        balances = Table(title="balances rebuilt from the movements in the log")
        balances.add_column("ledger")
        balances.add_column("player")
        balances.add_column("balance (minor units)", justify="right")
        for name, value in sorted(log.balances.items()):
            balances.add_row(name, log.players.get(name, ""), str(value))
        out.print(balances)
    summary = Table(title="audit-cli verify", show_header=False)
    summary.add_column("what")
    summary.add_column("value")
    summary.add_row("database", report.db)
    summary.add_row("events", str(log.events))
    summary.add_row("aggregates", str(log.aggregates))
    summary.add_row("checkpoints", str(log.checkpoints))
    summary.add_row("covered by newest checkpoint", str(log.covered))
    summary.add_row("trust", log.trust)
    summary.add_row("genesis key", log.genesis_fingerprint or "- (no genesis: format 1 log)")
    summary.add_row(
        "key history",
        ", ".join(f"{k.kid} from row {k.from_row}" for k in log.key_history) or "-",
    )
    summary.add_row("rounds re-executed", _rounds_line(log.rounds))
    out.print(summary)
    if report.warning:
        out.print(f"[yellow]warning[/yellow]: {report.warning}.", markup=True)
    if log.ok:
        out.print("[green]OK[/green]: every signature, chain, checkpoint and the books verify.")
        if log.uncovered:
            out.print(
                f"[yellow]note[/yellow]: the {log.uncovered} newest events are not yet "
                "covered by a checkpoint (they are signed and chained only)."
            )
        if not report.trusted:
            out.print("[red]NOT TRUSTED[/red]: no pinned genesis key.")
        return
    findings = Table(title=f"{len(log.findings)} finding(s)")
    for col in ("check", "row", "aggregate", "version", "message"):
        findings.add_column(col)
    for f in log.findings:
        findings.add_row(
            f.check,
            str(f.notification_id or ""),
            f.originator_id or "",
            str(f.version or ""),
            f.message,
        )
    out.print(findings)
    out.print("[red]FAILED[/red]")


def _rounds_line(counts: dict[str, int] | None) -> str:
    """What re-execution covered (``audit_cli.reexec``), for the summary."""
    if counts is None:
        return "- (--no-reexecute: the money was not compared with the rules)"
    c = {"table_rounds_reexecuted": 0, "table_rounds_pending": 0, "table_rounds_shoe_live": 0}
    c.update(counts)
    return (
        f"{c['rounds_reexecuted']} rounds and {c['table_rounds_reexecuted']} table rounds, "
        f"{c['movements_compared']} movements compared; pending: {c['rounds_pending']} "
        f"rounds (seed not yet revealed), {c['table_rounds_pending']} table rounds not "
        f"ended, {c['table_rounds_shoe_live']} re-played from the cards shown (shoe live: "
        "cards checked once its seed is revealed)"
    )


def command(args: argparse.Namespace, out: Console) -> int:
    if args.cells:
        from audit_cli.commands import cells

        return cells.command(args, out)
    pin = read_pin(args.pin)
    keys = load_keys(args.db, args.keys, pinned=pin is not None)
    total = count_rows(args.db)
    show_bar = not args.json and total >= args.progress_threshold
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not show_bar,
    ) as bar:
        task = bar.add_task("verifying events", total=total)
        report = run(
            args.db,
            keys,
            pin=pin,
            anchor=args.anchor,
            jobs=args.jobs,
            reexecute=not args.no_reexecute,
            trust_local_keyring=args.trust_local_keyring,
            balances=args.balances,
            progress=lambda n: bar.advance(task, n),
        )
    return render(report, out, as_json=args.json)
