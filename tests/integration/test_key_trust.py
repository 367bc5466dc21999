"""Key trust is signed history in the log: a forged key in keyring.json, a retired key used
after its retirement, a row from another log sharing the key, a keyring that disagrees
with the log, and a log written before key trust existed (issue 11, attacks 1 and 5)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit_cli.main import main as audit_main
from audit_cli.rows import read_rows
from audit_cli.verify import Report, verify, verify_db
from ledger import envelope, trust
from ledger.bootstrap import bootstrap
from ledger.casino import Casino
from ledger.errors import TamperDetected
from ledger.keys import Keyring, KeyringError, key_id
from ledger.settings import Settings
from tests.conftest import Store

FIXTURE = Path(__file__).parent.parent / "fixtures" / "legacy-v01"


def checks(report: Report) -> set[str]:
    return {f.check for f in report.findings}


def _insert(store_db: Any, table: str, oid: str, version: int, topic: str, state: bytes) -> None:
    conn = store_db()
    ph = "?" if table == "stored_events" else "%s"
    conn.execute(
        f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
        f"VALUES ({ph}, {ph}, {ph}, {ph})",
        (oid, version, topic, state),
    )
    conn.close()


def _hash_of(db: str, oid: str, version: int, log_id: bytes) -> bytes:
    (row,) = [r for r in read_rows(db) if r.originator_id == oid and r.version == version]
    return envelope.hash_of(oid, version, row.topic, envelope.decode(row.state), log_id)


def forge_deposit(
    db: str, connect: Any, table: str, key: Ed25519PrivateKey, kid: str, log_id: bytes
) -> int:
    """Append to the newest account a chained ``Deposited +1,000,000`` signed by ``key``;
    returns its version."""
    deposits = [r for r in read_rows(db) if r.topic == "croupier/account/deposited@1"]
    newest = deposits[-1]
    last = max(r.version for r in read_rows(db) if r.originator_id == newest.originator_id)
    doc = json.loads(envelope.decode(newest.state).payload)
    doc["amount"] = 1_000_000
    doc["balance"] = doc["balance"] + 1_000_000
    prev = _hash_of(db, newest.originator_id, last, log_id)
    state, _ = envelope.seal(
        key,
        kid,
        newest.originator_id,
        last + 1,
        newest.topic,
        json.dumps(doc).encode(),
        prev,
        log_id,
    )
    oid = (
        newest.originator_id.replace("-", "") if table == "stored_events" else newest.originator_id
    )
    _insert(connect, table, oid, last + 1, newest.topic, state)
    return last + 1


def _sqlite(path: Path) -> Any:
    return lambda: sqlite3.connect(path, isolation_level=None)


def _play(app: Casino, tag: str) -> None:
    app.open_account(f"{tag}-a", f"p-{tag}", "EUR")
    app.deposit(f"{tag}-d", f"p-{tag}", 1_000)
    app.withdraw(f"{tag}-w", f"p-{tag}", 100)


def test_a_key_added_to_keyring_json_as_retired_signs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(data_dir=tmp_path)
    app = bootstrap(settings)
    _play(app, "alice")
    app.seal()
    log_id, genesis_fp = app.key_history.log_id, app.key_history.genesis_fingerprint
    app.close()
    db = str(tmp_path / "casino.sqlite")
    # The attack: a fresh key, appended to keyring.json as "retired", signs a deposit.
    fake = Ed25519PrivateKey.generate()
    index = tmp_path / "keys" / "keyring.json"
    doc = json.loads(index.read_text())
    doc["keys"].append(
        {
            "kid": key_id(fake.public_key()),
            "algorithm": "Ed25519",
            "public_key": fake.public_key().public_bytes_raw().hex(),
            "fingerprint": "SHA256:x",
            "created": "",
            "status": "retired",
        }
    )
    index.write_text(json.dumps(doc))
    forge_deposit(
        db,
        _sqlite(tmp_path / "casino.sqlite"),
        "stored_events",
        fake,
        key_id(fake.public_key()),
        log_id,
    )
    # verify with no --keys (the keyring beside the database, fake key included): caught.
    for extra in ([], ["--trust-local-keyring"], ["--pin", "SHA256:" + genesis_fp]):
        assert audit_main(["verify", "--db", db, "--json", *extra]) == 1
        out = json.loads(capsys.readouterr().out)
        # Unpinned, the fake key verifies its signature but is no key of the log's history.
        found = {f["check"] for f in out["findings"]}
        assert found & {"unknown-key", "key-not-valid"}, out["findings"]
    # The auditor's procedure: `audit-cli keys` still lists the fake key, but prints the
    # genesis fingerprint to pin, and verify with that pin alone trusts only the log.
    assert audit_main(["keys", "--data-dir", str(tmp_path), "--json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["genesis"]["fingerprint"] == "SHA256:" + genesis_fp
    # The restarted server refuses the forged row: no balance shown, no withdrawal paid,
    # no checkpoint sealed over it.
    app = bootstrap(settings)
    with pytest.raises(TamperDetected):
        app.account_balance("p-alice")
    with pytest.raises(TamperDetected):
        app.withdraw("steal", "p-alice", 1_000_000)
    with pytest.raises(TamperDetected):
        app.seal()
    app._closed = True  # close without the final seal, which must refuse too
    super(Casino, app).close()


def test_two_rotations_verify_with_only_the_pinned_genesis_fingerprint(store: Store) -> None:
    app = store.open()
    genesis = app.key_history.genesis_fingerprint
    first = app.keyring.signing_kid
    _play(app, "one")
    second = trust.rotate(app)
    _play(app, "two")
    third = trust.rotate(app)
    _play(app, "three")
    app.seal()
    assert len({first, second, third}) == 3
    for report in (
        verify(read_rows(store.db), None, jobs=1, pin=genesis),
        verify_db(store.db, None, jobs=2, pin=genesis),
    ):
        assert report.ok, report.findings
        assert report.trust == "pinned"
        assert [k.kid for k in report.key_history] == [first, second, third]
    assert audit_main(["verify", "--db", store.db, "--pin", genesis, "--json"]) == 0
    # Another pin (another deployment's genesis): refused.
    other = Keyring.generate()
    from ledger.keys import fingerprint

    wrong = verify(
        read_rows(store.db), None, jobs=1, pin=fingerprint(other.signing_key.public_key())
    )
    assert "trust-pin" in checks(wrong)


def test_a_row_signed_by_the_first_key_after_its_retirement_is_caught(store: Store) -> None:
    app = store.open()
    _play(app, "one")
    old_key, old_kid = app.keyring.signing_key, app.keyring.signing_kid
    trust.rotate(app)
    trust.rotate(app)
    _play(app, "two")
    app.seal()
    log_id, genesis = app.key_history.log_id, app.key_history.genesis_fingerprint
    forge_deposit(store.db, store.connect, store.table, old_key, old_kid, log_id)
    report = verify(read_rows(store.db), None, jobs=1, pin=genesis)
    assert "key-not-valid" in checks(report), report.findings
    assert checks(report) <= {"key-not-valid", "books-request", "books-sum", "books-balance"}
    assert "key-not-valid" in checks(verify_db(store.db, None, jobs=2, pin=genesis))
    with pytest.raises(TamperDetected):  # the sealer never checkpoints it
        store.open().seal()


def test_a_request_record_from_another_log_sharing_the_key_never_verifies(
    tmp_path: Path,
) -> None:
    ring = Keyring.generate()  # one signing key, two deployments
    here, there = tmp_path / "here", tmp_path / "there"
    a = bootstrap(Settings(data_dir=here), keyring=ring)
    b = bootstrap(Settings(data_dir=there), keyring=ring)
    for app in (a, b):
        app.open_account("o", "alice", "EUR")
        app.deposit("d", "alice", 5_000)
    b.withdraw("w1", "alice", 4_000)  # never made here
    b.close()
    (copied,) = [
        r
        for r in raw_rows_of(there)
        if r[3] == "croupier/request/accepted@1" and b"withdraw" in r[4]
    ]
    _insert(
        _sqlite(here / "casino.sqlite"), "stored_events", copied[1], copied[2], copied[3], copied[4]
    )
    with pytest.raises(TamperDetected):
        a.withdraw("w1", "alice", 4_000)  # would answer from the copied record
    a._closed = True
    super(Casino, a).close()
    report = verify(read_rows(str(here / "casino.sqlite")), ring.public_keys, jobs=1)
    assert "signature" in checks(report)


def raw_rows_of(data_dir: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(data_dir / "casino.sqlite")
    try:
        return list(
            conn.execute(
                "SELECT rowid, originator_id, originator_version, topic, state FROM stored_events"
            )
        )
    finally:
        conn.close()


def test_the_server_refuses_to_start_on_a_keyring_that_disagrees_with_the_log(
    tmp_path: Path,
) -> None:
    bootstrap(Settings(data_dir=tmp_path)).close()
    shutil.rmtree(tmp_path / "keys")  # another keyring: the log's key is not in it
    Keyring.open_dir(tmp_path / "keys")
    with pytest.raises(KeyringError, match="disagrees with the log"):
        bootstrap(Settings(data_dir=tmp_path))


def test_a_restart_after_croupier_rotate_keys_records_the_rotation_signed_by_the_old_key(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path)
    app = bootstrap(settings)
    genesis = app.key_history.genesis_fingerprint
    app.close()
    ring = settings.keyring()
    old = ring.signing_kid
    new = ring.rotate(settings.key_directory)
    app = bootstrap(settings)
    assert [kid for _, kid, _ in app.key_history.eras] == [old, new]
    _play(app, "after")
    app.close()
    report = verify(read_rows(str(tmp_path / "casino.sqlite")), None, jobs=1, pin=genesis)
    assert report.ok, report.findings


def _legacy_copy(tmp_path: Path) -> Settings:
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    return Settings(data_dir=tmp_path)


def test_a_log_written_before_key_trust_gets_a_genesis_that_pins_its_prefix(
    tmp_path: Path,
) -> None:
    settings = _legacy_copy(tmp_path)
    db = str(tmp_path / "casino.sqlite")
    local = settings.keyring().public_keys
    before = verify_db(db, local, jobs=1)
    assert before.ok and before.trust == "no-genesis", before.findings
    app = bootstrap(settings)  # first start of new code on the old log
    legacy = app.key_history.legacy
    assert legacy is not None and legacy["tree_size"] == before.events
    _play(app, "new")
    app.close()
    genesis = app.key_history.genesis_fingerprint
    for jobs in (1, 2):
        report = verify_db(db, None, jobs=jobs, pin=genesis)
        assert report.ok, report.findings
        assert report.trust == "pinned" and report.events > before.events
    assert audit_main(["verify", "--db", db, "--pin", genesis]) == 0


def test_no_format_1_row_is_accepted_after_the_genesis(tmp_path: Path) -> None:
    settings = _legacy_copy(tmp_path)
    ring = settings.keyring()  # the attacker holds the legacy key
    app = bootstrap(settings)
    genesis = app.key_history.genesis_fingerprint
    app.close()
    db = str(tmp_path / "casino.sqlite")
    deposit = [r for r in read_rows(db) if r.topic == "croupier/account/deposited@1"][-1]
    last = max(r.version for r in read_rows(db) if r.originator_id == deposit.originator_id)
    (prev_row,) = [
        r for r in read_rows(db) if r.originator_id == deposit.originator_id and r.version == last
    ]
    pe = envelope.decode(prev_row.state)
    prev = envelope.hash_of(prev_row.originator_id, last, prev_row.topic, pe)
    state, _ = envelope.seal(  # format 1: no log id
        ring.signing_key,
        ring.signing_kid,
        deposit.originator_id,
        last + 1,
        deposit.topic,
        envelope.decode(deposit.state).payload,
        prev,
    )
    _insert(
        _sqlite(tmp_path / "casino.sqlite"),
        "stored_events",
        deposit.originator_id.replace("-", ""),
        last + 1,
        deposit.topic,
        state,
    )
    report = verify_db(db, None, jobs=1, pin=genesis)
    assert "legacy-after-genesis" in checks(report), report.findings
    app = bootstrap(settings)
    with pytest.raises(TamperDetected, match="format 1 row after"):
        app.seal()
    app._closed = True
    super(Casino, app).close()


def test_a_changed_legacy_row_breaks_the_pinned_prefix(tmp_path: Path) -> None:
    settings = _legacy_copy(tmp_path)
    app = bootstrap(settings)
    genesis = app.key_history.genesis_fingerprint
    app.close()
    conn = sqlite3.connect(tmp_path / "casino.sqlite", isolation_level=None)
    conn.execute("DROP TRIGGER stored_events_no_delete")
    conn.execute("DELETE FROM stored_events WHERE rowid = 1")  # the account's opening
    conn.close()
    report = verify_db(str(tmp_path / "casino.sqlite"), None, jobs=1, pin=genesis)
    assert "trust-legacy" in checks(report), report.findings


def test_verify_without_a_pin_says_so_and_fails_unless_the_keyring_is_trusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = bootstrap(Settings(data_dir=tmp_path))
    _play(app, "x")
    app.close()
    db = str(tmp_path / "casino.sqlite")
    assert audit_main(["verify", "--db", db]) == 1
    assert "UNPINNED" in capsys.readouterr().out
    assert audit_main(["verify", "--db", db, "--trust-local-keyring"]) == 0
    assert "UNPINNED" in capsys.readouterr().out
    keys_out = tmp_path / "public.json"
    assert audit_main(["keys", "--data-dir", str(tmp_path), "--out", str(keys_out)]) == 0
    capsys.readouterr()
    assert audit_main(["verify", "--db", db, "--pin", str(keys_out)]) == 0  # pin from the file
    assert "UNPINNED" not in capsys.readouterr().out
