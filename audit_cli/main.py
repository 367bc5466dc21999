"""``audit-cli``: the auditor's and investigator's commands (human output, or ``--json``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from audit_cli import events, report_render
from audit_cli.checker import normalise_pin
from audit_cli.output import FoldingTable as Table
from audit_cli.output import console
from audit_cli.rows import SourceError, count_rows
from audit_cli.verify import verify_db
from games.percent import as_percent
from ledger.keys import KeyringError, load_public_keys
from ledger.settings import SETTINGS_ERRORS, settings_problem

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
EXIT_SIGPIPE = 128 + 13  # what a shell reports for a process ended by SIGPIPE


def _default_keys(db: str) -> Path | None:
    if db.startswith(("postgresql://", "postgres://")):
        return None
    candidate = Path(db.removeprefix("sqlite:///")).parent / "keys" / "keyring.json"
    return candidate if candidate.exists() else None


def _load_keys(args: argparse.Namespace) -> dict[str, Any]:
    path = Path(args.keys) if args.keys else _default_keys(args.db)
    if path is None:
        if getattr(args, "pin", None):
            return {}  # pinned: the log's own key history names every key
        raise KeyringError(
            "no public keys: pass --pin FINGERPRINT (the log's genesis key, printed by "
            "`audit-cli keys`) or --keys FILE (exported by `audit-cli keys`)"
        )
    try:
        return load_public_keys(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError) as e:
        raise KeyringError(f"cannot read public keys from {path}: {e}") from e


def _pin(value: str | None) -> str | None:
    """``--pin``: a fingerprint (``SHA256:…``), or a file written by `audit-cli keys --out`
    whose ``genesis`` entry names it."""
    if not value:
        return None
    path = Path(value)
    if path.suffix == ".json" or path.exists():
        try:
            value = str(json.loads(path.read_text())["genesis"]["fingerprint"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise KeyringError(f"cannot read a genesis fingerprint from {path}: {e}") from e
    try:
        return "SHA256:" + normalise_pin(value)
    except ValueError as e:
        raise KeyringError(str(e)) from e


def cmd_verify(args: argparse.Namespace, out: Console) -> int:
    if args.cells:
        from audit_cli.cells import cmd_verify_cells

        return cmd_verify_cells(args, out)
    args.pin = _pin(args.pin)
    keys = _load_keys(args)
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
        anchor = json.loads(Path(args.anchor).read_text()) if args.anchor else None
        report = verify_db(
            args.db,
            keys,
            jobs=args.jobs,
            progress=lambda n: bar.advance(task, n),
            anchor=anchor,
            pin=args.pin,
            reexecute=not args.no_reexecute,
        )
    # Without a pinned genesis key the check is only as good as the local keyring, which
    # whoever runs the server can edit: say so, and fail unless the auditor accepts that.
    trusted = report.trust == "pinned" or args.trust_local_keyring
    unpinned = (
        None
        if report.trust == "pinned"
        else "checked against an UNPINNED local keyring: a key added to it would be trusted; "
        "pass --pin FINGERPRINT (the genesis key from `audit-cli keys`)"
        + ("" if args.trust_local_keyring else ", or --trust-local-keyring to accept this")
    )
    code = EXIT_OK if report.ok and trusted else EXIT_FINDINGS
    if args.json:
        doc = report.to_dict()
        doc["ok"] = report.ok and trusted
        if unpinned:
            doc["warning"] = unpinned
        if args.balances:
            doc["balances"] = dict(sorted(report.balances.items()))
            doc["players"] = report.players
            rounds, seamless_findings = _seamless_rounds(args.db)
            doc["seamless_rounds"] = rounds
            if seamless_findings:
                doc["ok"] = False
                doc["seamless_findings"] = seamless_findings
                code = EXIT_FINDINGS
        out.print_json(json.dumps(doc))
        return code
    if args.balances:
        rounds, seamless_findings = _seamless_rounds(args.db)
        if rounds:
            seamless = Table(title="seamless rounds: movements vs wallet transactions (net)")
            for col in ("round", "moved to the wallet", "by its wallet calls"):
                seamless.add_column(col)
            for r in rounds:
                seamless.add_row(r["game_code"], str(r["moved"]), str(r["wallet_calls"]))
            out.print(seamless)
        for finding in seamless_findings:
            out.print(f"[red]FINDING[/red]: {finding}", markup=True)
        if seamless_findings:
            code = EXIT_FINDINGS
        balances = Table(title="balances rebuilt from the movements in the log")
        balances.add_column("ledger")
        balances.add_column("player")
        balances.add_column("balance (minor units)", justify="right")
        for name, value in sorted(report.balances.items()):
            balances.add_row(name, report.players.get(name, ""), str(value))
        out.print(balances)
    summary = Table(title="audit-cli verify", show_header=False)
    summary.add_column("what")
    summary.add_column("value")
    summary.add_row("database", args.db)
    summary.add_row("events", str(report.events))
    summary.add_row("aggregates", str(report.aggregates))
    summary.add_row("checkpoints", str(report.checkpoints))
    summary.add_row("covered by newest checkpoint", str(report.covered))
    summary.add_row("trust", report.trust)
    summary.add_row("genesis key", report.genesis_fingerprint or "- (no genesis: format 1 log)")
    summary.add_row(
        "key history",
        ", ".join(f"{k.kid} from row {k.from_row}" for k in report.key_history) or "-",
    )
    summary.add_row("rounds re-executed", _rounds_line(report.rounds))
    out.print(summary)
    if unpinned:
        out.print(f"[yellow]warning[/yellow]: {unpinned}.", markup=True)
    if report.ok:
        out.print("[green]OK[/green]: every signature, chain, checkpoint and the books verify.")
        if report.uncovered:
            out.print(
                f"[yellow]note[/yellow]: the {report.uncovered} newest events are not yet "
                "covered by a checkpoint (they are signed and chained only)."
            )
        if not trusted:
            out.print("[red]NOT TRUSTED[/red]: no pinned genesis key.")
        return code
    findings = Table(title=f"{len(report.findings)} finding(s)")
    for col in ("check", "row", "aggregate", "version", "message"):
        findings.add_column(col)
    for f in report.findings:
        findings.add_row(
            f.check,
            str(f.notification_id or ""),
            f.originator_id or "",
            str(f.version or ""),
            f.message,
        )
    out.print(findings)
    out.print("[red]FAILED[/red]")
    return EXIT_FINDINGS


def _seamless_rounds(db: str) -> tuple[list[dict[str, Any]], list[str]]:
    from audit_cli.wallet import read_seamless, round_findings

    return round_findings(read_seamless(db))


def cmd_wallet_reconcile(args: argparse.Namespace, out: Console) -> int:
    from audit_cli.wallet import read_seamless, selected, write_csv
    from ledger.seamless.book import totals

    entries = selected(read_seamless(args.db), args.operator, args.start, args.end)
    if args.csv:
        write_csv(entries, sys.stdout)
        return EXIT_OK
    if args.json:
        doc = {"transactions": [e.to_dict() for e in entries], "totals": totals(entries)}
        print(json.dumps(doc))
        return EXIT_OK
    table = Table(title=f"wallet transactions of {args.operator}")
    for col in ("time", "call", "player", "round", "stage", "amount", "state", "cause"):
        table.add_column(col)
    for e in entries:
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
    t = totals(entries)
    players = Table(title="totals per player (minor units)")
    for col in ("player", "debited", "credited", "rolled back", "pending", "net"):
        players.add_column(col)
    for name, v in sorted(t["players"].items()):
        players.add_row(
            name, *(str(v[k]) for k in ("debited", "credited", "rolled_back", "pending", "net"))
        )
    out.print(players)
    return EXIT_OK


def cmd_keys(args: argparse.Namespace, out: Console) -> int:
    if args.keyring:
        path = Path(args.keyring)
    else:
        from ledger.settings import Settings

        settings = Settings() if args.data_dir is None else Settings(data_dir=args.data_dir)
        path = settings.key_directory / "keyring.json"
    try:
        doc = json.loads(path.read_text())
        load_public_keys(doc)  # refuse to export a keyring whose ids do not match
    except (OSError, ValueError) as e:
        raise KeyringError(f"cannot read keyring {path}: {e}") from e
    public = {k: v for k, v in doc.items() if k != "sealing_current"}
    if args.out:
        Path(args.out).write_text(json.dumps(public, indent=2) + "\n")
    if args.json:
        out.print_json(json.dumps(public))
        return EXIT_OK
    table = Table(title="signing public keys")
    for col in ("kid", "status", "fingerprint", "created"):
        table.add_column(col)
    for k in public["keys"]:
        table.add_row(k["kid"], k["status"], k["fingerprint"], k.get("created", ""))
    out.print(table)
    genesis = public.get("genesis")
    if isinstance(genesis, dict):
        out.print(
            f"genesis key of the log (pin it): {genesis.get('fingerprint')}  "
            f"log id {genesis.get('log_id')}\n"
            f"  audit-cli verify --pin {genesis.get('fingerprint')}"
        )
    else:
        out.print("[yellow]no genesis recorded yet[/yellow]: start the server once.")
    if args.out:
        out.print(f"written to {args.out}")
    return EXIT_OK


def _glyphs(cards: list[str]) -> str:
    from games.cards import Card

    return " ".join(Card.parse(c).glyph for c in cards)


def cmd_round(args: argparse.Namespace, out: Console) -> int:
    from audit_cli.rounds import check_round

    keys = _load_keys(args) if args.keys else None
    from audit_cli.table_round import check_table_round, is_table_code, print_report

    if is_table_code(args.code):  # a live blackjack table round (ledger/tables)
        table_report = check_table_round(args.db, args.code, keys, args.session)
        if table_report.status == "missing":
            return _not_found(args, out)
        return print_report(table_report, out, args.json)
    report = check_round(args.db, args.code, keys)
    if report.status == "missing":
        return _not_found(args, out)
    if args.json:
        out.print_json(json.dumps(report.to_dict(), default=str))
        return EXIT_OK if report.ok else EXIT_FINDINGS
    table = Table(title=f"round {report.code} ({report.status})")
    for col in ("#", "time", "step", "cards", "details"):
        table.add_column(col)
    for s in report.steps:
        view = s.get("view") or {}
        cards = view.get("cards") or view.get("dealt") or []
        details = {
            k: v
            for k, v in s.items()
            if k
            in (
                "decision",
                "automatic",
                "stake",
                "stake_added",
                "payout",
                "outcome",
                "reason",
                "incident_id",
                "refunded",
                "reversed_win",
            )
        }
        table.add_row(
            str(s["version"]),
            str(s.get("time", "")),
            s["step"],
            _glyphs(cards),
            json.dumps(details, default=str),
        )
    out.print(table)
    _print_video_poker(report.steps, out)
    if not report.signatures_checked:
        out.print(
            "[yellow]note[/yellow]: signatures and chain links not checked "
            "(no public keys: pass --keys FILE from `audit-cli keys`)."
        )
    if report.ok:
        if report.status in ("settled", "voided"):
            out.print(
                "[green]OK[/green]: every event"
                + (" is signed and chained, and its" if report.signatures_checked else "'s")
                + " views, decisions, cards and amounts re-derive from the revealed seed."
            )
        else:
            out.print("[yellow]open[/yellow]: the seed is revealed when the round ends.")
        return EXIT_OK
    for f in report.findings:
        out.print(f"[red]MISMATCH[/red] {escape(f.text())}", highlight=False)
    return EXIT_FINDINGS


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


def _not_found(args: argparse.Namespace, out: Console) -> int:
    """A code with no round in this store is not a mismatch (nothing was compared): say
    which store was read, so a wrong ``--db`` or settings show at once."""
    message = (
        f"no round with game code {args.code!r} in {args.db}: check the code and the store "
        "(--db, or CROUPIER_DATABASE_URL / CROUPIER_DATA_DIR); `audit-cli verify` tells "
        "whether any stored event was removed"
    )
    if args.json:
        print(json.dumps({"ok": False, "status": "not-found", "code": args.code, "error": message}))
    else:
        Console(stderr=True).print(f"[red]NOT FOUND[/red]: {escape(message)}", highlight=False)
    return EXIT_FINDINGS


def _print_video_poker(steps: list[dict[str, Any]], out: Console) -> None:
    final = (steps[-1].get("view") or {}) if steps else {}
    if final.get("lines"):
        lines = Table(title="lines (each drew from its own deck)")
        for col in ("line", "cards", "hand", "win"):
            lines.add_column(col)
        for i, ln in enumerate(final["lines"], start=1):
            lines.add_row(str(i), _glyphs(ln["cards"]), ln["rank"], str(ln["win"]))
        out.print(lines)
    if final.get("double_up"):
        table = Table(title="double-up (each step is its own bet)")
        for col in (
            "step",
            "bet type",
            "staked",
            "banked",
            "dealer",
            "face down",
            "pick",
            "result",
            "amount after",
        ):
            table.add_column(col)
        for st in final["double_up"]:
            table.add_row(
                str(st["n"] + 1),
                st["bet_type"],
                str(st["staked"]),
                str(st["banked"]),
                _glyphs([st["dealer_card"]]),
                _glyphs(st["cards"]),
                "" if st["index"] is None else str(st["index"] + 1),
                str(st["result"] or "pending"),
                "" if st["amount_after"] is None else str(st["amount_after"]),
            )
        out.print(table)


def cmd_history(args: argparse.Namespace, out: Console) -> int:
    from audit_cli.rounds import MONEY_COLUMNS, history_totals, player_history

    rows = list(reversed(player_history(args.db, args.player)))  # newest first, as HTTP
    if args.json:
        out.print_json(json.dumps(rows, default=str))  # totals: sum the money columns
        return EXIT_OK
    totals = history_totals(rows)
    table = Table(title=f"account history of {args.player}")
    for col in ("date", "game", "code", *MONEY_COLUMNS, "outcome", "void to", "bets"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            str(r["date"]),
            str(r["game"]),
            str(r["code"]),
            *(str(r[k]) for k in MONEY_COLUMNS),
            str(r["outcome"]),
            r["landed_on"] or "",
            ", ".join(f"{b} {a}" for b, a in (r.get("bets") or {}).items()),  # live tables
        )
    table.add_row("total", "", "", *(str(totals[k]) for k in MONEY_COLUMNS), "", "", "")
    out.print(table)
    return EXIT_OK


def cmd_statement(args: argparse.Namespace, out: Console) -> int:
    from audit_cli.statement import read_statement, write_csv

    lines = read_statement(args.db, args.player, args.start, args.end)
    if args.json:
        out.print_json(json.dumps([ln.to_dict() for ln in lines]))
        return EXIT_OK
    if args.csv:
        write_csv(lines, sys.stdout)
        return EXIT_OK
    table = Table(title=f"statement of {args.player}")
    for col in ("seq", "time", "kind", "round", "session", "amount", "balance", "account"):
        table.add_column(
            col, justify="right" if col in ("amount", "balance", "account") else "left"
        )
    for ln in lines:
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
    return EXIT_OK


def cmd_void(args: argparse.Namespace, out: Console) -> int:
    """``audit-cli`` only reads: a void is the operator's write, ``croupier void``."""
    Console(stderr=True).print(
        "[red]error[/red]: audit-cli only reads the log; a void is the operator's write: "
        "croupier void CODE --reason REASON --incident INCIDENT",
        highlight=False,
        soft_wrap=True,
    )
    return EXIT_USAGE


