"""Tamper suite: edit the database directly; ``audit-cli verify`` must name the damage.

Each test builds the same small log, checks that ``verify`` passes on it untouched, then
changes the stored rows the way an attacker with database access could (triggers disabled)
and expects the right finding.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import audit_cli.verify as verify_module
from audit_cli.chunk import ChunkChecker, ChunkSetup, summarise
from audit_cli.rows import is_sqlite, read_rows, read_snapshot_rows, read_trust_rows
from audit_cli.verify import Report
from audit_cli.verify import verify as verify_all
from audit_cli.verify import verify_db as verify_db_all
from ledger import envelope
from ledger.keys import key_id
from ledger.results import SessionOpened
from tests.conftest import Store
from tests.money import credit_win, refund, stake

# The log here is written straight onto sessions (stakes and wins with no round): these
# tests are about rows, chains, checkpoints and snapshots, so the rounds are not re-run
# (re-execution rightly reports every such movement: tests/integration/test_reexec.py).
verify = functools.partial(verify_all, reexecute=False)
verify_db = functools.partial(verify_db_all, reexecute=False)

TRUST = (envelope.GENESIS_TOPIC, envelope.ROTATED_TOPIC)


def build_log(store: Store) -> SessionOpened:
    app = store.open()
    app.open_account("a1", "alice", "EUR")
    app.deposit("a2", "alice", 10_000)
    app.open_account("b1", "bob", "EUR")
    app.deposit("b2", "bob", 5_000)
    s = app.open_session("a3", "alice", 2_000)
    for i in range(3):
        stake(app, f"st{i}", s.session_id, f"round-{i}", 100)
        if i % 2:
            credit_win(app, f"w{i}", s.session_id, f"round-{i}", 150)
    refund(app, "rf", s.session_id, "round-2", 1)
    app.seal()
    app.deposit("a4", "alice", 7)
    app.seal()
    app.close()
    return s


def rows(store: Store) -> list[Any]:
    return list(read_rows(store.db))


def run_verify(store: Store) -> Report:
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1)
    assert_same_in_chunks(store)
    return report


def assert_same_in_chunks(store: Store, chunk: int = 3) -> None:
    """``verify_db`` (workers or not) hands back a clean chunk as boundary facts and sums;
    with chunks of a few rows every tamper lands inside or at the edge of one: the report
    must be the row-by-row one."""
    keys = store.keyring.public_keys
    db = store.db
    serial = verify(  # what verify_db did before the workers summarised chunks
        read_rows(db),
        keys,
        jobs=1,
        check_gaps=is_sqlite(db),
        learned=verify_module.trust_candidates(read_trust_rows(db)),
        snapshots=read_snapshot_rows(db),
    )
    assert verify_db(db, keys, jobs=1).to_dict() == serial.to_dict()
    saved, verify_module.CHUNK = verify_module.CHUNK, chunk
    try:
        parallel = verify_db(store.db, keys, jobs=2)
    finally:
        verify_module.CHUNK = saved
    assert parallel.to_dict() == serial.to_dict()
    assert parallel.balances == serial.balances and parallel.players == serial.players


def checks(report: Report) -> set[str]:
    return {f.check for f in report.findings}


class Raw:
    """Direct SQL on the event table with the append-only triggers out of the way."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.conn = store.connect()
        if store.kind == "sqlite":
            self.conn.execute("DROP TRIGGER IF EXISTS stored_events_no_update")
            self.conn.execute("DROP TRIGGER IF EXISTS stored_events_no_delete")
            self.id_col, self.ph = "rowid", "?"
        else:
            self.conn.execute("SET session_replication_role = replica")
            self.id_col, self.ph = "notification_id", "%s"
        self.table = store.table

    def q(self, sql: str, *params: Any) -> list[Any]:
        sql = sql.replace("{t}", self.table).replace("{id}", self.id_col).replace("?", self.ph)
        cur = self.conn.execute(sql, params)
        try:
            return list(cur.fetchall())
        except Exception:  # statements without a result set
            return []

    def oid(self, value: Any) -> Any:
        return value

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def raw(store: Store) -> Any:
    build_log(store)
    assert run_verify(store).ok, run_verify(store).findings
    r = Raw(store)
    yield r
    r.close()


