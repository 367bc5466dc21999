"""Failures are visible (issue 11, attack 8): sealer failures are logged and shown in
/health with the newest checkpoint's age; a start-up error is one clear line; the SQLite
files and the data directory are private."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from ledger.bootstrap import bootstrap
from ledger.settings import Settings
from tests.conftest import Store
from tests.integration.test_http_serve import ROOT


def test_the_data_directory_and_sqlite_files_are_created_private(tmp_path: Path) -> None:
    data = tmp_path / "fresh"
    app = bootstrap(Settings(data_dir=data))
    app.open_account("o", "pia", "EUR")
    mode = {p.name: stat.S_IMODE(p.stat().st_mode) for p in data.iterdir() if p.is_file()}
    app.close()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert mode["casino.sqlite"] == 0o600 and mode["casino.lock"] == 0o600
    assert all(m & 0o077 == 0 for m in mode.values()), mode  # -wal and -shm too


def test_a_failing_sealer_is_logged_and_shown_in_health(
    sqlite_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    app = sqlite_store.open()
    app.open_account("o", "pia", "EUR")
    app.seal()
    with TestClient(create_app(app)) as client:
        health = client.get("/health").json()
        assert health["status"] == "ok" and 0 <= health["last_checkpoint_age_seconds"] < 60
        # Break the log under the sealer: an upper-case copy of a row it must refuse.
        conn = sqlite3.connect(sqlite_store.data_dir / "casino.sqlite", isolation_level=None)
        conn.execute(
            "INSERT INTO stored_events SELECT upper(originator_id), originator_version, topic, "
            "state FROM stored_events WHERE rowid = (SELECT max(rowid) FROM stored_events)"
        )
        conn.close()
        with caplog.at_level(logging.ERROR, logger="croupier.sealer"):
            app.sealer.start(0.05)
            deadline = time.monotonic() + 10
            while app.sealer.last_error is None and time.monotonic() < deadline:
                time.sleep(0.05)
            app.sealer.stop()
        health = client.get("/health").json()
    assert health["status"] == "degraded"
    assert "non-canonical" in health["sealer_error"]
    assert any("checkpoint failed" in r.getMessage() for r in caplog.records)


def _serve(env_extra: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROUPIER_", "POSTGRES_"))}
    env.update(PYTHONPATH=str(ROOT), **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "api.cli", "serve", "--port", "1"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_start_up_error_is_one_clear_line(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    for env in (
        {"CROUPIER_DATA_DIR": str(not_a_dir)},
        {
            "CROUPIER_DATA_DIR": str(tmp_path / "d"),
            "CROUPIER_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/none",
        },
    ):
        proc = _serve(env, tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