def cmd_rtp(args: argparse.Namespace, out: Console) -> int:
    from audit_cli import rtp

    if args.theoretical:
        return _print_theoretical(args, out)
    report = rtp.rtp_report(args.db, series=bool(args.plot))
    from audit_cli.table_rtp import print_table_rtp, table_rtp

    tables = table_rtp(args.db)  # the live blackjack tables, per bet type
    panels = 0
    if args.plot and (report.rounds or tables.rows):
        try:
            panels = rtp.plot(report, Path(args.plot), tables)
        except ImportError as e:
            raise SourceError(f"--plot needs matplotlib ({e})") from e
    if report.rounds == 0 and tables.rows:
        if args.json:
            doc = {**report.to_dict(), "tables": [tables.to_dict()]}
            out.print_json(json.dumps(doc, allow_nan=False))
        else:
            print_table_rtp(tables, out)
            if args.plot:
                out.print(f"plot of {panels} panel(s) written to {args.plot}")
        return EXIT_OK if report.ok else EXIT_FINDINGS
    if report.rounds == 0:
        # Nothing settled is not a finding: an empty (or only voided/open) log has no RTP.
        message = f"no settled rounds in {args.db}: no RTP to compare"
        if report.voided or report.open:
            message += f" ({report.voided} voided, {report.open} open)"
        if args.json:
            out.print_json(json.dumps({**report.to_dict(), "message": message}))
        else:
            out.print(message)
        return EXIT_OK if report.ok else EXIT_FINDINGS
    if args.json:
        doc = report.to_dict()
        if tables.rows:
            doc["tables"] = [tables.to_dict()]
        out.print_json(json.dumps(doc, allow_nan=False))  # strict JSON: no bare Infinity
        return EXIT_OK if report.ok else EXIT_FINDINGS
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
    if args.plot:
        out.print(f"plot of {panels} panel(s) written to {args.plot}")
    if tables.rows:
        print_table_rtp(tables, out)
    if report.ok:
        out.print("[green]OK[/green]: every theoretical RTP lies inside its interval.")
        return EXIT_OK
    for p in report.problems:
        out.print(f"[red]FINDING[/red] {p}")
    return EXIT_FINDINGS


