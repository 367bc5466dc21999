"""The in-order half of ``audit-cli verify``: rows' form, key history, chains, books and
checkpoints, fed the per-row results of the signature workers in notification order.

Key trust (format in ``ledger.envelope``): a format 2 row is valid only when signed by
the key the log's key history makes valid at its position; the genesis key is pinned by
the auditor (``pin``) or, unpinned, checked against the local keyring only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit_cli.books import Books
from audit_cli.chunk import ROW_CHECKS, Checked, ChunkSummary, Status
from audit_cli.findings import Finding
from audit_cli.rows import Row
from ledger import contracts, envelope, merkle

if TYPE_CHECKING:
    from audit_cli.reexec import Reexec

TRUST_ID = str(envelope.TRUST_ID)


class Trust(StrEnum):
    """What the log's keys were checked against."""

    PINNED = "pinned"
    """The genesis key is the fingerprint the auditor pinned."""
    UNPINNED = "unpinned"
    """The genesis key was checked against the local keyring only."""
    NO_GENESIS = "no-genesis"
    """A format 1 log: the local keyring only."""


class KeyEvent(NamedTuple):
    """A key of the log's key history, valid from a row on."""

    kid: str
    from_row: int
    event: str
    """``genesis`` or ``rotation``."""


class Checkpoint(NamedTuple):
    """A signed tree head row, at its position, with the key valid there."""

    row: Row
    position: int
    fields: dict[str, Any]
    key: Ed25519PublicKey | None


@dataclass
class _Tally:
    """The report's figures while the log is read (:meth:`Checker.finish` freezes them)."""

    events: int = 0
    checkpoints: int = 0
    covered: int = 0
    findings: list[Finding] = field(default_factory=list)
    latest_head: dict[str, Any] | None = None
    trust: Trust = Trust.NO_GENESIS
    genesis_fingerprint: str | None = None
    log_id: str | None = None
    key_history: list[KeyEvent] = field(default_factory=list)
    snapshots: int = 0


