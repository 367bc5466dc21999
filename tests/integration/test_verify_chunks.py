"""``verify_db`` hands a clean chunk of rows back as boundary facts and books sums (the
workers' ``_summarise``/``_books``, the parent's ``Checker.feed_summary``) and falls back
to row-by-row checks when those do not settle it: on logs whose books break in every way
(below zero, closed twice, money into a closed session, two currencies, a missing or
altered request record, a request moving money twice, a wrong recorded balance), at
every chunk size, the report must be the row-by-row ``verify``'s."""

from __future__ import annotations

import json
import random
import sqlite3
import uuid
from pathlib import Path

import pytest

import audit_cli.verify as verify_module
from audit_cli.rows import read_rows, read_snapshot_rows, read_trust_rows
from audit_cli.verify import Report, verify, verify_db
from ledger import envelope
from ledger.contracts import REQUEST_ACCEPTED as REQUEST_TOPIC
from ledger.contracts import SESSION_CLOSED as SESSION_CLOSED_TOPIC
from ledger.contracts import SESSION_OPENED as SESSION_OPENED_TOPIC
from ledger.keys import Keyring, fingerprint
from tests.conftest import Store

MOVED = "croupier/account/deposited@1"


def write_rows(path: Path, rows: list[tuple[str, int, str, bytes]]) -> None:
    """A SQLite event table holding ``rows`` as they are (no recorder, no checks)."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, "
        "topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
    )
    conn.executemany("INSERT INTO stored_events VALUES (?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def build(path: Path, ring: Keyring, seed: int) -> None:
    rnd = random.Random(seed)
    log_id = bytes(rnd.randrange(256) for _ in range(16))
    heads: dict[uuid.UUID, tuple[int, bytes]] = {}
    rows = []

    def add(oid: uuid.UUID, topic: str, doc: object) -> None:
        version, prev = heads.get(oid, (0, envelope.GENESIS))
        state, h = envelope.seal(
            ring.signing_key,
            ring.signing_kid,
            oid,
            version + 1,
            topic,
            json.dumps(doc).encode(),
            prev,
            log_id,
        )
        heads[oid] = (version + 1, h)
        rows.append((oid.hex, version + 1, topic, state))

    key = ring.signing_key.public_key().public_bytes_raw().hex()
    genesis = {"log_id": log_id.hex(), "kid": ring.signing_kid, "public_key": key, "legacy": None}
    add(envelope.TRUST_ID, envelope.GENESIS_TOPIC, genesis)
    accounts = [uuid.UUID(int=rnd.getrandbits(128)) for _ in range(3)]
    sessions = [uuid.UUID(int=rnd.getrandbits(128)) for _ in range(3)]
    balances: dict[str, int] = {}
    for s in sessions:
        add(s, SESSION_OPENED_TOPIC, {"player": "p"})
    for i in range(60):
        kind = rnd.random()
        if kind < 0.06:
            add(rnd.choice(sessions), SESSION_CLOSED_TOPIC, {"final_balance": 0})
            continue
        internal = [f"account:{a}" for a in accounts] + [f"session:{s}" for s in sessions]
        src = rnd.choice(["bank:EUR", *internal])
        dst = rnd.choice(internal)
        amount = rnd.choice([1, 5, 50, 500])
        rid = uuid.UUID(int=rnd.getrandbits(128))
        digest = f"{i:064x}"
        seq = 1 if rnd.random() > 0.05 else 2
        currency = "EUR" if rnd.random() > 0.04 else "USD"
        balances[src] = balances.get(src, 0) - amount
        balances[dst] = balances.get(dst, 0) + amount
        recorded = balances[dst] + (0 if rnd.random() > 0.05 else 1)
        movement = {
            "source": src,
            "destination": dst,
            "amount": amount,
            "currency": currency,
            "request": {"id": str(rid), "digest": digest, "seq": seq},
        }
        add(uuid.UUID(dst.split(":", 1)[1]), MOVED, {"movement": movement, "balance": recorded})
        if rnd.random() > 0.05:
            record_digest = digest if rnd.random() > 0.05 else "0" * 64
            add(rid, REQUEST_TOPIC, {"digest": record_digest, "command": "move"})
    write_rows(path, rows)


def _row_by_row(db: str, pin: str) -> Report:
    return verify(
        read_rows(db),
        None,
        jobs=1,
        pin=pin,
        check_gaps=True,
        learned=verify_module.trust_candidates(read_trust_rows(db)),
        snapshots=read_snapshot_rows(db),
    )


@pytest.mark.parametrize("seed", range(12))
def test_chunked_verify_reports_exactly_the_row_by_row_findings(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    ring = Keyring.generate()
    pin = fingerprint(ring.signing_key.public_key())
    db = str(tmp_path / "casino.sqlite")
    build(tmp_path / "casino.sqlite", ring, seed)
    expected = _row_by_row(db, pin)
    assert expected.trust == "pinned"
    for chunk in (1, 2, 3, 7, 16, 2000):
        monkeypatch.setattr(verify_module, "CHUNK", chunk)
        got = verify_db(db, None, jobs=1, pin=pin)
        assert got.to_dict() == expected.to_dict(), chunk
        assert got.balances == expected.balances and got.players == expected.players
    monkeypatch.setattr(verify_module, "CHUNK", 3)
    assert verify_db(db, None, jobs=2, pin=pin).to_dict() == expected.to_dict()


def test_the_random_logs_break_the_books_in_every_way(tmp_path: Path) -> None:
    # The parity above means something only if the logs hold the findings it compares.
    found: set[str] = set()
    for seed in range(12):
        ring = Keyring.generate()
        db = tmp_path / f"{seed}.sqlite"
        build(db, ring, seed)
        report = _row_by_row(str(db), fingerprint(ring.signing_key.public_key()))
        found |= {f.check for f in report.findings}
    wanted = {
        "books-negative",
        "books-double-close",
        "books-closed-session",
        "books-currency",
        "books-request",
        "books-balance",
    }
    assert wanted <= found, wanted - found


def build_checkpointed(path: Path, ring: Keyring, seed: int, n: int) -> None:
    """A clean log of about ``n`` rows (deposits and their request records) with signed
    checkpoints at random sizes: most over the true root, some over a root with one
    leaf changed, one covering more rows than it follows, one out of sequence."""
    from ledger import merkle

    rnd = random.Random(seed)
    log_id = bytes(rnd.randrange(256) for _ in range(16))
    key, kid = ring.signing_key, ring.signing_kid
    heads: dict[uuid.UUID, tuple[int, bytes]] = {}
    rows: list[tuple[str, int, str, bytes]] = []
    leaves: list[bytes] = []

    def add(oid: uuid.UUID, topic: str, doc: object) -> None:
        version, prev = heads.get(oid, (0, envelope.GENESIS))
        payload = json.dumps(doc).encode()
        state, h = envelope.seal(key, kid, oid, version + 1, topic, payload, prev, log_id)
        heads[oid] = (version + 1, h)
        rows.append((oid.hex, version + 1, topic, state))
        leaves.append(merkle.leaf_hash(h))

    def checkpoint(seq: int, size: int, leaf_changed: bool) -> None:
        covered = list(leaves[:size])
        if leaf_changed and covered:
            covered[rnd.randrange(len(covered))] = merkle.leaf_hash(b"changed")
        root = merkle.root(covered) if size <= len(leaves) else merkle.EMPTY_ROOT
        ts = 1_795_000_000_000 + seq
        sig = key.sign(envelope.tree_head_message(size, root, ts, kid, log_id))
        doc = {
            "seq": seq,
            "tree_size": size,
            "root_hash": root.hex(),
            "timestamp_ms": ts,
            "kid": kid,
            "signature": sig.hex(),
        }
        add(uuid.UUID(int=rnd.getrandbits(128)), "croupier/checkpoint/sealed@1", doc)

    pub = key.public_key().public_bytes_raw().hex()
    add(
        envelope.TRUST_ID,
        envelope.GENESIS_TOPIC,
        {"log_id": log_id.hex(), "kid": kid, "public_key": pub, "legacy": None},
    )
    accounts = [uuid.UUID(int=rnd.getrandbits(128)) for _ in range(5)]
    balance: dict[uuid.UUID, int] = {}
    seq = 1
    for i in range(n // 2):
        oid = rnd.choice(accounts)
        balance[oid] = balance.get(oid, 0) + 7
        rid = uuid.UUID(int=rnd.getrandbits(128))
        movement = {
            "source": "bank:EUR",
            "destination": f"account:{oid}",
            "amount": 7,
            "currency": "EUR",
            "request": {"id": str(rid), "digest": f"{i:064x}", "seq": 1},
        }
        add(oid, MOVED, {"movement": movement, "balance": balance[oid]})
        add(rid, REQUEST_TOPIC, {"digest": f"{i:064x}", "command": "deposit"})
        if rnd.random() < 16 / n:
            kind = rnd.random()
            size = len(leaves) + (3 if kind < 0.05 else 0)
            checkpoint(seq + (1 if 0.05 <= kind < 0.1 else 0), size, 0.1 <= kind < 0.25)
            seq += 1
    checkpoint(seq, len(leaves), False)
    write_rows(path, rows)


@pytest.mark.parametrize(("seed", "n"), [(0, 40), (1, 129), (2, 300), (3, 1000), (4, 2100)])
def test_merkle_nodes_hashed_in_the_workers_give_the_row_by_row_roots(
    tmp_path: Path, seed: int, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Clean chunks come back with their Merkle nodes hashed (merkle.subtree_levels); the
    # checkpoints' roots and consistency must come out as the row-by-row verify's, at
    # chunk sizes that are and are not powers of two (and chunks that are not aligned).
    ring = Keyring.generate()
    pin = fingerprint(ring.signing_key.public_key())
    db = str(tmp_path / "casino.sqlite")
    build_checkpointed(tmp_path / "casino.sqlite", ring, seed, n)
    expected = _row_by_row(db, pin)
    assert expected.checkpoints >= 2 and expected.covered > 0
    used: list[int] = []
    feed_summary = verify_module.Checker.feed_summary

    def spy(self: verify_module.Checker, *args: object) -> int | None:
        out = feed_summary(self, *args)  # type: ignore[arg-type]
        used.append(len(self.blocks))
        return out

    monkeypatch.setattr(verify_module.Checker, "feed_summary", spy)
    for chunk in (1, 2, 3, 4, 7, 8, 16, 100, 2048):
        monkeypatch.setattr(verify_module, "CHUNK", chunk)
        for jobs in (1, 2):
            got = verify_db(db, None, jobs=jobs, pin=pin)
            assert got.to_dict() == expected.to_dict(), (chunk, jobs)
    assert max(used) > 1  # the workers' nodes were used, not only the parent's


def test_the_checkpointed_logs_hold_root_findings(tmp_path: Path) -> None:
    found: set[str] = set()
    for seed, n in [(0, 40), (1, 129), (2, 300), (3, 1000), (4, 2100)]:
        ring = Keyring.generate()
        db = tmp_path / f"{seed}.sqlite"
        build_checkpointed(db, ring, seed, n)
        found |= {
            f.check
            for f in _row_by_row(str(db), fingerprint(ring.signing_key.public_key())).findings
        }
    assert {"checkpoint-root", "checkpoint-sequence"} <= found, found


def test_chunk_bounds_are_runs_of_the_ids_that_exist(tmp_path: Path) -> None:
    # The database groups the ids (rows.chunk_bounds); the runs must be those of the ids
    # themselves, gaps (deleted rows) and one huge id included.
    from audit_cli.rows import chunk_bounds

    path = tmp_path / "casino.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, "
        "topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
    )
    rnd = random.Random(5)
    ids = [*sorted(rnd.sample(range(1, 400), 150)), 2**47]
    conn.executemany(
        "INSERT INTO stored_events (rowid, originator_id, originator_version, topic, state) "
        "VALUES (?, ?, 1, 't', x'00')",
        [(n, f"{n:032x}") for n in ids],
    )
    conn.commit()
    conn.close()
    for size in (1, 2, 3, 7, 64, 150, 151, 2048):
        runs = [ids[i : i + size] for i in range(0, len(ids), size)]
        assert list(chunk_bounds(str(path), size)) == [(r[0], r[-1]) for r in runs], size
    assert list(chunk_bounds(str(tmp_path / "casino.sqlite"), 5))[-1][1] == 2**47


def test_chunk_bounds_on_both_stores_are_runs_of_the_rows_ids(store: Store) -> None:
    from audit_cli.rows import chunk_bounds

    app = store.open()
    for i in range(7):
        app.open_account(f"a{i}", f"p{i}", "EUR")
        app.deposit(f"d{i}", f"p{i}", 100 + i)
    app.seal()
    ids = [r.notification_id for r in read_rows(store.db)]
    assert len(ids) > 20
    for size in (1, 2, 3, 5, 8, 1000):
        runs = [ids[i : i + size] for i in range(0, len(ids), size)]
        assert list(chunk_bounds(store.db, size)) == [(r[0], r[-1]) for r in runs], size
