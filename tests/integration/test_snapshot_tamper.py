"""Tamper suite for snapshots: edit the snapshot table directly; the server must refuse
the snapshot on load (the events replayed, the live state back) and ``audit-cli verify``
must name it. A deleted snapshot is harmless: nothing to report, the events replay."""

from __future__ import annotations

import functools
from typing import Any
from uuid import UUID

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit_cli.checker import Report
from audit_cli.main import main as audit_main
from audit_cli.rows import read_rows, read_snapshot_rows
from audit_cli.verify import verify as verify_all
from audit_cli.verify import verify_db as verify_db_all
from ledger.keys import fingerprint, key_id
from ledger.store import VerifyingMapper
from tests.conftest import Store
from tests.helpers import open_session
from tests.integration.snapshot_helpers import (
    RawSnapshots,
    alter_balance,
    resign,
    state,
)
from tests.integration.snapshot_helpers import refused as refused_by
from tests.money import credit_win, stake

# The log here is written straight onto sessions (stakes and wins with no round): these
# tests are about rows, chains, checkpoints and snapshots, so the rounds are not re-run
# (re-execution rightly reports every such movement: tests/integration/test_reexec.py).
verify = functools.partial(verify_all, reexecute=False)
verify_db = functools.partial(verify_db_all, reexecute=False)

EVERY = 5


class Log:
    """Two players' sessions with snapshots (every 5 events); their live states."""

    def __init__(self, store: Store) -> None:
        app = store.open(snapshot_every=EVERY)
        self.ann = open_session(app, "ann", buy_in=5_000)
        self.bob = open_session(app, "bob", buy_in=3_000)
        for i in range(12):
            stake(app, f"a{i}", self.ann, f"ra{i}", 100)
            stake(app, f"b{i}", self.bob, f"rb{i}", 50)
            if i % 4 == 0:
                credit_win(app, f"w{i}", self.ann, f"ra{i}", 300)
        self.live = {sid: state(app.get_session(sid)) for sid in (self.ann, self.bob)}
        assert isinstance(app.mapper, VerifyingMapper) and app.mapper.log_id is not None
        self.log_id: bytes = app.mapper.log_id
        app.close()


@pytest.fixture
def log(store: Store) -> Log:
    return Log(store)


@pytest.fixture
def raw(store: Store, log: Log) -> Any:
    assert checks(run_verify(store)) == set()
    r = RawSnapshots(store)
    yield r
    r.close()


def run_verify(store: Store) -> Report:
    snapshots = read_snapshot_rows(store.db)
    return verify(read_rows(store.db), store.keyring.public_keys, jobs=1, snapshots=snapshots)


def checks(report: Report) -> set[str]:
    return {f.check for f in report.findings}


def loads_live_state(store: Store, log: Log, refused: int) -> None:
    """A restarted server loads every session with its live state, having refused
    ``refused`` snapshots."""
    app = store.open(snapshot_every=EVERY)
    for sid in (log.ann, log.bob):
        assert state(app.get_session(sid)) == log.live[sid]
    assert refused_by(app) == refused


def test_untouched_snapshots_verify_on_one_pass_and_in_parallel(store: Store, log: Log) -> None:
    report = run_verify(store)
    assert report.ok, report.findings
    assert report.snapshots == len(read_snapshot_rows(store.db)) == 5  # ann v5-15, bob v5-10
    parallel = verify_db(store.db, store.keyring.public_keys, jobs=2)
    assert parallel.ok, parallel.findings
    assert parallel.snapshots == report.snapshots
    loads_live_state(store, log, refused=0)


def test_altered_snapshot_state_is_refused_and_reported(
    store: Store, log: Log, raw: RawSnapshots
) -> None:
    version, sealed = raw.newest(log.ann)
    raw.set_state(log.ann, version, alter_balance(sealed, 1_000_000))
    report = run_verify(store)
    assert checks(report) == {"snapshot-signature"}
    assert [(f.originator_id, f.version) for f in report.findings] == [(log.ann, version)]
    loads_live_state(store, log, refused=1)


def test_altered_state_resigned_with_the_log_key_is_caught_by_the_replay(
    store: Store, log: Log, raw: RawSnapshots
) -> None:
    # An insider holding a copy of the signing key can sign a snapshot the server would
    # accept; only verify's replay tells (README: the residual risk).
    version, sealed = raw.newest(log.bob)
    summarised = raw.event_hash(log.bob, version, log.log_id)
    altered = alter_balance(sealed, 999)
    kr = store.keyring
    key, kid = kr.signing_key, kr.signing_kid
    forged = resign(altered, key, kid, log.bob, version, summarised, log.log_id)
    raw.set_state(log.bob, version, forged)
    report = run_verify(store)
    assert checks(report) == {"snapshot-state"}
    assert report.findings[0].originator_id == log.bob
    assert verify_db(store.db, store.keyring.public_keys, jobs=2).findings == report.findings


