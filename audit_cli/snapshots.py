"""``audit-cli verify``'s snapshot checks: every stored snapshot against the events it summarises.

A snapshot (format in ``ledger.envelope``) is valid when its row is well formed, it is a
format 2 envelope under the snapshot domain, the event at its version exists and its hash
is the snapshot's ``prev_hash`` (else it is an orphan, or was moved, swapped or replayed
from another version), it is signed by the key that signed that event (the key the log's
key history makes valid there) and its state equals the replay of the aggregate's events
up to its version. The replay rides on verify's one pass over the log: only the events of
aggregates that have snapshots, only up to their newest snapshot, are decoded and applied
(with the aggregates' own event classes, as the server would load them), and each
aggregate's replayed state is dropped once its newest snapshot is checked.
"""

from __future__ import annotations

from collections import defaultdict
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    UUIDAsHex,
)

import ledger.accounts  # importing them registers the snapshotted aggregates' topics
import ledger.tables.aggregates  # noqa: F401
from audit_cli.checker import Checker
from audit_cli.findings import Finding
from audit_cli.rows import NON_CANONICAL, Row
from ledger import envelope
from ledger.snapshots import SNAPSHOT_TOPIC, SignedSnapshot

CHECKS = {
    "snapshot-row": "the snapshot row is not well formed",
    "snapshot-envelope": "the snapshot's state is not a signed envelope",
    "snapshot-orphan": "the snapshot summarises an event that is not in the log",
    "snapshot-link": "the snapshot does not summarise the stored event at its version",
    "snapshot-key": "the snapshot is not signed by the key that signed its event",
    "snapshot-signature": "the snapshot's signature does not verify",
    "snapshot-state": "the snapshot's state differs from the replay of its events",
}


def _mapper() -> Mapper[UUID]:
    transcoder = JSONTranscoder()  # the application's (eventsourcing's default) transcodings
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
        transcoder.register(transcoding)
    return Mapper(transcoder=transcoder)


class SnapshotCheck:
    """Fed verify's rows in notification order (after the checker has seen each)."""

    def __init__(self, rows: list[Row], checker: Checker) -> None:
        self.checker = checker
        self.mapper = _mapper()
        self.pending: dict[str, dict[int, Row]] = defaultdict(dict)
        for row in rows:
            if _malformed(row):
                self._find("snapshot-row", f"snapshot {_where(row)}", row)
                continue
            self.pending[row.originator_id][row.version] = row
        self.newest = {oid: max(versions) for oid, versions in self.pending.items()}
        self.replayed: dict[str, Aggregate | None] = {}
        self.checked = 0

    @property
    def wanted(self) -> dict[str, int]:
        """Aggregate id -> newest snapshot version: the events the replay needs."""
        return dict(self.newest)

    def observe(
        self, row: Row, status: str, event_hash: bytes, kid: str, key: Ed25519PublicKey | None
    ) -> None:
        """One event, right after the checker checked it (``key``: the key valid there)."""
        oid, version = row.originator_id, row.version
        newest = self.newest.get(oid)
        if newest is None or type(version) is not int or version > newest:
            return
        self._apply(row)
        snapshot = self.pending[oid].pop(version, None)
        if snapshot is not None:
            self._check(snapshot, status, event_hash, kid, key)
        if version == newest:
            self.replayed.pop(oid, None)
            for orphan in self.pending.pop(oid).values():  # versions the log skipped
                self._orphan(orphan)
            del self.newest[oid]

    def finish(self) -> None:
        for versions in self.pending.values():  # aggregates or versions not in the log
            for row in versions.values():
                self._orphan(row)
        self.pending.clear()

    # -- replay --------------------------------------------------------------------------

    def _apply(self, row: Row) -> None:
        oid = row.originator_id
        if oid in self.replayed and self.replayed[oid] is None:
            return  # replay already failed for this aggregate (reported at its snapshot)
        try:
            payload = envelope.decode(row.state).payload
            event = self.mapper.to_domain_event(
                StoredEvent(UUID(oid), row.version, row.topic, payload)
            )
            self.replayed[oid] = event.mutate(self.replayed.get(oid))  # type: ignore[attr-defined]
        except Exception:  # an event that does not replay: its snapshot cannot match
            self.replayed[oid] = None

    # -- one snapshot --------------------------------------------------------------------

    def _check(
        self,
        row: Row,
        status: str,
        event_hash: bytes,
        kid: str,
        key: Ed25519PublicKey | None,
    ) -> None:
        self.checked += 1
        where = f"snapshot {_where(row)}"
        if not isinstance(row.state, bytes) or row.topic != SNAPSHOT_TOPIC:
            self._find("snapshot-envelope", where, row)
            return
        try:
            env = envelope.decode(row.state)
        except envelope.EnvelopeError:
            self._find("snapshot-envelope", where, row)
            return
        if env.format != 2:
            self._find("snapshot-envelope", where, row)
            return
        if env.prev_hash != event_hash or status != "ok":
            self._find("snapshot-link", where, row)  # or the event itself is not valid
            return
        log_id = self.checker.tally.log_id
        if env.kid != kid or key is None or log_id is None:
            self._find("snapshot-key", f"{where} (signed by {env.kid!r})", row)
            return
        try:
            envelope.check_snapshot(
                key, row.originator_id, row.version, row.topic, env, bytes.fromhex(log_id)
            )
        except (envelope.InvalidSignature, envelope.EnvelopeError, ValueError):
            self._find("snapshot-signature", where, row)
            return
        replayed = self.replayed.get(row.originator_id)
        if replayed is None or not self._equal(row, env.payload, replayed):
            self._find("snapshot-state", where, row)

    def _equal(self, row: Row, payload: bytes, replayed: Aggregate) -> bool:
        try:
            stored = self.mapper.to_domain_event(
                StoredEvent(UUID(row.originator_id), row.version, row.topic, payload)
            )
        except Exception:
            return False
        if not isinstance(stored, SignedSnapshot):
            return False
        expected = self.mapper.to_domain_event(
            self.mapper.to_stored_event(SignedSnapshot.take(replayed))
        )
        assert isinstance(expected, SignedSnapshot)
        # The same transcoding on both sides; the time it was taken is not state.
        return (stored.topic, stored.state) == (expected.topic, expected.state)

    def _orphan(self, row: Row) -> None:
        self.checked += 1
        self._find("snapshot-orphan", f"snapshot {_where(row)}", row)

    def _find(self, check: str, where: str, row: Row) -> None:
        version = row.version if type(row.version) is int else None
        oid = row.originator_id if type(row.originator_id) is str else repr(row.originator_id)
        self.checker.tally.findings.append(
            Finding(check, f"{where}: {CHECKS[check]}", None, oid, version)
        )


def _malformed(row: Row) -> bool:
    return (
        type(row.originator_id) is not str
        or row.originator_id.startswith(NON_CANONICAL)
        or type(row.version) is not int
        or not 1 <= row.version <= envelope.MAX_VERSION
        or type(row.topic) is not str
    )


def _where(row: Row) -> str:
    return f"{row.originator_id} v{row.version}"


__all__ = ["CHECKS", "SnapshotCheck"]