def _row_of(raw: Raw, topic_like: str, nth: int = 0) -> tuple[Any, ...]:
    found = raw.q(
        "SELECT {id}, originator_id, originator_version, topic, state FROM {t} "
        "WHERE topic LIKE ? ORDER BY {id}",
        topic_like,
    )
    return tuple(found[nth])


def test_untouched_log_verifies(store: Store) -> None:
    build_log(store)
    report = run_verify(store)
    assert report.ok, report.findings
    assert report.checkpoints >= 2 and report.events > 20


def test_flipped_byte_in_state_breaks_signature(store: Store, raw: Raw) -> None:
    n, _, _, _, state = _row_of(raw, "%stake-debited%")
    state = bytearray(state)
    state[-5] ^= 0x01
    raw.q("UPDATE {t} SET state = ? WHERE {id} = ?", bytes(state), n)
    report = run_verify(store)
    assert "signature" in checks(report)
    assert any(f.notification_id == n and f.check == "signature" for f in report.findings)


def test_changed_topic_breaks_signature(store: Store, raw: Raw) -> None:
    n, *_ = _row_of(raw, "%win-credited%")
    raw.q("UPDATE {t} SET topic = ? WHERE {id} = ?", "croupier/session/refunded@1", n)
    assert "signature" in checks(run_verify(store))


def test_event_moved_to_another_aggregate_is_caught(store: Store, raw: Raw) -> None:
    n, _, _, _, _ = _row_of(raw, "%deposited%", nth=2)
    other = _row_of(raw, "%request/accepted%")[1]
    raw.q("UPDATE {t} SET originator_id = ?, originator_version = 2 WHERE {id} = ?", other, n)
    found = checks(run_verify(store))
    assert "signature" in found and "chain-link" in found


def test_event_moved_to_another_version_is_caught(store: Store, raw: Raw) -> None:
    n, _, version, _, _ = _row_of(raw, "%stake-debited%", nth=1)
    raw.q("UPDATE {t} SET originator_version = ? WHERE {id} = ?", version + 100, n)
    assert {"signature", "chain-version"} <= checks(run_verify(store))


def test_deleted_middle_event_breaks_the_chain(store: Store, raw: Raw) -> None:
    n, *_ = _row_of(raw, "%stake-debited%", nth=1)
    raw.q("DELETE FROM {t} WHERE {id} = ?", n)
    found = checks(run_verify(store))
    assert "chain-version" in found and "checkpoint-root" in found


def test_deleted_newest_event_of_an_aggregate_is_caught_by_checkpoint(
    store: Store, raw: Raw
) -> None:
    # bob's account: its newest event is covered by both checkpoints; deleting it leaves
    # bob's chain intact, so only the checkpoints can tell.
    bob = _row_of(raw, "%account/deposited%", nth=1)
    newest = raw.q("SELECT max(originator_version) FROM {t} WHERE originator_id = ?", bob[1])[0][0]
    raw.q("DELETE FROM {t} WHERE originator_id = ? AND originator_version = ?", bob[1], newest)
    found = checks(run_verify(store))
    assert "checkpoint-root" in found
    assert "chain-version" not in found and "signature" not in found


def test_deleted_whole_aggregate_is_caught_by_checkpoint(store: Store, raw: Raw) -> None:
    req = _row_of(raw, "%request/accepted%", nth=3)
    raw.q("DELETE FROM {t} WHERE originator_id = ?", req[1])
    assert "checkpoint-root" in checks(run_verify(store))


