"""Cells on SQLite files, by the commands an operator and an auditor run: ``croupier cells
seal`` checkpoints every cell and signs the index; ``audit-cli verify --cells`` checks them
with each cell's local keyring (and says it is not pinned)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.cli import main as croupier
from audit_cli.main import main as audit_cli


def test_cells_seal_then_verify_cells_on_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CROUPIER_DATABASE_URL", raising=False)
    path = tmp_path / "cells.json"
    path.write_text(json.dumps({"cells": [{"name": "a"}, {"name": "b"}]}))
    assert croupier(["cells", "seal", "--cells", str(path)]) == 0
    index = json.loads((tmp_path / "cells-index.json").read_text())
    assert [h["cell"] for h in index["cells"]] == ["a", "b"]
    assert (tmp_path / "a" / "casino.sqlite").exists() and (tmp_path / "b" / "keys").is_dir()
    capsys.readouterr()
    args = ["verify", "--cells", str(path), "--jobs", "1", "--json"]
    assert audit_cli(args) == 1  # nothing pinned: not trusted
    doc = json.loads(capsys.readouterr().out)
    assert doc["findings"] == [] and doc["ok"] is False
    assert audit_cli([*args, "--trust-local-keyring"]) == 0
