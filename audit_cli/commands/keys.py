"""``audit-cli keys``: the signing public keys with their fingerprints and the genesis key
to pin, exported from a keyring (its private parts left out)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from audit_cli.commands.common import exit_code, print_json
from audit_cli.output import FoldingTable as Table
from ledger.keys import KeyringError, load_public_keys


@dataclass(frozen=True)
class KeysReport:
    public: dict[str, Any]
    """The keyring without its sealing key: ``keys`` and, once the server ran, ``genesis``."""
    written_to: str | None = None
    ok: bool = True


def run(keyring: str | None, data_dir: str | None = None, out: str | None = None) -> KeysReport:
    """The public keys of ``keyring`` (default: the data directory's keyring), written to
    ``out`` when given."""
    if keyring:
        path = Path(keyring)
    else:
        from ledger.settings import Settings

        settings = Settings() if data_dir is None else Settings(data_dir=Path(data_dir))
        path = settings.key_directory / "keyring.json"
    try:
        doc = json.loads(path.read_text())
        load_public_keys(doc)  # refuse to export a keyring whose ids do not match
    except (OSError, ValueError) as e:
        raise KeyringError(f"cannot read keyring {path}: {e}") from e
    public = {k: v for k, v in doc.items() if k != "sealing_current"}
    if out:
        Path(out).write_text(json.dumps(public, indent=2) + "\n")
    return KeysReport(public, out)


def render(report: KeysReport, out: Console, *, as_json: bool) -> int:
    if as_json:
        print_json(out, report.public)
    else:
        _print(report, out)
    return exit_code(report)


def _print(report: KeysReport, out: Console) -> None:
    table = Table(title="signing public keys")
    for col in ("kid", "status", "fingerprint", "created"):
        table.add_column(col)
    for k in report.public["keys"]:
        table.add_row(k["kid"], k["status"], k["fingerprint"], k.get("created", ""))
    out.print(table)
    genesis = report.public.get("genesis")
    if isinstance(genesis, dict):
        out.print(
            f"genesis key of the log (pin it): {genesis.get('fingerprint')}  "
            f"log id {genesis.get('log_id')}\n"
            f"  audit-cli verify --pin {genesis.get('fingerprint')}"
        )
    else:
        out.print("[yellow]no genesis recorded yet[/yellow]: start the server once.")
    if report.written_to:
        out.print(f"written to {report.written_to}")


def command(args: argparse.Namespace, out: Console) -> int:
    return render(run(args.keyring, args.data_dir, args.out), out, as_json=args.json)