@dataclass(frozen=True)
class Report:
    """What ``verify`` found in a whole log."""

    events: int = 0
    aggregates: int = 0
    checkpoints: int = 0
    covered: int = 0
    uncovered: int = 0
    findings: list[Finding] = field(default_factory=list)
    balances: dict[str, int] = field(default_factory=dict)
    latest_head: dict[str, Any] | None = None
    players: dict[str, str] = field(default_factory=dict)
    """Player id of each ``account:<id>`` ledger, from the accounts' opening events."""
    trust: Trust = Trust.NO_GENESIS
    genesis_fingerprint: str | None = None
    log_id: str | None = None
    key_history: list[KeyEvent] = field(default_factory=list)
    snapshots: int = 0
    """Snapshots checked against the replay of their events (``audit_cli.snapshots``)."""
    rounds: dict[str, int] | None = None
    """Re-execution's counts (``audit_cli.reexec``): rounds re-run, rounds pending (seed
    not yet revealed), movements compared; None when it did not run."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "trust": self.trust,
            "genesis_fingerprint": self.genesis_fingerprint,
            "log_id": self.log_id,
            "key_history": [k._asdict() for k in self.key_history],
            "events": self.events,
            "aggregates": self.aggregates,
            "checkpoints": self.checkpoints,
            "events_covered_by_last_checkpoint": self.covered,
            "events_not_yet_covered": self.uncovered,
            "latest_checkpoint": self.latest_head,
            "snapshots_checked": self.snapshots,
            "rounds": self.rounds,
            "findings": [asdict(f) for f in self.findings],
        }


def normalise_pin(pin: str) -> str:
    p = pin.strip().lower().removeprefix("sha256:")
    if len(p) != 64 or any(c not in "0123456789abcdef" for c in p):
        raise ValueError(f"a pin is SHA256:<64 hex digits>, got {pin!r}")
    return p


def _public(hex_key: Any) -> Ed25519PublicKey | None:
    try:
        raw = bytes.fromhex(hex_key)
        return Ed25519PublicKey.from_public_bytes(raw) if len(raw) == 32 else None
    except (TypeError, ValueError):
        return None


class Checker:
    """The log read in order: each row's key against the key history, its chain, the
    books (``audit_cli.books``) and the checkpoints, from the workers' results."""

    def __init__(
        self,
        public_keys: dict[str, Ed25519PublicKey] | None,
        anchor: dict[str, Any] | None,
        pin: str | None = None,
        *,
        check_gaps: bool = False,
    ) -> None:
        self.public_keys = public_keys or {}
        self.anchor = anchor
        self.pin = normalise_pin(pin) if pin else None
        self.check_gaps = check_gaps
        self.tally = _Tally()
        self.heads: dict[str, tuple[int, bytes]] = {}
        self.leaves: list[bytes] = []
        self.blocks: list[tuple[int, list[bytes]]] = []
        """(position, Merkle nodes above the leaves) of chunks the workers hashed."""
        self._leaf_table: merkle.LeafTable | None = None
        self.checkpoints: list[Checkpoint] = []
        self.books = Books()
        self.last_id: int | None = None
        # Key history: the key valid from the next row on, and the one for this row.
        self.genesis: dict[str, Any] | None = None
        self.genesis_position: int | None = None
        self.current: tuple[str, Ed25519PublicKey] | None = None
        self.legacy_kids: set[str] = set()
        self.legacy_rows = 0
        # Called with (row, status, event hash, kid, key valid here) for every well-formed
        # row once checked (the snapshot checks replay on this one pass).
        self.observer: Callable[[Row, str, bytes, str, Ed25519PublicKey | None], None] | None
        self.observer = None
        self.reexec: Reexec | None = None
        """Re-execution of every round (``audit_cli.reexec``), fed by ``verify``."""

    def find(self, check: str, message: str, row: Row | None = None) -> None:
        self.tally.findings.append(
            Finding(
                check,
                message,
                row.notification_id if row else None,
                row.originator_id if row else None,
                row.version if row else None,
            )
        )

    def feed(self, rows: list[Row], results: list[Checked]) -> None:
        for row, (status, h, prev, leaf, extract, kid, fmt) in zip(rows, results, strict=True):
            self.tally.events += 1
            position = len(self.leaves)
            self.leaves.append(leaf)
            if status in ROW_CHECKS:
                n = row.notification_id if type(row.notification_id) is int else None
                self.tally.findings.append(
                    Finding(status.value, f"row {row.notification_id!r}: {ROW_CHECKS[status]}", n)
                )
                continue
            where = f"row {row.notification_id} ({row.originator_id} v{row.version}, {row.topic})"
            self._gap(row)
            if status == Status.UNKNOWN_KEY:
                self.find("unknown-key", f"{where}: signed with a key not in the keyring", row)
            elif status == Status.SIGNATURE:
                self.find("signature", f"{where}: signature does not verify", row)
            key = self._trust(row, position, status, extract, kid, fmt, where)
            self._chain(row, h, prev, where)
            if self.observer is not None:
                self.observer(row, status, h, kid, key)
            if status == Status.OK and extract is not None:
                if row.topic == contracts.CHECKPOINT_SEALED:
                    self.checkpoints.append(Checkpoint(row, position, extract, key))
                else:
                    named = self.genesis is not None  # since the genesis, by request
                    self.books.record(row, extract, where, self.find, named_requests=named)

    def feed_summary(self, chunk: ChunkSummary) -> int | None:
        """A chunk of rows a worker found well formed, validly signed by one key, linked
        within the chunk, with no trust row, no row a snapshot check replays and books that
        report nothing (``chunk.summarise``): check what only the order of the whole log
        shows (the key valid here, the gap before it, each aggregate's first link in it,
        its books against the log's before), then add it. None (nothing changed) when any
        of those fails: the caller feeds the rows one by one, for the findings ``feed``
        reports."""
        if self.current is None or chunk.kid != self.current[0]:
            return None
        if self.check_gaps and not (
            chunk.consecutive and (self.last_id is None or chunk.first_id == self.last_id + 1)
        ):
            return None
        heads = self.heads
        for oid, version, prev, _, _ in chunk.chains:
            last = heads.get(oid)
            if last is None:
                if version != 1 or prev != envelope.GENESIS:
                    return None
            elif version != last[0] + 1 or prev != last[1]:
                return None
        if not self.books.absorb(chunk.books):
            return None
        for oid, _, _, version, h in chunk.chains:
            heads[oid] = (version, h)
        position = len(self.leaves)
        leaves = chunk.leaves
        count = len(leaves) // 32
        self.leaves.extend([leaves[i : i + 32] for i in range(0, len(leaves), 32)])
        if chunk.levels:
            self.blocks.append((position, chunk.levels))
        self.tally.events += count
        self.last_id = chunk.last_id
        key = self.current[1]
        for i, row, x in chunk.checkpoints:
            self.checkpoints.append(Checkpoint(row, position + i, x, key))
        return count

    def _gap(self, row: Row) -> None:
        # SQLite gives each row max(rowid) + 1 and a rolled-back insert uses none, so a
        # missing id is a deleted row. (PostgreSQL sequences skip ids on rollback: there
        # the request-record and session cross-checks stand in for this one.)
        n = row.notification_id
        if self.check_gaps and self.last_id is not None and n != self.last_id + 1:
            self.find(
                "row-gap",
                f"rows {self.last_id + 1}..{n - 1} are missing (possible deletion)",
                row,
            )
        self.last_id = n

    # -- key history -------------------------------------------------------------------

    def _trust(
        self,
        row: Row,
        position: int,
        status: str,
        x: dict[str, Any] | None,
        kid: str,
        fmt: int,
        where: str,
    ) -> Ed25519PublicKey | None:
        """Check the row's key against the key history; return the key valid here."""
        if fmt == 1:
            if self.genesis is not None:
                self.find("legacy-after-genesis", f"{where}: a format 1 row after the genesis", row)
            else:
                self.legacy_kids.add(kid)
                self.legacy_rows += 1
            return self.public_keys.get(kid) or self._legacy_key(kid)
        if row.topic == envelope.GENESIS_TOPIC and self.genesis is None:
            self._genesis(row, position, status, x or {}, kid, where)
            return self.current[1] if self.current else None
        if self.current is None:
            self.find("trust-no-genesis", f"{where}: a format 2 row before the genesis", row)
            return None
        valid_kid, valid_key = self.current
        if kid != valid_kid:
            self.find(
                "key-not-valid",
                f"{where}: signed by key {kid}, but key {valid_kid} signs at this position",
                row,
            )
        if row.topic == envelope.GENESIS_TOPIC:
            self.find("trust-genesis", f"{where}: a second genesis", row)
        elif row.topic == envelope.ROTATED_TOPIC and status == "ok" and kid == valid_kid:
            self._rotation(row, x or {}, valid_kid, where)
        return valid_key

    def _legacy_key(self, kid: str) -> Ed25519PublicKey | None:
        keys = (self.genesis or {}).get("legacy_keys", {})
        return keys.get(kid)  # type: ignore[no-any-return]

    def _genesis(
        self, row: Row, position: int, status: str, x: dict[str, Any], kid: str, where: str
    ) -> None:
        pub = _public(x.get("public_key"))
        legacy = x.get("legacy") if isinstance(x.get("legacy"), dict) else None
        if status != "ok" or pub is None or x.get("kid") != kid or row.originator_id != TRUST_ID:
            self.find("trust-genesis", f"{where}: the genesis does not verify", row)
            return
        from ledger.keys import fingerprint

        fp = fingerprint(pub)
        legacy_keys = {k: _public(v) for k, v in ((legacy or {}).get("keys") or {}).items()}
        self.genesis = {"legacy": legacy, "legacy_keys": legacy_keys}
        self.genesis_position = position
        self.current = (kid, pub)
        r = self.tally
        r.genesis_fingerprint, r.log_id = "SHA256:" + fp, str(x.get("log_id"))
        r.key_history.append(KeyEvent(kid, row.notification_id, "genesis"))
        if self.pin is not None:
            r.trust = Trust.PINNED
            if fp != self.pin:
                self.find(
                    "trust-pin",
                    f"{where}: the genesis key SHA256:{fp} is not the pinned SHA256:{self.pin}",
                    row,
                )
        else:
            r.trust = Trust.UNPINNED
            local = self.public_keys.get(kid)
            if local is None or local.public_bytes_raw() != pub.public_bytes_raw():
                self.find(
                    "trust-genesis-unknown",
                    f"{where}: the genesis key {kid} is not in the local keyring",
                    row,
                )
        size = int((legacy or {}).get("tree_size", 0) or 0)
        if position != size:
            self.find(
                "trust-legacy",
                f"{where}: the genesis pins {size} legacy rows but is at position {position}",
                row,
            )
        for legacy_kid in sorted(self.legacy_kids - set(legacy_keys)):
            self.find(
                "trust-legacy",
                f"{where}: a legacy row is signed by key {legacy_kid}, which the genesis "
                "does not name",
                row,
            )

    def _rotation(self, row: Row, x: dict[str, Any], old: str, where: str) -> None:
        pub = _public(x.get("public_key"))
        from ledger.keys import key_id

        try:
            ok = (
                pub is not None
                and x.get("old_kid") == old
                and key_id(pub) == x.get("kid")
                and self.tally.log_id is not None
            )
            if ok and pub is not None:
                message = envelope.rotation_message(
                    bytes.fromhex(str(self.tally.log_id)), old, pub.public_bytes_raw()
                )
                pub.verify(bytes.fromhex(str(x.get("proof"))), message)
        except (ValueError, TypeError, envelope.InvalidSignature):
            ok = False
        if not ok or pub is None:
            self.find("trust-rotation", f"{where}: the rotation does not verify", row)
            return
        self.current = (str(x["kid"]), pub)
        self.tally.key_history.append(KeyEvent(str(x["kid"]), row.notification_id, "rotation"))

    # -- chains, books, checkpoints ----------------------------------------------------

    def _chain(self, row: Row, h: bytes, prev: bytes, where: str) -> None:
        last = self.heads.get(row.originator_id)
        expected = 1 if last is None else last[0] + 1
        if row.version != expected:
            self.find(
                "chain-version", f"{where}: expected version {expected} of this aggregate", row
            )
        link = envelope.GENESIS if last is None else last[1]
        if row.version == 1 and prev != envelope.GENESIS:
            self.find("chain-link", f"{where}: first event does not start a chain", row)
        elif row.version == expected and prev != link:
            self.find("chain-link", f"{where}: previous-event hash does not link", row)
        self.heads[row.originator_id] = (max(row.version, last[0] if last else 0), h)

    def finish(self) -> Report:
        """The report, once every row is fed."""
        t = self.tally
        self._check_checkpoints()
        self._check_legacy_prefix()
        self.books.findings(self.find)
        rounds = None
        if self.reexec is not None:
            findings, rounds = self.reexec.finish()
            t.findings.extend(findings)
        checkpoint_rows = {c.position for c in self.checkpoints}
        uncovered = sum(1 for p in range(t.covered, len(self.leaves)) if p not in checkpoint_rows)
        return Report(
            events=t.events,
            aggregates=len(self.heads),
            checkpoints=t.checkpoints,
            covered=t.covered,
            uncovered=uncovered,
            findings=t.findings,
            balances=dict(self.books.ledgers),
            latest_head=t.latest_head,
            players=dict(self.books.players),
            trust=t.trust,
            genesis_fingerprint=t.genesis_fingerprint,
            log_id=t.log_id,
            key_history=t.key_history,
            snapshots=t.snapshots,
            rounds=rounds,
        )

    def _check_legacy_prefix(self) -> None:
        legacy = (self.genesis or {}).get("legacy")
        if not legacy:
            return
        try:
            size, root = int(legacy["tree_size"]), bytes.fromhex(legacy["root_hash"])
        except (KeyError, TypeError, ValueError):
            self.find("trust-legacy", "the genesis's legacy prefix is malformed")
            return
        table = self._table()
        if size > table.size or table.root(size) != root:
            self.find(
                "trust-legacy",
                f"the {size} legacy rows the genesis pins have changed (root differs)",
            )

    def _table(self) -> merkle.LeafTable:
        """The Merkle tree over every leaf (once the log is read), with the nodes the
        workers hashed in their chunks."""
        if self._leaf_table is None or self._leaf_table.size != len(self.leaves):
            self._leaf_table = merkle.LeafTable(self.leaves, self.blocks)
        return self._leaf_table

    def _check_checkpoints(self) -> None:
        r = self.tally
        r.checkpoints = len(self.checkpoints)
        ordered = sorted(self.checkpoints, key=lambda c: int(c.fields.get("tree_size", -1)))
        wanted = {int(c.fields.get("tree_size", -1)) for c in self.checkpoints}
        if self.anchor is not None:
            wanted.add(int(self.anchor["tree_size"]))
        table = self._table()
        roots = {size: table.root(size) for size in wanted if 0 <= size <= table.size}
        if self.anchor is not None:
            size = int(self.anchor["tree_size"])
            if roots.get(size) != bytes.fromhex(self.anchor["root_hash"]):
                self.find(
                    "anchor",
                    f"the published tree head of {size} events (root "
                    f"{self.anchor['root_hash'][:16]}…) is not a prefix of this log "
                    f"of {len(self.leaves)} events: events were deleted or changed",
                )
        previous: tuple[int, bytes] | None = None
        expected_seq = 1
        for row, _position, x, _ in sorted(
            self.checkpoints, key=lambda c: int(c.fields.get("seq", 0))
        ):
            if x.get("seq") != expected_seq:
                self.find(
                    "checkpoint-sequence",
                    f"checkpoint {expected_seq} is missing (next is {x.get('seq')})",
                    row,
                )
            expected_seq = int(x.get("seq", expected_seq)) + 1
        log_id = bytes.fromhex(r.log_id) if r.log_id else None
        for row, position, x, key in ordered:
            where = f"checkpoint {x.get('seq')} (row {row.notification_id})"
            try:
                size, root = int(x["tree_size"]), bytes.fromhex(x["root_hash"])
                kid, ts, sig = str(x["kid"]), int(x["timestamp_ms"]), bytes.fromhex(x["signature"])
            except (KeyError, ValueError, TypeError):
                self.find("checkpoint-format", f"{where}: malformed tree head", row)
                continue
            # A format 2 tree head is signed under the log id by the key valid at its row.
            start = self.genesis_position
            fmt2 = start is not None and position >= start
            head_key = key if fmt2 else self.public_keys.get(kid) or self._legacy_key(kid)
            if fmt2 and self.current is not None and key is not None:
                head_key = key if _kid(key) == kid else None
            if head_key is None or not envelope.verify_tree_head(
                head_key, size, root, ts, kid, sig, log_id if fmt2 else None
            ):
                self.find(
                    "checkpoint-signature", f"{where}: tree head signature does not verify", row
                )
            if size > len(self.leaves):
                self.find(
                    "checkpoint-size",
                    f"{where}: covers {size} events but the log has "
                    f"{len(self.leaves)} (events deleted from the log)",
                    row,
                )
                continue
            if size > position:
                self.find(
                    "checkpoint-size",
                    f"{where}: covers {size} events but is stored at position {position}",
                    row,
                )
            if roots.get(size) != root:
                self.find(
                    "checkpoint-root",
                    f"{where}: root over the first {size} events does not match "
                    "(an event covered by it was changed, deleted, inserted or reordered)",
                    row,
                )
                continue
            if previous is not None and previous[0] < size:
                proof = table.consistency_proof(previous[0], size)
                if not merkle.verify_consistency(previous[0], size, previous[1], root, proof):
                    self.find(
                        "checkpoint-consistency",
                        f"{where}: not an extension of the previous checkpoint",
                        row,
                    )
            previous = (size, root)
            if size >= self.tally.covered:
                self.tally.covered = size
                self.tally.latest_head = {
                    k: x[k]
                    for k in ("seq", "tree_size", "root_hash", "timestamp_ms", "kid", "signature")
                    if k in x
                }


def _kid(key: Ed25519PublicKey) -> str:
    from ledger.keys import key_id

    return key_id(key)


__all__ = ["Checker", "Finding", "KeyEvent", "Report", "Trust"]
