"""``audit-cli``: the auditor's and investigator's commands (human output, or ``--json``)."""

# This module is the parser; each subcommand is a module of ``audit_cli.commands`` that
# computes a typed report and renders it (its exit code decided from the report).

from __future__ import annotations

import argparse
import json
import os
import sys

from pydantic import ValidationError
from pydantic_settings import SettingsError
from rich.console import Console
from rich.markup import escape

from audit_cli.commands import events, history, keys, report, rtp, statement, verify, wallet
from audit_cli.commands import round as round_
from audit_cli.commands.common import EXIT_SIGPIPE, EXIT_USAGE
from audit_cli.output import console
from audit_cli.rows import SourceError
from ledger.keys import KeyringError
from ledger.settings import SETTINGS_ERRORS, settings_problem


def cmd_void(args: argparse.Namespace, out: Console) -> int:
    """``audit-cli`` only reads: a void is the operator's write, ``croupier void``."""
    Console(stderr=True).print(
        "[red]error[/red]: audit-cli only reads the log; a void is the operator's write: "
        "croupier void CODE --reason REASON --incident INCIDENT",
        highlight=False,
        soft_wrap=True,
    )
    return EXIT_USAGE


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
    v.set_defaults(func=verify.command)

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
    k.set_defaults(func=keys.command)
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
    r.set_defaults(func=round_.command)

    h = sub.add_parser("history", parents=[common], help="a player's account history from the log")
    h.add_argument("player", help="the player id")
    _add_db(h)
    h.add_argument("--json", action="store_true", help="machine-readable output")
    h.set_defaults(func=history.command)

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
    st.set_defaults(func=statement.command)

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
    rt.set_defaults(func=rtp.command)

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
    rc.set_defaults(func=wallet.command)
    report.add(sub, common, _when)
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