def _print_theoretical(args: argparse.Namespace, out: Console) -> int:
    from audit_cli import rtp

    rows = rtp.theoretical_rows()
    findings = rtp.theory_findings(rows)
    if args.json:
        doc = [{**r.to_dict(), "known_difference": rtp.known_difference(r)} for r in rows]
        out.print_json(json.dumps({"ok": not findings, "rows": doc, "problems": findings}))
        return EXIT_FINDINGS if findings else EXIT_OK
    table = Table(title="certified RTP: exact full-cycle maths")
    for col in ("game", "variant", "paytable / bet", "play", "coins", "RTP", "published"):
        table.add_column(col, no_wrap=True)
    table.add_column("agreement", min_width=29, max_width=29)
    table.add_column("max paid", justify="right", no_wrap=True)
    table.add_column("hit freq.", justify="right", no_wrap=True)
    for r in rows:
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
    for finding in findings:
        wide.print(f"FINDING: {finding}", markup=False)
    return EXIT_FINDINGS if findings else EXIT_OK


DB_HELP = (
    "SQLite file or postgresql://...?schema=NAME; default: the server's own store, "
    "CROUPIER_DATABASE_URL if set, else CROUPIER_DATA_DIR/casino.sqlite (data/casino.sqlite)"
)


def _add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=None, help=DB_HELP)


