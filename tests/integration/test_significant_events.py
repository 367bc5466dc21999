"""Significant events (issue 29): a server's start and stop, table configuration and limit
changes, pauses and resumes, voids, the operator's verification run, a sealer refusal and
a wallet's outage and recovery are in the signed log, and ``audit-cli events`` lists them
(``--kind``, ``--since``); the log still verifies with them in it."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as croupier
from api.table_runners import DEFAULT_TABLE
from audit_cli.events import significant_events
from audit_cli.main import main as audit_cli
from ledger.bootstrap import bootstrap
from ledger.contracts import SignificantKind
from ledger.settings import Settings
from ledger.significant import WalletWatch
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer
from tests.wallet_fakes import FAST_RETRY, wallet_over_http

TABLE_LIMITS = {"limits": {"main": [200, 100_000]}}


def kinds(db: str) -> list[str]:
    return [r.kind for r in significant_events(db)]


@pytest.mark.requirement("GLI-19-SIGNIFICANT-EVENTS")
def test_significant_events_are_signed_in_the_log_and_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, **CREDENTIALS)  # type: ignore[arg-type]
    n = iter(range(1000))

    def post(client: TestClient, path: str, body: Any = None, token: str = OPERATOR) -> Any:
        headers = {**bearer(token), "Idempotency-Key": f"k{next(n)}"}
        return client.post(path, json=body, headers=headers)

    with TestClient(create_app(settings=settings)) as client:
        assert post(client, "/v1/tables", {"table": "t9", "currency": "EUR"}).status_code == 201
        r = post(client, "/v1/tables/t9/config", {"config": TABLE_LIMITS})
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + 20
        while (
            r := post(client, f"/v1/tables/{DEFAULT_TABLE}/pause", {"reason": "dealer check"})
        ).status_code != 200:
            assert time.monotonic() < deadline, r.text  # the runner opens its first round
            time.sleep(0.1)
        assert post(client, f"/v1/tables/{DEFAULT_TABLE}/resume").status_code == 200
        post(client, "/v1/accounts", {"player_id": "ann", "currency": "EUR"})
        post(client, "/v1/accounts/ann/deposits", {"amount": 10_000})
        opened = post(client, "/v1/sessions", {"player_id": "ann", "buy_in": 5_000}).json()
        bet = post(
            client,
            f"/v1/sessions/{opened['session_id']}/red-dog/bet",
            {"bet": 100},
            opened["token"],
        ).json()
        void = {"reason": "malfunction: display froze", "incident_id": "INC-7"}
        assert post(client, f"/v1/rounds/{bet['code']}/void", void).status_code == 200
    db = str(data / "casino.sqlite")
    listed = kinds(db)
    for kind in (
        "genesis",
        "server-started",
        "table-created",
        "table-config",
        "pause",
        "resume",
        "void",
        "server-stopped",
    ):
        assert kind in listed, (kind, listed)
    assert listed.index("server-started") < listed.index("pause") < listed.index("server-stopped")

    # The operator's verification run is recorded with what it found.
    monkeypatch.setenv("CROUPIER_DATA_DIR", str(data))
    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(f"CROUPIER_{k.upper()}", v)
    assert croupier(["verify", "--jobs", "1"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["ok"] is True and summary["findings"] == 0
    run = [r for r in significant_events(db) if r.kind == "verify-run"]
    assert len(run) == 1 and run[0].detail["ok"] is True and run[0].detail["events"] > 0

    # A sealer refusal: a non-canonical copy of a row the sealer must not checkpoint.
    app = bootstrap(settings)
    conn = sqlite3.connect(data / "casino.sqlite", isolation_level=None)
    conn.execute(
        "INSERT INTO stored_events SELECT upper(originator_id), originator_version, topic, "
        "state FROM stored_events WHERE rowid = (SELECT max(rowid) FROM stored_events)"
    )
    conn.close()
    app.sealer.tick()
    app.sealer.tick()  # the same refusal again: recorded once
    refusals = [r for r in significant_events(db) if r.kind == "sealer-refused"]
    assert len(refusals) == 1 and "non-canonical" in refusals[0].detail["error"]
    app.sealer.stop()

    # audit-cli events, filtered by kind and by time.
    assert audit_cli(["events", "--db", db, "--kind", "void", "--json"]) == 0
    voids = json.loads(capsys.readouterr().out)
    assert [v["subject"] for v in voids] == [bet["code"]]
    assert voids[0]["detail"]["reason"] == "malfunction: display froze"
    assert voids[0]["detail"]["incident_id"] == "INC-7"
    config = [r for r in significant_events(db) if r.kind == "table-config"]
    assert config[-1].subject == "t9" and config[-1].detail["config"]["limits"]["main"] == [
        200,
        100_000,
    ]
    late_today = datetime.now(UTC).date().isoformat() + "T23:59:59"
    assert audit_cli(["events", "--db", db, "--since", late_today, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert audit_cli(["events", "--db", db]) == 0
    assert "server-started" in capsys.readouterr().out


def test_a_wallet_outage_and_its_recovery_are_recorded_once_each(tmp_path: Path) -> None:
    (tmp_path / "wallet").mkdir()
    with wallet_over_http(tmp_path / "wallet") as wallet:
        settings = Settings(data_dir=tmp_path / "data", **CREDENTIALS)  # type: ignore[arg-type]
        app = bootstrap(settings, wallets={"op": wallet.client}, wallet_retry=FAST_RETRY)
        try:
            assert wallet.client.observers  # composed: every call is watched
            watch = WalletWatch(app, "op")
            watch.saw("debit", True, "")  # up from the start: nothing to record
            watch.saw("debit", False, "timeout (ReadTimeout)")
            watch.saw("credit", False, "timeout (ReadTimeout)")  # still down: once
            watch.saw("credit", True, "")
            app.seal()
        finally:
            app.close()
    rows = list(significant_events(str(tmp_path / "data" / "casino.sqlite")))
    got = [(r.kind, r.subject, r.detail.get("cause")) for r in rows if r.kind.startswith("wallet")]
    assert got == [
        (SignificantKind.WALLET_UNAVAILABLE, "op", "timeout (ReadTimeout)"),
        (SignificantKind.WALLET_AVAILABLE, "op", None),
    ]
