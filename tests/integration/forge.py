"""An insider with the signing key rewrites the log (issue 22): every row re-signed, every
chain re-linked, every checkpoint's tree head recomputed and re-signed, the row ids made
consecutive again, and the balances that follow a changed movement adjusted, so that
signatures, chains, checkpoints and the books all verify. Only re-execution (the money
compared with what the rules pay) can tell.

``rewrite(store, edit)`` calls ``edit(row, doc)`` for every row in log order (``doc`` its
payload, to change in place); it returns ``KEEP``, ``DROP`` (the row is removed) or the
aggregate id the row moves to (its chain and version there are rebuilt); a ``TOPIC`` key
it sets in ``doc`` renames the row's topic. Generalises the
single-row re-signing of ``tests/integration/test_round_check.py::tamper`` and
``test_red_dog_rounds.py::rewrite_settled_payout`` (same ``envelope.seal`` with the real
key and the log id from the genesis) to a whole, self-consistent log.
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any
from uuid import UUID

from audit_cli.rows import Row, read_rows
from audit_cli.verify import trust_candidates
from ledger import contracts, envelope, merkle
from tests.conftest import Store

KEEP, DROP, TOPIC = "keep", "drop", "__topic__"
Edit = Callable[[Row, dict[str, Any]], str]


def rewrite(store: Store, edit: Edit) -> None:
    rows = list(read_rows(store.db))
    log_id = trust_candidates(rows)[0]
    key, kid = store.keyring.signing_key, store.keyring.signing_kid
    shift: dict[str, int] = defaultdict(int)  # ledger -> what the edits moved into it
    heads: dict[str, tuple[int, bytes]] = {}
    leaves: list[bytes] = []
    out: list[tuple[int, str, int, str, bytes]] = []
    dropped = 0
    for row in rows:
        env = envelope.decode(row.state)
        doc = json.loads(env.payload)
        before = _movement(doc)
        verdict = edit(row, doc)
        if verdict == DROP:
            dropped += 1
            if before is not None:
                _move(shift, before, -1)
            continue
        oid = row.originator_id if verdict == KEEP else verdict
        row = row._replace(originator_id=oid, topic=doc.pop(TOPIC, row.topic))
        _follow(row, doc, shift, before)
        if row.topic == contracts.CHECKPOINT_SEALED:
            _reseal_head(doc, leaves, dropped, key, kid, log_id)
        version, prev = heads.get(oid, (0, envelope.GENESIS))
        payload = json.dumps(doc, separators=(",", ":")).encode()
        state, h = envelope.seal(
            key,
            env.kid,
            oid,
            version + 1,
            row.topic,
            payload,
            prev,
            None if env.format == 1 else log_id,  # format 2 or 3: re-signed as format 2
        )
        heads[oid] = (version + 1, h)
        leaves.append(merkle.leaf_hash(h))
        out.append((len(out) + 1, oid, version + 1, row.topic, state))
    _store(store, out)


def _movement(doc: dict[str, Any]) -> tuple[str, str, int] | None:
    mv = doc.get("movement")
    if not isinstance(mv, dict):
        return None
    return str(mv["source"]), str(mv["destination"]), int(mv["amount"])


def _move(shift: dict[str, int], mv: tuple[str, str, int], sign: int) -> None:
    src, dst, amount = mv
    shift[src] -= sign * amount
    shift[dst] += sign * amount


def _follow(
    row: Row, doc: dict[str, Any], shift: dict[str, int], before: tuple[str, str, int] | None
) -> None:
    """Carry what the edits moved so far into this row's amounts and balances."""
    if row.topic == contracts.ACCOUNT_SESSION_RETURNED:
        # The session's final balance goes back to the account: all of it.
        extra = shift[f"session:{doc['session_id']}"]
        doc["amount"] += extra
        doc["movement"]["amount"] += extra
    if row.topic == contracts.SESSION_CLOSED:
        doc["final_balance"] += shift[f"session:{row.originator_id}"]
        return  # its balance is 0: the final one goes back to the account
    after = _movement(doc)
    if before != after:
        if before is not None:
            _move(shift, before, -1)
        if after is not None:
            _move(shift, after, 1)
    if "balance" in doc and isinstance(doc["balance"], int):
        kind = row.topic.split("/")[1]
        if kind in ("account", "session"):
            doc["balance"] += shift[f"{kind}:{row.originator_id}"]


def _reseal_head(
    doc: dict[str, Any],
    leaves: list[bytes],
    dropped: int,
    key: Any,
    kid: str,
    log_id: bytes | None,
) -> None:
    size = min(int(doc["tree_size"]) - dropped, len(leaves))
    tree = merkle.IncrementalTree().extend(leaves[:size])
    root = tree.root()
    ts = int(doc["timestamp_ms"])
    doc.update(
        tree_size=size,
        root_hash=root.hex(),
        kid=kid,
        signature=key.sign(envelope.tree_head_message(size, root, ts, kid, log_id)).hex(),
        subtree_roots=tree.to_hex(),
    )
    if "last_notification_id" in doc:
        doc["last_notification_id"] = int(doc["last_notification_id"]) - dropped


def _store(store: Store, rows: list[tuple[int, str, int, str, bytes]]) -> None:
    conn = store.connect()
    try:
        if store.kind == "sqlite":
            for trigger in ("stored_events_no_update", "stored_events_no_delete"):
                conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            conn.execute("BEGIN")
            conn.execute(f"DELETE FROM {store.table}")
            conn.executemany(
                f"INSERT INTO {store.table} (rowid, originator_id, originator_version, topic, "
                "state) VALUES (?, ?, ?, ?, ?)",
                [(n, UUID(o).hex, v, t, s) for n, o, v, t, s in rows],
            )
            _no_snapshots(conn, "stored_snapshots", "?")
            conn.execute("COMMIT")
        else:
            conn.execute("SET session_replication_role = replica")
            conn.execute(f"DELETE FROM {store.table}")
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {store.table} (notification_id, originator_id, "
                    "originator_version, topic, state) VALUES (%s, %s, %s, %s, %s)",
                    [(n, UUID(o), v, t, s) for n, o, v, t, s in rows],
                )
            _no_snapshots(conn, f"{store.schema}.casino_snapshots", "%s")
    finally:
        conn.close()


def _no_snapshots(conn: Any, table: str, _mark: str) -> None:
    """Snapshots summarise the old rows: the forger drops them (deleting one is harmless,
    ``test_snapshot_tamper``: the server replays the events instead)."""
    with contextlib.suppress(Exception):  # (no snapshot table in this store)
        conn.execute(f"DELETE FROM {table}")


def payload(row: Row) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(envelope.decode(row.state).payload)
    return doc
