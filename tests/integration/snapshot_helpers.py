"""Helpers of the snapshot tests: a long session written fast, and raw access to the
snapshot table (triggers out of the way) for tampering."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from ledger import envelope
from ledger.accounts import GameSession
from ledger.casino import Casino
from ledger.snapshots import SnapshotStore
from tests.conftest import Store
from tests.helpers import open_session


def state(agg: Aggregate) -> dict[str, Any]:
    """An aggregate's whole state (what a snapshot holds, and its id and version)."""
    return {k: v for k, v in vars(agg).items() if k != "_pending_events"}


def long_session(app: Casino, rounds: int, chunk: int = 1_000) -> tuple[str, int]:
    """A session with ``rounds`` rounds, its events written straight through the
    application (the real aggregate methods and the signed store, ``chunk`` rounds per
    save) instead of one command per step, which would take minutes. Returns the session
    id and its version."""
    sid = open_session(app, "long", buy_in=1_000_000, deposit=2_000_000)
    session: GameSession = app.repository.get(UUID(sid))
    for start in range(0, rounds, chunk):
        for i in range(start, min(start + chunk, rounds)):
            code = f"LONG-{i:06d}"
            session.round_opened(code)
            session.stake(code, 100)
            if i % 2:
                session.credit_win(code, 200)
            session.round_closed(code, None)
        app.save(session)
    app.repository.cache.put(session.id, session)  # type: ignore[union-attr]
    return sid, session.version


class RawSnapshots:
    """Direct SQL on the snapshot table, its append-only triggers out of the way."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.conn = store.connect()  # type: ignore[no-untyped-call]  # sqlite3 or psycopg
        self.pg = store.kind != "sqlite"
        if self.pg:
            self.conn.execute("SET session_replication_role = replica")
            self.table = f"{store.schema}.casino_snapshots"
            self.events = f"{store.schema}.casino_events"
        else:
            self.conn.execute("DROP TRIGGER IF EXISTS stored_snapshots_no_update")
            self.conn.execute("DROP TRIGGER IF EXISTS stored_snapshots_no_delete")
            self.table, self.events = "stored_snapshots", "stored_events"

    def _oid(self, oid: str | UUID) -> Any:
        u = UUID(str(oid))
        return u if self.pg else u.hex

    def q(self, sql: str, *params: Any) -> list[Any]:
        sql = sql.replace("{t}", self.table).replace("{e}", self.events)
        if self.pg:
            sql = sql.replace("?", "%s")
        cur = self.conn.execute(sql, params)
        try:
            return list(cur.fetchall())
        except Exception:  # statements without a result set
            return []

    def rows(self) -> list[tuple[Any, ...]]:
        return [
            (UUID(str(o)), v, t, bytes(s))
            for o, v, t, s in self.q(
                "SELECT originator_id, originator_version, topic, state FROM {t} "
                "ORDER BY originator_id, originator_version"
            )
        ]

    def aggregates(self) -> set[UUID]:
        return {r[0] for r in self.rows()}

    def versions(self, oid: str | UUID) -> list[tuple[int, bytes]]:
        found = self.q(
            "SELECT originator_version, state FROM {t} WHERE originator_id = ? "
            "ORDER BY originator_version",
            self._oid(oid),
        )
        return [(int(v), bytes(s)) for v, s in found]

    def newest(self, oid: str | UUID) -> tuple[int, bytes]:
        return self.versions(oid)[-1]

    def set_state(self, oid: str | UUID, version: int, state: bytes) -> None:
        self.q(
            "UPDATE {t} SET state = ? WHERE originator_id = ? AND originator_version = ?",
            state,
            self._oid(oid),
            version,
        )

    def delete(self, oid: str | UUID, version: int | None = None) -> None:
        if version is None:
            self.q("DELETE FROM {t} WHERE originator_id = ?", self._oid(oid))
        else:
            self.q(
                "DELETE FROM {t} WHERE originator_id = ? AND originator_version = ?",
                self._oid(oid),
                version,
            )

    def insert(self, oid: str | UUID, version: int, topic: str, state: bytes) -> None:
        self.q("INSERT INTO {t} VALUES (?, ?, ?, ?)", self._oid(oid), version, topic, state)

    def event_hash(self, oid: str | UUID, version: int, log_id: bytes) -> bytes:
        """The event hash of one stored event (what a snapshot at ``version`` links to)."""
        (topic, state), *_ = self.q(
            "SELECT topic, state FROM {e} WHERE originator_id = ? AND originator_version = ?",
            self._oid(oid),
            version,
        )
        env = envelope.decode(bytes(state))
        return envelope.hash_of(UUID(str(oid)), version, topic, env, log_id)

    def close(self) -> None:
        self.conn.close()


def refused(app: Casino) -> int:
    """How many snapshots the application refused on load since it started."""
    assert isinstance(app.snapshots, SnapshotStore)
    return app.snapshots.refused


def alter_balance(state: bytes, balance: int) -> bytes:
    """The snapshot's envelope with another balance in its state (signature unchanged)."""
    env = envelope.decode(state)
    doc = json.loads(env.payload)
    doc["state"]["balance"] = balance
    payload = json.dumps(doc, separators=(",", ":")).encode()
    return envelope.encode(env._replace(payload=payload))


def resign(
    state: bytes,
    key: Any,
    kid: str,
    oid: str | UUID,
    version: int,
    summarised: bytes,
    log_id: bytes,
) -> bytes:
    """A snapshot envelope with the same payload, sealed again (by ``key``)."""
    env = envelope.decode(state)
    return envelope.seal_snapshot(
        key, kid, UUID(str(oid)), version, "croupier/snapshot@1", env.payload, summarised, log_id
    )
