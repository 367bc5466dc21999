"""Logs written before a format change still read, replay and verify.

``tests/fixtures/legacy_log_v1/`` was written by the code of commit bcf9fd5 (see its
README): session money events there name the game code ``round_id``. The current code must
open it, verify it offline, rebuild every history and round from it, and agree with the
balances the old code recorded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from audit_cli.main import main as audit_cli
from audit_cli.rounds import check_round, player_history
from audit_cli.rows import read_rows
from audit_cli.verify import verify
from ledger import envelope
from ledger.accounts import GameSession
from ledger.bootstrap import bootstrap
from ledger.contracts import SESSION_ROUND_CLOSED, SESSION_STAKE_DEBITED
from ledger.keys import load_public_keys
from ledger.settings import Settings

FIXTURE = Path(__file__).parent.parent / "fixtures" / "legacy_log_v1"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    """A copy of the fixture (the test writes checkpoints on close; the fixture stays)."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    return data


def _keys(data: Path) -> dict[str, object]:
    return dict(load_public_keys(json.loads((data / "keys" / "keyring.json").read_text())))


def test_a_legacy_log_verifies_offline_with_audit_cli(legacy: Path) -> None:
    db = str(legacy / "casino.sqlite")
    # A legacy log has no genesis yet: only the keyring beside it can vouch for its keys.
    assert (
        audit_cli(["verify", "--db", db, "--jobs", "1", "--balances", "--trust-local-keyring"]) == 0
    )
    report = verify(read_rows(db), _keys(legacy))  # type: ignore[arg-type]
    assert report.ok, [f.message for f in report.findings]
    assert report.checkpoints >= 3


def test_a_legacy_log_replays_every_round_from_its_seed(legacy: Path) -> None:
    db = str(legacy / "casino.sqlite")
    for name, expected in EXPECTED["rounds"].items():
        report = check_round(db, expected["code"])
        assert report.ok, (name, report.problems)
        assert report.status == expected["status"], name
        assert audit_cli(["round", expected["code"], "--db", db, "--json"]) == 0


def test_a_legacy_log_opens_with_the_recorded_balances_and_histories(legacy: Path) -> None:
    app = bootstrap(Settings(data_dir=legacy))
    try:
        assert app.account_balance("alice") == EXPECTED["account_balance"]
        assert app.session_balance(EXPECTED["open_session"]) == EXPECTED["open_session_balance"]
        assert app.get_session(EXPECTED["closed_session"]).closed
        for name, expected in EXPECTED["rounds"].items():
            rnd = app.find_round(expected["code"])
            got = {
                "code": rnd.code,
                "game": rnd.game,
                "status": rnd.status,
                "staked": rnd.staked,
                "payout": rnd.payout,
                "outcome": rnd.outcome,
            }
            assert got == expected, name
        live = app.history.account_history("alice")
        rebuilt = list(reversed(player_history(str(legacy / "casino.sqlite"), "alice")))
        codes = {r["code"] for r in EXPECTED["rounds"].values()}
        assert codes <= {r["code"] for r in live}
        assert [r["code"] for r in live] == [r["code"] for r in rebuilt]
        # The open Red Dog round of the open session can still be played to its end.
        result = app.red_dog_see("legacy-see", EXPECTED["open_session"])
        assert result.status == "settled"
    finally:
        app.close()
    db = str(legacy / "casino.sqlite")
    assert audit_cli(["verify", "--db", db, "--jobs", "1", "--trust-local-keyring"]) == 0


def test_legacy_session_events_name_round_id_and_read_as_game_code(legacy: Path) -> None:
    """The rename is an upcast: old rows keep ``round_id`` byte for byte; the current
    event class reads them as ``game_code``; new rows are written with class version 2."""
    db = str(legacy / "casino.sqlite")
    stake_rows = [r for r in read_rows(db) if r.topic == SESSION_STAKE_DEBITED]
    old = json.loads(envelope.decode(stake_rows[0].state).payload)
    assert "round_id" in old and "game_code" not in old and "class_version" not in old

    app = bootstrap(Settings(data_dir=legacy))
    try:
        session = app.get_session(EXPECTED["open_session"])
        assert session.open_round is not None and session.open_round.startswith("RD-")
        events = app.events.get(session.id)
        staked = [e for e in events if isinstance(e, GameSession.StakeDebited)]
        assert staked and all(e.game_code.startswith("RD-") for e in staked)
        app.red_dog_see("legacy-see", EXPECTED["open_session"])
    finally:
        app.close()
    new = [r for r in read_rows(db) if r.topic == SESSION_ROUND_CLOSED][-1]
    doc = json.loads(envelope.decode(new.state).payload)
    assert doc["class_version"] == 2 and doc["game_code"].startswith("RD-")
    assert "round_id" not in doc