def test_snapshots_swapped_between_aggregates_are_refused_and_reported(
    store: Store, log: Log, raw: RawSnapshots
) -> None:
    version = raw.newest(log.bob)[0]
    ann_state = dict(raw.versions(log.ann))[version]
    bob_state = dict(raw.versions(log.bob))[version]
    raw.set_state(log.ann, version, bob_state)
    raw.set_state(log.bob, version, ann_state)
    report = run_verify(store)
    assert checks(report) == {"snapshot-link"}
    assert {f.originator_id for f in report.findings} == {log.ann, log.bob}
    loads_live_state(store, log, refused=2 if version == raw.newest(log.ann)[0] else 1)


def test_a_replayed_old_snapshot_is_refused_and_reported(
    store: Store, log: Log, raw: RawSnapshots
) -> None:
    (old, old_state), *_ = raw.versions(log.ann)
    newest = raw.newest(log.ann)[0]
    assert newest > old
    raw.delete(log.ann, newest)
    raw.insert(log.ann, newest, "croupier/snapshot@1", old_state)  # the old state, as new
    report = run_verify(store)
    assert checks(report) == {"snapshot-link"}
    loads_live_state(store, log, refused=1)


def test_a_snapshot_forged_with_a_key_the_log_does_not_name_is_refused_and_reported(
    store: Store, log: Log, raw: RawSnapshots
) -> None:
    version, sealed = raw.newest(log.ann)
    summarised = raw.event_hash(log.ann, version, log.log_id)
    mallory = Ed25519PrivateKey.generate()
    kid = key_id(mallory.public_key())
    forged = resign(
        alter_balance(sealed, 1_000_000), mallory, kid, log.ann, version, summarised, log.log_id
    )
    raw.set_state(log.ann, version, forged)
    report = run_verify(store)
    assert checks(report) == {"snapshot-key"}
    loads_live_state(store, log, refused=1)


def test_a_snapshot_forged_under_the_log_key_id_with_another_key_is_refused(
    store: Store, log: Log, raw: RawSnapshots
) -> None:
    version, sealed = raw.newest(log.ann)
    summarised = raw.event_hash(log.ann, version, log.log_id)
    kid = store.keyring.signing_kid
    forged = resign(
        alter_balance(sealed, 1), Ed25519PrivateKey.generate(), kid, log.ann, version, summarised,
        log.log_id,
    )  # fmt: skip
    raw.set_state(log.ann, version, forged)
    assert checks(run_verify(store)) == {"snapshot-signature"}
    loads_live_state(store, log, refused=1)


def test_an_orphan_snapshot_is_reported(store: Store, log: Log, raw: RawSnapshots) -> None:
    # A well-signed snapshot for a version the log does not have, and one of an aggregate
    # the log has never seen.
    version, sealed = raw.newest(log.ann)
    raw.insert(log.ann, version + 1_000, "croupier/snapshot@1", sealed)
    raw.insert(UUID(int=7), version, "croupier/snapshot@1", sealed)
    report = run_verify(store)
    assert checks(report) == {"snapshot-orphan"}
    assert len(report.findings) == 2
    loads_live_state(store, log, refused=1)  # ann's newest is the orphan: refused


def test_a_deleted_snapshot_is_harmless(store: Store, log: Log, raw: RawSnapshots) -> None:
    raw.delete(log.ann, raw.newest(log.ann)[0])
    raw.delete(log.bob)
    assert run_verify(store).ok
    loads_live_state(store, log, refused=0)


def test_a_snapshot_with_a_non_canonical_id_is_a_row_finding(sqlite_store: Store) -> None:
    # SQLite only: PostgreSQL's uuid column has one spelling.
    log = Log(sqlite_store)
    raw = RawSnapshots(sqlite_store)
    version, sealed = raw.newest(log.ann)
    raw.q("INSERT INTO {t} VALUES (?, ?, ?, ?)", UUID(log.ann).hex.upper(), version, "x", sealed)
    raw.close()
    assert checks(run_verify(sqlite_store)) == {"snapshot-row"}
    loads_live_state(sqlite_store, log, refused=0)


def test_audit_cli_verify_exits_1_on_an_altered_snapshot(
    store: Store, log: Log, raw: RawSnapshots, capsys: pytest.CaptureFixture[str]
) -> None:
    pin = "SHA256:" + fingerprint(store.keyring.public_keys[store.keyring.signing_kid])
    assert audit_main(["verify", "--no-reexecute", "--db", store.db, "--pin", pin, "--json"]) == 0
    version, sealed = raw.newest(log.bob)
    raw.set_state(log.bob, version, alter_balance(sealed, 5))
    capsys.readouterr()
    assert audit_main(["verify", "--no-reexecute", "--db", store.db, "--pin", pin, "--json"]) == 1
    assert '"snapshot-signature"' in capsys.readouterr().out
