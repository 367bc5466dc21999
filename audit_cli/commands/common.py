"""What the subcommands share: exit codes, the public keys and pin an auditor passes,
JSON output, and the answer for a round that is not in the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from rich.console import Console

from audit_cli.checker import normalise_pin
from ledger.keys import KeyringError, load_public_keys

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
EXIT_SIGPIPE = 128 + 13  # what a shell reports for a process ended by SIGPIPE


class Checked(Protocol):
    """A report that passes or not."""

    @property
    def ok(self) -> bool: ...


def exit_code(report: Checked) -> int:
    """The one place a report becomes an exit code: 0 when it passes, else 1."""
    return EXIT_OK if report.ok else EXIT_FINDINGS


def print_json(out: Console, doc: Any, **dumps: Any) -> None:
    """``doc`` as indented JSON (``dumps``: ``json.dumps`` options)."""
    out.print_json(json.dumps(doc, **dumps))


def default_keys(db: str) -> Path | None:
    """``keys/keyring.json`` beside a SQLite file, when it exists."""
    if db.startswith(("postgresql://", "postgres://")):
        return None
    candidate = Path(db.removeprefix("sqlite:///")).parent / "keys" / "keyring.json"
    return candidate if candidate.exists() else None


def load_keys(db: str, keys: str | None, pinned: bool = False) -> dict[str, Ed25519PublicKey]:
    """The public keys of ``--keys`` (default: beside a SQLite file); none when the log's
    genesis key is ``pinned`` (its own key history then names every key)."""
    path = Path(keys) if keys else default_keys(db)
    if path is None:
        if pinned:
            return {}
        raise KeyringError(
            "no public keys: pass --pin FINGERPRINT (the log's genesis key, printed by "
            "`audit-cli keys`) or --keys FILE (exported by `audit-cli keys`)"
        )
    try:
        return load_public_keys(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError) as e:
        raise KeyringError(f"cannot read public keys from {path}: {e}") from e


def read_pin(value: str | None) -> str | None:
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
