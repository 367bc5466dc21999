"""``croupier table run``: the runner as a command on the configured store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.cli import main
from ledger.bootstrap import bootstrap
from ledger.settings import Settings
from ledger.tables.aggregates import Table, table_id_for


def test_table_run_creates_the_table_and_opens_its_first_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CROUPIER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CROUPIER_DATABASE_URL", raising=False)
    assert main(["table", "run", "T7", "--create", "EUR", "--ticks", "2", "--interval", "0"]) == 0
    assert json.loads(capsys.readouterr().out) == {"table": "T7", "actions": 1}
    app = bootstrap(Settings())
    try:
        table = app.find(Table, table_id_for("T7"))
        assert table is not None and table.rounds == 1 and table.round_code is not None
        assert table.round_code.startswith("IBJ-")
    finally:
        app.close()
    # a second run finds the table and the open round: nothing is due yet
    assert main(["table", "run", "T7", "--ticks", "1", "--interval", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["actions"] == 0