def test_deleted_events_between_checkpoints_are_caught(store: Store, raw: Raw) -> None:
    cps = raw.q(
        "SELECT {id} FROM {t} WHERE topic = ? ORDER BY {id}", "croupier/checkpoint/sealed@1"
    )
    raw.q("DELETE FROM {t} WHERE {id} > ? AND {id} < ?", cps[0][0], cps[1][0])
    # The newer checkpoint covers more events than the log now holds (were there a later
    # checkpoint, its root over the shortened log would not match either).
    assert checks(run_verify(store)) & {"checkpoint-size", "checkpoint-root"}


def test_truncated_tail_is_caught_against_a_published_checkpoint(store: Store, raw: Raw) -> None:
    # Cutting the tail together with the checkpoints that cover it leaves a shorter log
    # that is consistent with itself: only a tree head published earlier can tell.
    newest = run_verify(store)
    anchor = newest.latest_head
    assert anchor is not None
    cps = raw.q(
        "SELECT {id} FROM {t} WHERE topic = ? ORDER BY {id}", "croupier/checkpoint/sealed@1"
    )
    raw.q("DELETE FROM {t} WHERE {id} > ?", cps[0][0])
    assert run_verify(store).ok  # self-consistent without the anchor...
    report = verify(read_rows(store.db), store.keyring.public_keys, jobs=1, anchor=anchor)
    assert "anchor" in checks(report)  # ...but not with it


def _forge(raw: Raw, store: Store, key: Ed25519PrivateKey, kid: str) -> None:
    """Append a deposit of 1,000,000 to alice, correctly chained, signed by ``key``."""
    _n, oid, _version, topic, state = _row_of(raw, "%account/deposited%", nth=0)
    newest = raw.q(
        "SELECT max(originator_version), max({id}) FROM {t} WHERE originator_id = ?", oid
    )[0]
    env = envelope.decode(bytes(state))
    doc = json.loads(env.payload)
    doc["amount"] = 1_000_000
    payload = json.dumps(doc).encode()
    # The right previous hash: recompute from the newest row of that aggregate.
    rows_of = [
        r
        for r in read_rows(store.db)
        if r.originator_id.replace("-", "") == str(oid).replace("-", "") and r.version == newest[0]
    ]
    r = rows_of[0]
    pe = envelope.decode(r.state)
    prev_hash = envelope.event_hash(
        envelope.signing_message(
            r.originator_id, r.version, r.topic, pe.payload, pe.prev_hash, pe.kid
        ),
        pe.signature,
    )
    sealed, _ = envelope.seal(key, kid, r.originator_id, newest[0] + 1, topic, payload, prev_hash)
    raw.q(
        "INSERT INTO {t} (originator_id, originator_version, topic, state) VALUES (?, ?, ?, ?)",
        oid,
        newest[0] + 1,
        topic,
        sealed,
    )


def test_forged_event_signed_with_another_key_is_caught(store: Store, raw: Raw) -> None:
    other = Ed25519PrivateKey.generate()
    _forge(raw, store, other, key_id(other.public_key()))
    assert "unknown-key" in checks(run_verify(store))


def test_forged_event_claiming_the_real_key_id_is_caught(store: Store, raw: Raw) -> None:
    other = Ed25519PrivateKey.generate()
    _forge(raw, store, other, store.keyring.signing_kid)
    assert "signature" in checks(run_verify(store))


def _swap_positions(raw: Raw, a: int, b: int) -> None:
    """Exchange the notification ids (log positions) of two rows."""
    spare = raw.q("SELECT max({id}) FROM {t}")[0][0] + 1000
    raw.q("UPDATE {t} SET {id} = ? WHERE {id} = ?", spare, a)
    raw.q("UPDATE {t} SET {id} = ? WHERE {id} = ?", a, b)
    raw.q("UPDATE {t} SET {id} = ? WHERE {id} = ?", b, spare)


def test_two_swapped_events_are_caught(store: Store, raw: Raw) -> None:
    a = _row_of(raw, "%stake-debited%", nth=0)
    b = _row_of(raw, "%deposited%", nth=1)
    _swap_positions(raw, a[0], b[0])
    assert "checkpoint-root" in checks(run_verify(store))


