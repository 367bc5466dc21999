"""The store signs each save once (format 3), keeps the key history format 2, reads and
verifies logs that mix the formats, and every changed byte of a format 3 row is caught by
the server and by ``audit-cli verify``."""

from __future__ import annotations

from collections import defaultdict

import pytest

from audit_cli.main import main as audit_main
from audit_cli.rows import read_rows
from audit_cli.verify import verify_db
from ledger import envelope
from ledger.casino import Casino
from ledger.errors import TamperDetected
from ledger.store import SigningEventStore
from tests.conftest import Store


def _play(app: Casino, tag: str) -> None:
    app.open_account(f"{tag}-a", f"p-{tag}", "EUR")
    app.deposit(f"{tag}-d", f"p-{tag}", 1_000)
    app.withdraw(f"{tag}-w", f"p-{tag}", 100)


def test_a_save_is_one_signature_and_the_key_history_stays_format_2(store: Store) -> None:
    app = store.open()
    _play(app, "ann")
    genesis = app.key_history.genesis_fingerprint
    app.close()
    rows = list(read_rows(store.db))
    by_signature: dict[bytes, list[str]] = defaultdict(list)
    for row in rows:
        env = envelope.decode(row.state)
        if row.topic in envelope.TRUST_TOPICS:
            assert env.format == 2, row.topic
            continue
        assert env.format == 3, row.topic
        by_signature[env.signature].append(row.topic)
    # A deposit saves the account's event and the request's record under one signature.
    assert any(
        "croupier/account/deposited@1" in topics and len(topics) > 1
        for topics in by_signature.values()
    ), by_signature
    assert audit_main(["verify", "--db", store.db, "--pin", genesis, "--balances"]) == 0


def test_a_log_of_both_formats_replays_and_verifies(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SigningEventStore, "sign_each_event", True)  # a server before format 3
    app = store.open()
    _play(app, "old")
    app.seal()
    genesis = app.key_history.genesis_fingerprint
    app.close()
    assert {envelope.decode(r.state).format for r in read_rows(store.db)} == {2}
    monkeypatch.setattr(SigningEventStore, "sign_each_event", False)
    app = store.open()
    assert app.account_balance("p-old") == 900  # format 2 rows read back, verified
    _play(app, "new")
    app.deposit("old-d2", "p-old", 50)  # format 3 rows chained onto format 2 ones
    app.seal()
    app.close()
    assert {envelope.decode(r.state).format for r in read_rows(store.db)} == {2, 3}
    fresh = store.open()
    assert (fresh.account_balance("p-old"), fresh.account_balance("p-new")) == (950, 900)
    for jobs in (1, 2):
        report = verify_db(store.db, None, jobs=jobs, pin=genesis)
        assert report.ok, report.findings
    assert audit_main(["verify", "--db", store.db, "--pin", genesis, "--balances"]) == 0


def _deposit_row(store: Store) -> tuple[str, int, bytes]:
    (row,) = [
        r
        for r in read_rows(store.db)
        if r.topic == "croupier/account/deposited@1" and r.originator_id
    ][:1]
    return row.originator_id, row.version, row.state


@pytest.mark.parametrize("part", ["path", "place", "signature", "payload"])
def test_a_changed_byte_of_a_format_3_row_is_caught(store: Store, part: str) -> None:
    app = store.open()
    _play(app, "ann")
    app.seal()
    genesis = app.key_history.genesis_fingerprint
    app.close()
    oid, version, state = _deposit_row(store)
    env = envelope.decode(state)
    assert env.format == 3 and len(env.batch) > 9  # the row has a path: its batch has others
    head = len(state) - len(env.payload) - len(env.batch) - 64
    offset = {
        "signature": head + 10,
        "place": head + 64 + 7,  # the batch's size
        "path": head + 64 + 9 + 3,
        "payload": len(state) - 3,
    }[part]
    bad = bytearray(state)
    bad[offset] ^= 0x01
    conn = store.connect()
    ph = "?" if store.kind == "sqlite" else "%s"
    key = oid.replace("-", "") if store.kind == "sqlite" else oid
    if store.kind == "sqlite":
        conn.execute("DROP TRIGGER IF EXISTS stored_events_no_update")
    else:
        conn.execute(f"ALTER TABLE {store.table} DISABLE TRIGGER USER")
    conn.execute(
        f"UPDATE {store.table} SET state = {ph} WHERE originator_id = {ph} "
        f"AND originator_version = {ph}",
        (bytes(bad), key, version),
    )
    conn.close()
    report = verify_db(store.db, None, jobs=1, pin=genesis)
    assert not report.ok
    assert {f.check for f in report.findings} & {"signature", "envelope"}, report.findings
    assert audit_main(["verify", "--db", store.db, "--pin", genesis]) != 0
    with pytest.raises(TamperDetected):
        store.open().account_balance("p-ann")


def test_a_save_longer_than_a_batch_is_signed_in_runs(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SigningEventStore, "batch_leaves", 2)
    app = store.open()
    _play(app, "ann")
    app.seal()
    genesis = app.key_history.genesis_fingerprint
    app.close()
    shared: dict[bytes, int] = defaultdict(int)
    for row in read_rows(store.db):
        env = envelope.decode(row.state)
        if env.format == 3:
            shared[env.signature] += 1
            assert envelope.batch_place(env.batch)[1] <= 2
    assert max(shared.values()) == 2
    assert audit_main(["verify", "--db", store.db, "--pin", genesis, "--balances"]) == 0
