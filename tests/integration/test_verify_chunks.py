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
from audit_cli.checker import (
    REQUEST_TOPIC,
    SESSION_CLOSED_TOPIC,
    SESSION_OPENED_TOPIC,
)
from audit_cli.rows import read_rows, read_snapshot_rows, read_trust_rows
from audit_cli.verify import Report, verify, verify_db
from ledger import envelope
from ledger.keys import Keyring, fingerprint

MOVED = "croupier/account/deposited@1"


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
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, "
        "topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
    )
    conn.executemany("INSERT INTO stored_events VALUES (?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


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