def default_db() -> str:
    """The store ``croupier serve`` uses with the same environment (ledger.settings)."""
    from ledger.settings import Settings

    return Settings().store


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="audit-cli", description=__doc__)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--wide",
        action="store_true",
        help="never fold or shrink a column, whatever the terminal's width "
        "(always so when stdout is not a terminal)",
    )
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser(
        "verify", parents=[common], help="verify signatures, chains, checkpoints and books"
    )
    _add_db(v)
    v.add_argument(
        "--keys",
        help="public keys JSON from `audit-cli keys --out` "
        "(default: keys/keyring.json beside a SQLite file)",
    )
    v.add_argument(
        "--anchor",
        help="a checkpoint published earlier (JSON with tree_size and "
        "root_hash, e.g. from a previous `verify --json`'s latest_checkpoint); the "
        "log must still contain it, which catches a deleted tail",
    )
    v.add_argument(
        "--pin",
        help="fingerprint of the log's genesis key (SHA256:…, as printed at first run and "
        "by `audit-cli keys`), or the JSON file `audit-cli keys --out` wrote",
    )
    v.add_argument(
        "--trust-local-keyring",
        action="store_true",
        help="accept a check against the local keyring without a pinned genesis key",
    )
    v.add_argument(
        "--cells",
        help="a cell map (cells.json): verify every cell and the signed index of their heads",
    )
    v.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    v.add_argument(
        "--no-reexecute",
        action="store_true",
        help="do not re-run the rounds: their money is then not compared with what the "
        "rules pay (the one check that holds when the signing key has leaked)",
    )
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.add_argument(
        "--balances",
        action="store_true",
        help="also print every account, session, bank and house balance rebuilt from the log",
    )
    v.add_argument("--progress-threshold", type=int, default=20_000, help=argparse.SUPPRESS)
    v.set_defaults(func=cmd_verify)

    k = sub.add_parser(
        "keys", parents=[common], help="export the signing public keys with fingerprints"
    )
    k.add_argument(
        "--data-dir",
        default=None,
        help="croupier data directory (default: CROUPIER_DATA_DIR, else data)",
    )
    k.add_argument("--keyring", help="path to a keyring.json instead of DATA_DIR/keys/keyring.json")
    k.add_argument("--out", help="write the public keys JSON to this file")
    k.add_argument("--json", action="store_true", help="machine-readable output")
    k.set_defaults(func=cmd_keys)
    r = sub.add_parser(
        "round", parents=[common], help="a round's timeline, re-derived from its revealed seed"
    )
    r.add_argument("code", help="game code, e.g. RD-20261129-131541-7K3Q")
    _add_db(r)
    r.add_argument(
        "--keys",
        help="public keys JSON from `audit-cli keys --out` "
        "(default: keys/keyring.json beside a SQLite file)",
    )
    r.add_argument(
        "--session",
        help="a live blackjack round (IBJ-...): one player's bets, decisions, hands and payouts",
    )
    r.add_argument("--json", action="store_true", help="machine-readable output")
    r.set_defaults(func=cmd_round)

    h = sub.add_parser("history", parents=[common], help="a player's account history from the log")
    h.add_argument("player", help="the player id")
    _add_db(h)
    h.add_argument("--json", action="store_true", help="machine-readable output")
    h.set_defaults(func=cmd_history)

    st = sub.add_parser(
        "statement",
        parents=[common],
        help="every movement of a player's money with running balances, from the log",
    )
    st.add_argument("player", help="the player id")
    _add_db(st)
    st.add_argument(
        "--from", dest="start", type=_when, help="first day or time (ISO 8601, UTC by default)"
    )
    st.add_argument("--to", dest="end", type=_when, help="last day (inclusive) or time")
    fmt = st.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV on stdout")
    fmt.add_argument("--json", action="store_true", help="machine-readable output")
    st.set_defaults(func=cmd_statement)

    vd = sub.add_parser("void", help="moved to the operator's tool: croupier void")
    vd.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    vd.set_defaults(func=cmd_void)

    rt = sub.add_parser(
        "rtp",
        parents=[common],
        help="observed RTP per game, variant, paytable and coins vs the certified maths",
    )
    _add_db(rt)
    rt.add_argument("--json", action="store_true", help="machine-readable output")
    rt.add_argument(
        "--plot", metavar="FILE.png", help="draw cumulative observed RTP against theory"
    )
    rt.add_argument(
        "--theoretical",
        action="store_true",
        help="print the certified-RTP table (exact maths; no database needed)",
    )
    rt.set_defaults(func=cmd_rtp)

    wl = sub.add_parser("wallet", help="seamless wallet: reconciliation with the operator")
    wsub = wl.add_subparsers(dest="wallet_command", required=True)
    rc = wsub.add_parser(
        "reconcile",
        parents=[common],
        help="every transaction croupier sent to the operator's wallet, with its state",
    )
    rc.add_argument("--operator", required=True, help="the operator whose wallet is reconciled")
    _add_db(rc)
    rc.add_argument("--from", dest="start", type=_when, help="first day or time (ISO 8601)")
    rc.add_argument("--to", dest="end", type=_when, help="last day (inclusive) or time")
    rfmt = rc.add_mutually_exclusive_group()
    rfmt.add_argument("--csv", action="store_true", help="CSV on stdout")
    rfmt.add_argument("--json", action="store_true", help="machine-readable output")
    rc.set_defaults(func=cmd_wallet_reconcile)
    report_render.add(sub, common, _when)
    events.add(sub, common, _when)
    return p


def _when(text: str) -> str:
    from audit_cli.statement import parse_when

    try:
        return parse_when(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = console(wide=getattr(args, "wide", False))
    try:
        if getattr(args, "db", "") is None:
            args.db = default_db()
        code: int = args.func(args, out)
    except BrokenPipeError:
        # The reader went away (`audit-cli statement … | head`): stop quietly, as a shell
        # tool does on SIGPIPE; stdout goes to /dev/null so the exit flush cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_SIGPIPE
    except (KeyringError, SourceError, ValidationError, SettingsError) as e:
        problem = settings_problem(e) if isinstance(e, SETTINGS_ERRORS) else str(e)
        if getattr(args, "json", False):
            print(json.dumps({"ok": False, "error": problem}))
        else:
            Console(stderr=True).print(f"[red]error[/red]: {escape(problem)}")
        return EXIT_USAGE
    return code


if __name__ == "__main__":
    sys.exit(main())
