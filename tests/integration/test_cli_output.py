"""``audit-cli`` never cuts what an investigator copies: piped or ``--wide``, every value is
printed whole on its line; on an 80-column terminal long values fold over lines instead
of being elided; ``history`` lists the newest round first."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import audit_cli.main as cli
from ledger.accounts import account_id_for
from ledger.bootstrap import bootstrap
from ledger.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PLAYER = "investigated-player-with-a-long-name"


@pytest.fixture
def log(tmp_path: Path) -> dict[str, Any]:
    """A store with generated keys beside it (so every command finds them) and 3 rounds."""
    app = bootstrap(Settings(data_dir=tmp_path))
    try:
        app.open_account("o", PLAYER, "EUR")
        app.deposit("d", PLAYER, 100_000)
        sid = app.open_session("s", PLAYER, 50_000).session_id
        codes = []
        for i in range(3):
            r = app.red_dog_bet(f"b{i}", sid, 200)
            if r.status == "open":
                r = app.red_dog_see(f"s{i}", sid)
            codes.append(r.code)
        started = [str(app.find_round(c).started_at) for c in codes]
        app.seal()
        fingerprint = app.keyring.public_document()["keys"][0]["fingerprint"]
    finally:
        app.close()
    return {
        "db": str(tmp_path / "casino.sqlite"),
        "data_dir": str(tmp_path),
        "codes": codes,
        "started": started,
        "session": sid,
        "fingerprint": fingerprint,
        "account": f"account:{account_id_for(PLAYER)}",
    }


def commands(log: dict[str, Any]) -> dict[str, tuple[list[str], list[str]]]:
    """Each command and the long values it must print whole."""
    db = ["--db", log["db"]]
    return {
        "history": (["history", PLAYER, *db], [*log["codes"], *log["started"]]),
        "keys": (["keys", "--data-dir", log["data_dir"]], [log["fingerprint"]]),
        "verify": (
            ["verify", "--balances", "--jobs", "1", "--trust-local-keyring", *db],
            [log["account"], PLAYER],
        ),
        "round": (["round", log["codes"][0], *db], [log["started"][0][:19]]),
        "statement": (["statement", PLAYER, *db], [*log["codes"], log["session"]]),
    }


def _piped(args: list[str]) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "audit_cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _at_80_columns(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> str:
    buffer = io.StringIO()

    def terminal(wide: bool = False, file: Any = None) -> Console:
        if wide:
            return Console(file=buffer, width=100_000, soft_wrap=True)
        return Console(file=buffer, width=80, force_terminal=True, color_system=None)

    monkeypatch.setattr(cli, "console", terminal)
    assert cli.main(args) == 0
    return buffer.getvalue()


def _columns(text: str) -> list[str]:
    """Each table column's text, its folded pieces joined (rows in order)."""
    columns: dict[tuple[int, int], list[str]] = {}
    for line in text.splitlines():
        cells = line.split("│")[1:-1]
        for i, cell in enumerate(cells):
            columns.setdefault((len(cells), i), []).append(cell.strip())
    return ["".join(parts) for parts in columns.values()]


@pytest.mark.parametrize("name", ["history", "keys", "verify", "round", "statement"])
def test_piped_output_prints_every_value_whole_on_one_line(name: str, log: Any) -> None:
    args, values = commands(log)[name]
    out = _piped(args)
    assert "…" not in out
    lines = out.splitlines()
    for value in values:
        assert any(value in line for line in lines), (value, out)
    assert max(len(line) for line in lines) > 80  # wider than the 80 rich assumes when piped


@pytest.mark.parametrize("name", ["history", "keys", "verify", "round", "statement"])
def test_on_an_80_column_terminal_long_values_fold_instead_of_being_cut(
    name: str, log: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, values = commands(log)[name]
    out = _at_80_columns(monkeypatch, args)
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    columns = _columns(out)
    for value in values:
        assert any(value in column for column in columns), (value, out)


def test_wide_keeps_whole_lines_on_a_narrow_terminal(
    log: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, values = commands(log)["statement"]
    out = _at_80_columns(monkeypatch, [*args, "--wide"])
    assert all(any(v in line for line in out.splitlines()) for v in values), out


def test_history_lists_the_newest_round_first(log: Any) -> None:
    out = _piped(["history", PLAYER, "--db", log["db"], "--json"])
    assert [r["code"] for r in json.loads(out)] == list(reversed(log["codes"]))
    table = _piped(["history", PLAYER, "--db", log["db"]])
    positions = [table.index(code) for code in log["codes"]]
    assert positions == sorted(positions, reverse=True)
