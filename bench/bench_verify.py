"""Benchmark: ``audit-cli verify`` throughput over a log of N events (default 200,000).

Builds a SQLite log of N genuinely signed, chained events (deposits spread over many
accounts, in the ledger's envelope format, with a signed checkpoint over all of them),
then measures in the same run:
  - the raw Ed25519 verify rate on one core (cryptography/OpenSSL),
  - full ``verify`` (signatures + chains + Merkle root + books) with all cores.
Prints events/s and the ratio to raw rate x cores used.

    python bench/bench_verify.py [N]
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

from audit_cli.rows import read_rows
from audit_cli.verify import verify, verify_db
from ledger import envelope, merkle
from ledger.keys import Keyring


def build(path: Path, ring: Keyring, n: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, "
        "topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
    )
    accounts = [uuid.uuid4() for _ in range(max(1, n // 20))]
    heads: dict[uuid.UUID, tuple[int, bytes, int]] = {}
    tree = merkle.IncrementalTree()
    rows = []
    topic = "croupier/account/deposited@1"
    for i in range(n - 1):
        oid = accounts[i % len(accounts)]
        version, prev, balance = heads.get(oid, (0, envelope.GENESIS, 0))
        balance += 100
        payload = json.dumps(
            {
                "amount": 100,
                "balance": balance,
                "movement": {
                    "source": "bank:EUR",
                    "destination": f"account:{oid}",
                    "amount": 100,
                    "currency": "EUR",
                },
                "timestamp": {"_type_": "datetime_iso", "_data_": "2026-11-29"},
            }
        ).encode()
        state, h = envelope.seal(
            ring.signing_key, ring.signing_kid, oid, version + 1, topic, payload, prev
        )
        heads[oid] = (version + 1, h, balance)
        tree = tree.append(merkle.leaf_hash(h))
        rows.append((oid.hex, version + 1, topic, state))
    ts, root = 1_795_000_000_000, tree.root()
    sig = ring.signing_key.sign(envelope.tree_head_message(tree.size, root, ts, ring.signing_kid))
    cp = {
        "seq": 1,
        "tree_size": tree.size,
        "root_hash": root.hex(),
        "timestamp_ms": ts,
        "kid": ring.signing_kid,
        "signature": sig.hex(),
    }
    cid = uuid.uuid4()
    state, _ = envelope.seal(
        ring.signing_key,
        ring.signing_kid,
        cid,
        1,
        "croupier/checkpoint/sealed@1",
        json.dumps(cp).encode(),
        envelope.GENESIS,
    )
    rows.append((cid.hex, 1, "croupier/checkpoint/sealed@1", state))
    conn.executemany("INSERT INTO stored_events VALUES (?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def raw_rate(ring: Keyring, seconds: float = 2.0) -> float:
    pub = ring.signing_key.public_key()
    msg = b"x" * 150
    sig = ring.signing_key.sign(msg)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(500):
            pub.verify(sig, msg)
        count += 500
    return count / (time.perf_counter() - start)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    cores = os.cpu_count() or 1
    ring = Keyring.generate()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "casino.sqlite"
        t0 = time.perf_counter()
        build(path, ring, n)
        print(f"built {n} signed events in {time.perf_counter() - t0:.1f} s")
        # The raw rate drifts with the CPU's clock: measure it before, between and after
        # the verify runs, and compare with the mean of the three.
        raws = [raw_rate(ring)]
        results = []
        for jobs in (1, cores):
            t0 = time.perf_counter()
            report = (
                verify(read_rows(str(path)), ring.public_keys, jobs=1)
                if jobs == 1
                else verify_db(str(path), ring.public_keys, jobs=jobs)
            )
            dt = time.perf_counter() - t0
            assert report.ok, report.findings[:3]
            results.append((jobs, report.events, dt))
            raws.append(raw_rate(ring))
        raw = sum(raws) / len(raws)
        print(
            f"raw Ed25519 verify, 1 core: {raw:,.0f} /s (mean of {len(raws)} runs: "
            + ", ".join(f"{r:,.0f}" for r in raws)
            + f"); x {cores} cores = {raw * cores:,.0f} /s"
        )
        for jobs, events, dt in results:
            rate = events / dt
            print(
                f"verify jobs={jobs}: {events} events in {dt:.2f} s = {rate:,.0f} events/s;"
                f" ratio to raw x {jobs} = {rate / (raw * jobs):.2f}"
            )


if __name__ == "__main__":
    main()