def test_swapped_events_of_one_aggregate_break_its_chain(store: Store, raw: Raw) -> None:
    a = _row_of(raw, "%stake-debited%", nth=0)
    b = _row_of(raw, "%stake-debited%", nth=1)
    _swap_positions(raw, a[0], b[0])
    assert "chain-version" in checks(run_verify(store))


def test_edited_checkpoint_is_caught(store: Store, raw: Raw) -> None:
    n, _oid, _version, _topic, state = _row_of(raw, "%checkpoint/sealed%", nth=0)
    env = envelope.decode(bytes(state))
    doc = json.loads(env.payload)
    doc["root_hash"] = "00" * 32
    forged = envelope.encode(
        envelope.Envelope(env.kid, env.prev_hash, env.signature, json.dumps(doc).encode())
    )
    raw.q("UPDATE {t} SET state = ? WHERE {id} = ?", forged, n)
    assert "signature" in checks(run_verify(store))


def test_checkpoint_head_is_checked_even_when_its_envelope_is_resigned(
    store: Store, raw: Raw
) -> None:
    # Defence in depth: a tree head edited and its row re-signed with the real key (a
    # compromised writer) still fails the tree-head signature and the root check.
    n, oid, version, topic, state = _row_of(raw, "%checkpoint/sealed%", nth=0)
    env = envelope.decode(bytes(state))
    doc = json.loads(env.payload)
    doc["root_hash"] = "11" * 32
    sealed, _ = envelope.seal(
        store.keyring.signing_key,
        env.kid,
        str(oid)
        if len(str(oid)) == 36
        else f"{oid[:8]}-{oid[8:12]}-{oid[12:16]}-{oid[16:20]}-{oid[20:]}",
        version,
        topic,
        json.dumps(doc).encode(),
        env.prev_hash,
    )
    raw.q("UPDATE {t} SET state = ? WHERE {id} = ?", sealed, n)
    found = checks(run_verify(store))
    assert "checkpoint-signature" in found and "checkpoint-root" in found
    assert "signature" not in found


def test_cli_exits_non_zero_and_names_the_row(store: Store, raw: Raw) -> None:
    n, *_ = _row_of(raw, "%stake-debited%", nth=2)
    raw.q("UPDATE {t} SET topic = ? WHERE {id} = ?", "croupier/session/win-credited@1", n)
    keys = store.data_dir / "public.json"
    keys.write_text(json.dumps(store.keyring.public_document()))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "audit_cli.main",
            "verify",
            "--no-reexecute",
            "--db",
            store.db,
            "--keys",
            str(keys),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False
    assert any(f["check"] == "signature" and f["notification_id"] == n for f in doc["findings"])


def test_cli_passes_on_untouched_log(store: Store) -> None:
    build_log(store)
    keys = store.data_dir / "public.json"
    keys.write_text(json.dumps(store.keyring.public_document()))
    # Without a pinned genesis key, passing needs the auditor's explicit consent (issue 11).
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "audit_cli.main",
            "verify",
            "--no-reexecute",
            "--db",
            store.db,
            "--keys",
            str(keys),
            "--trust-local-keyring",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK" in proc.stdout


def test_the_application_refuses_to_load_a_tampered_event_it_wrote_itself(store: Store) -> None:
    # The writer knows the bytes it sealed; a changed byte must still get the full check.
    from ledger.errors import TamperDetected

    app = store.open()
    app.open_account("t1", "carol", "EUR")
    app.deposit("t2", "carol", 500)
    raw = Raw(store)
    try:
        n, _, _, _, state = _row_of(raw, "%account/deposited%", nth=0)
        env = envelope.decode(bytes(state))
        forged = envelope.encode(
            envelope.Envelope(
                env.kid, env.prev_hash, env.signature, env.payload.replace(b"500", b"900")
            )
        )
        raw.q("UPDATE {t} SET state = ? WHERE {id} = ?", forged, n)
    finally:
        raw.close()
    fresh = store.open(aggregate_cache_size=0)
    with pytest.raises(TamperDetected):
        fresh.account_balance("carol")
    app.repository.cache = None  # read through to the database, not the in-memory copy
    with pytest.raises(TamperDetected):
        app.account_balance("carol")


