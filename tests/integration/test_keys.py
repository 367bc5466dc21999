"""Keys: generated on first run with 0600 files; rotation keeps old rows verifiable;
production keys come from the environment; audit-cli keys exports fingerprints."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit_cli.main import main as audit_main
from audit_cli.rows import read_rows
from audit_cli.verify import verify
from ledger.bootstrap import bootstrap
from ledger.keys import Keyring, KeyringError, load_public_keys
from ledger.settings import Settings


def test_first_run_generates_signing_and_sealing_keys_readable_only_by_owner(
    tmp_path: Path,
) -> None:
    app = bootstrap(Settings(data_dir=tmp_path))
    app.close()
    keys = tmp_path / "keys"
    secrets = list(keys.glob("signing-*.pem")) + list(keys.glob("sealing-*.key"))
    assert len(secrets) == 2
    for path in secrets:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    ring = Keyring.open_dir(keys)
    assert ring.sealing_key != ring.signing_key.private_bytes_raw()


def test_second_run_reuses_the_same_keys(tmp_path: Path) -> None:
    first = Keyring.open_dir(tmp_path / "keys")
    second = Keyring.open_dir(tmp_path / "keys")
    assert first.signing_kid == second.signing_kid
    assert first.sealing_key == second.sealing_key


def test_key_generation_can_be_refused_in_production(tmp_path: Path) -> None:
    with pytest.raises(KeyringError):
        Settings(data_dir=tmp_path, generate_keys=False).keyring()


def test_rotation_keeps_rows_signed_before_it_verifiable(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    app = bootstrap(settings)
    app.open_account("a", "alice", "EUR")
    app.deposit("b", "alice", 100)
    app.close()
    ring = settings.keyring()
    old = ring.signing_kid
    new = ring.rotate(settings.key_directory)
    assert new != old
    app = bootstrap(settings)
    assert app.keyring.signing_kid == new
    app.deposit("c", "alice", 50)  # reads rows signed with the old key, writes with the new
    assert app.account_balance("alice") == 150
    app.close()
    public = load_public_keys(json.loads((tmp_path / "keys" / "keyring.json").read_text()))
    assert {old, new} <= set(public)
    report = verify(read_rows(str(tmp_path / "casino.sqlite")), public, jobs=1)
    assert report.ok, report.findings
    # Without the retired key, the old rows no longer verify: the keyring matters.
    only_new = {new: public[new]}
    assert not verify(read_rows(str(tmp_path / "casino.sqlite")), only_new, jobs=1).ok


def test_keys_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sk = Ed25519PrivateKey.generate()
    pem = sk.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    monkeypatch.setenv("CROUPIER_SIGNING_KEY", pem)
    monkeypatch.setenv("CROUPIER_SEALING_KEY", "ab" * 32)
    ring = Settings(data_dir=tmp_path).keyring()
    assert ring.signing_key.public_key().public_bytes_raw() == sk.public_key().public_bytes_raw()
    assert ring.sealing_key == bytes.fromhex("ab" * 32)
    assert not (tmp_path / "keys").exists()  # nothing generated


def test_a_signing_key_without_a_sealing_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROUPIER_SIGNING_KEY", "11" * 32)
    with pytest.raises(KeyringError):
        Settings(data_dir=tmp_path).keyring()


def test_audit_cli_keys_exports_public_keys_with_fingerprints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap(Settings(data_dir=tmp_path)).close()
    out = tmp_path / "public.json"
    assert audit_main(["keys", "--data-dir", str(tmp_path), "--out", str(out), "--json"]) == 0
    doc = json.loads(out.read_text())
    assert "sealing_current" not in doc
    (entry,) = doc["keys"]
    assert entry["fingerprint"].startswith("SHA256:") and entry["fingerprint"][7:23] == entry["kid"]
    assert "PRIVATE" not in out.read_text()
    load_public_keys(doc)
