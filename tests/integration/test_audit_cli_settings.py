"""Every ``audit-cli`` command finds the store the server uses from the same settings
(``CROUPIER_DATABASE_URL``, else ``CROUPIER_DATA_DIR``), not ``./data`` of wherever it
runs: ``events`` and ``report`` read a fixed ``data/casino.sqlite`` before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.bootstrap import bootstrap
from ledger.settings import Settings


@pytest.mark.parametrize("argv", [["events", "--json"], ["report", "--json"]])
def test_events_and_report_read_the_store_named_by_the_settings(
    tmp_path: Path, argv: list[str]
) -> None:
    store = tmp_path / "elsewhere"
    app = bootstrap(Settings(data_dir=store))
    app.open_account("o", "p1", "EUR")
    app.deposit("d", "p1", 10_000)
    sid = app.open_session("s", "p1", 5_000).session_id
    r = app.red_dog_bet("b", sid, 200)
    if r.status == "open":
        app.red_dog_see("see", sid)
    app.close()
    cwd = tmp_path / "cwd"  # no data/ here
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROUPIER_", "POSTGRES_"))}
    done = subprocess.run(
        [sys.executable, "-m", "audit_cli.main", *argv],
        env={**env, "CROUPIER_DATA_DIR": str(store)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout)
    if argv[0] == "events":
        assert any(e["kind"] == "genesis" for e in out), out
    else:
        assert sum(d["rounds"] for d in out["days"]) == 1, out