def test_verify_rebuilds_every_balance_from_the_raw_log(store: Store) -> None:
    s = build_log(store)
    live = store.open()
    keys = store.data_dir / "public.json"
    keys.write_text(json.dumps(store.keyring.public_document()))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "audit_cli.main",
            "verify",
            "--no-reexecute",
            "--db",
            store.db,
            "--keys",
            str(keys),
            "--pin",  # the keys document names the genesis key (issue 11)
            str(keys),
            "--json",
            "--balances",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    balances, players = doc["balances"], doc["players"]
    by_player = {player: balances[ledger] for ledger, player in players.items()}
    assert by_player == {"alice": live.account_balance("alice"), "bob": live.account_balance("bob")}
    assert balances[f"session:{s.session_id}"] == live.session_balance(s.session_id)
    assert sum(balances.values()) == 0


def _last_event_at_a_boundary(store: Store) -> tuple[int, tuple[Any, ...]]:
    """(chunk size, row): an aggregate's newest event (version >= 2) and a chunk size that
    makes it the first row of a chunk, so only the link between chunks can show a break."""
    ordered = rows(store)
    newest = {r.originator_id: i for i, r in enumerate(ordered)}
    for i in sorted(newest.values()):
        r = ordered[i]
        if r.version >= 2 and i >= 2 and r.topic != envelope.GENESIS_TOPIC:
            return i, tuple(r)
    raise AssertionError("the log has no aggregate with two events")


@pytest.mark.parametrize("damage", ["link", "version"])
def test_a_chain_break_at_a_chunk_boundary_is_reported(store: Store, raw: Raw, damage: str) -> None:
    # The row is re-sealed with the real key: its signature and its chunk are fine, and
    # the break shows only against the aggregate's head from the chunk before.
    chunk, (n, oid, version, topic, state) = _last_event_at_a_boundary(store)
    env = envelope.decode(state)
    log_id = bytes.fromhex(str(run_verify(store).log_id))
    ring = store.keyring
    if damage == "link":
        prev, version = bytes(32).replace(b"\0", b"\1"), version
    else:
        prev, version = env.prev_hash, version + 1
    forged, _ = envelope.seal(
        ring.signing_key, ring.signing_kid, oid, version, topic, env.payload, prev, log_id
    )
    raw.q("UPDATE {t} SET state = ?, originator_version = ? WHERE {id} = ?", forged, version, n)
    serial = verify(read_rows(store.db), ring.public_keys, jobs=1)
    expected = "chain-link" if damage == "link" else "chain-version"
    # (the checkpoints over the row report it too: the chain finding must be there as well)
    assert (expected, n) in {(f.check, f.notification_id) for f in serial.findings}
    saved, verify_module.CHUNK = verify_module.CHUNK, chunk
    try:
        parallel = verify_db(store.db, ring.public_keys, jobs=2)
    finally:
        verify_module.CHUNK = saved
    assert (expected, n) in {(f.check, f.notification_id) for f in parallel.findings}
    assert parallel.findings == serial.findings


def test_clean_chunks_are_handed_back_as_boundary_facts(store: Store) -> None:
    # The parity checks above compare something only if the workers' summaries are used.
    build_log(store)
    ordered = rows(store)
    log_id, named = verify_module.trust_candidates(r for r in ordered if r.topic in TRUST)
    tail = [r for r in ordered[1:] if r.topic not in TRUST][:4]
    results, _ = ChunkChecker(ChunkSetup(named, log_id)).check(tail)
    summary = summarise(tail, results, {})
    assert summary is not None and summary.kid == store.keyring.signing_kid
    assert len(summary.leaves) == 32 * len(tail)
