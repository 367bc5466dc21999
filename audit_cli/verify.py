"""Offline verification of the raw log: signatures, hash chains, checkpoints and books.

Needs only the rows and the public keys (``ledger.envelope`` and ``ledger.merkle`` are
standalone modules documenting the formats; no application is started). Signature checks
run in parallel worker processes; chains, the Merkle tree and the books are checked in
notification order in the parent.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import islice
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit_cli.rows import Row, id_bounds, read_range, read_rows
from ledger import envelope, merkle

CHECKPOINT_TOPIC = "croupier/checkpoint/sealed@1"
SESSION_CLOSED_TOPIC = "croupier/session/closed@1"
ACCOUNT_OPENED_TOPIC = "croupier/account/opened@1"
INTERNAL_LEDGERS = ("account:", "session:")
CHUNK = 2000


@dataclass(frozen=True)
class Finding:
    check: str
    message: str
    notification_id: int | None = None
    originator_id: str | None = None
    version: int | None = None


@dataclass
class Report:
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

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "events": self.events,
            "aggregates": self.aggregates,
            "checkpoints": self.checkpoints,
            "events_covered_by_last_checkpoint": self.covered,
            "events_not_yet_covered": self.uncovered,
            "latest_checkpoint": self.latest_head,
            "findings": [asdict(f) for f in self.findings],
        }


# -- per-row work (runs in worker processes) -------------------------------------------

_KEYS: dict[str, Ed25519PublicKey] = {}


def _init(raw_keys: dict[str, bytes]) -> None:
    global _KEYS
    _KEYS = {kid: Ed25519PublicKey.from_public_bytes(raw) for kid, raw in raw_keys.items()}


_FIELDS = (
    "movement",
    "balance",
    "final_balance",
    "seq",
    "tree_size",
    "root_hash",
    "timestamp_ms",
    "kid",
    "signature",
    "player_id",
)


def _check_row(row: Row) -> tuple[str, bytes, bytes, bytes, dict[str, Any] | None]:
    """(status, event hash, prev hash, Merkle leaf hash, extracted fields) for one row."""
    if not isinstance(row.state, bytes):  # e.g. text written into the state column
        return "envelope", b"", b"", merkle.leaf_hash(str(row.state).encode()), None
    try:
        env = envelope.decode(row.state)
        oid = bytes.fromhex(row.originator_id.replace("-", ""))
        msg = envelope.signing_message(
            oid, row.version, row.topic, env.payload, env.prev_hash, env.kid
        )
    except (envelope.EnvelopeError, ValueError, UnicodeError):
        return "envelope", b"", b"", merkle.leaf_hash(row.state), None
    h = envelope.event_hash(msg, env.signature)
    key = _KEYS.get(env.kid)
    if key is None:
        status = "unknown-key"
    else:
        try:
            key.verify(env.signature, msg)
            status = "ok"
        except InvalidSignature:
            status = "signature"
    extract = None
    if (
        row.topic == CHECKPOINT_TOPIC
        or b'"movement"' in env.payload
        or row.topic in (SESSION_CLOSED_TOPIC, ACCOUNT_OPENED_TOPIC)
    ):
        try:
            doc = json.loads(env.payload)
            extract = {k: doc[k] for k in _FIELDS if k in doc}
        except (ValueError, TypeError):
            extract = {"unparseable": True}
    return status, h, env.prev_hash, merkle.leaf_hash(h), extract


def _check_chunk(
    rows: list[Row],
) -> list[tuple[str, bytes, bytes, bytes, dict[str, Any] | None]]:
    return [_check_row(r) for r in rows]


def _check_range(
    db: str, lo: int, hi: int
) -> tuple[
    list[tuple[int, str, int, str]], list[tuple[str, bytes, bytes, bytes, dict[str, Any] | None]]
]:
    """Worker side of ``verify_db``: read a range of rows and check them; the rows go back
    as plain tuples without their state, so the parent never handles the bulk of the log."""
    rows = read_range(db, lo, hi)
    results = _check_chunk(rows)
    return [(r.notification_id, r.originator_id, r.version, r.topic) for r in rows], results


def verify_db(
    db: str,
    public_keys: dict[str, Ed25519PublicKey],
    *,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    anchor: dict[str, Any] | None = None,
) -> Report:
    """Like :func:`verify`, but the worker processes read the rows themselves."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1:
        return verify(read_rows(db), public_keys, jobs=1, progress=progress, anchor=anchor)
    raw = {kid: k.public_bytes_raw() for kid, k in public_keys.items()}
    lo, hi = id_bounds(db)
    checker = _Checker(public_keys, anchor)
    ranges = [(a, min(a + CHUNK - 1, hi)) for a in range(lo, hi + 1, CHUNK)]
    ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    with ctx.Pool(jobs, initializer=_init, initargs=(raw,)) as pool:
        for ids, results in pool.imap(_range_job, [(db, a, b) for a, b in ranges], chunksize=1):
            rows = [Row(n, o, v, t, b"") for n, o, v, t in ids]
            checker.feed(rows, results)
            if progress:
                progress(len(rows))
    return checker.finish()


def _range_job(
    args: tuple[str, int, int],
) -> tuple[
    list[tuple[int, str, int, str]], list[tuple[str, bytes, bytes, bytes, dict[str, Any] | None]]
]:
    return _check_range(*args)


def _chunks(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield chunk


# -- the whole log ---------------------------------------------------------------------


def verify(
    rows: Iterable[Row],
    public_keys: dict[str, Ed25519PublicKey],
    *,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    anchor: dict[str, Any] | None = None,
) -> Report:
    """Verify every row; ``anchor`` is a tree head published earlier (``tree_size``,
    ``root_hash``) that the log must still contain: it catches a cut tail together with
    the checkpoints that covered it."""
    raw = {kid: k.public_bytes_raw() for kid, k in public_keys.items()}
    jobs = jobs or os.cpu_count() or 1
    checker = _Checker(public_keys, anchor)
    if jobs <= 1:
        _init(raw)
        for chunk in _chunks(rows, CHUNK):
            checker.feed(chunk, _check_chunk(chunk))
            if progress:
                progress(len(chunk))
    else:
        ctx = multiprocessing.get_context("spawn" if os.name != "posix" else "fork")
        with ctx.Pool(jobs, initializer=_init, initargs=(raw,)) as pool:
            chunks = _chunks(rows, CHUNK)
            pending: list[Any] = []
            for chunk in chunks:
                pending.append((chunk, pool.apply_async(_check_chunk, (chunk,))))
                if len(pending) >= jobs * 3:
                    c, res = pending.pop(0)
                    checker.feed(c, res.get())
                    if progress:
                        progress(len(c))
            for c, res in pending:
                checker.feed(c, res.get())
                if progress:
                    progress(len(c))
    return checker.finish()


class _Checker:
    def __init__(
        self, public_keys: dict[str, Ed25519PublicKey], anchor: dict[str, Any] | None
    ) -> None:
        self.public_keys = public_keys
        self.anchor = anchor
        self.report = Report()
        self.heads: dict[str, tuple[int, bytes]] = {}
        self.leaves: list[bytes] = []
        self.checkpoints: list[tuple[Row, int, dict[str, Any]]] = []
        self.ledgers: dict[str, int] = defaultdict(int)
        self.currencies: dict[str, str] = {}
        self.recorded_balance: dict[str, tuple[int, int]] = {}
        self.closed: set[str] = set()

    def find(self, check: str, message: str, row: Row | None = None) -> None:
        self.report.findings.append(
            Finding(
                check,
                message,
                row.notification_id if row else None,
                row.originator_id if row else None,
                row.version if row else None,
            )
        )

    def feed(
        self,
        rows: list[Row],
        results: list[tuple[str, bytes, bytes, bytes, dict[str, Any] | None]],
    ) -> None:
        for row, (status, h, prev, leaf, extract) in zip(rows, results, strict=True):
            self.report.events += 1
            position = len(self.leaves)
            self.leaves.append(leaf)
            where = f"row {row.notification_id} ({row.originator_id} v{row.version}, {row.topic})"
            if status == "envelope":
                self.find("envelope", f"{where}: state is not a signed envelope", row)
                continue
            if status == "unknown-key":
                self.find("unknown-key", f"{where}: signed with a key not in the keyring", row)
            elif status == "signature":
                self.find("signature", f"{where}: signature does not verify", row)
            self._chain(row, h, prev, where)
            if status == "ok" and extract is not None:
                self._money_and_checkpoints(row, position, extract, where)

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

    def _money_and_checkpoints(
        self, row: Row, position: int, x: dict[str, Any], where: str
    ) -> None:
        if row.topic == CHECKPOINT_TOPIC:
            self.checkpoints.append((row, position, x))
            return
        if row.topic == ACCOUNT_OPENED_TOPIC and isinstance(x.get("player_id"), str):
            self.report.players[f"account:{row.originator_id}"] = x["player_id"]
            return
        if row.topic == SESSION_CLOSED_TOPIC:
            if row.originator_id in self.closed:
                self.find("books-double-close", f"{where}: session closed twice", row)
            self.closed.add(row.originator_id)
        mv = x.get("movement")
        if isinstance(mv, dict):
            amount = mv.get("amount")
            src, dst, cur = mv.get("source"), mv.get("destination"), mv.get("currency")
            if (
                type(amount) is not int
                or amount <= 0
                or not isinstance(src, str)
                or not isinstance(dst, str)
            ):
                self.find("books-movement", f"{where}: malformed movement {mv}", row)
                return
            for name in (src, dst):
                if self.currencies.setdefault(name, str(cur)) != cur:
                    self.find("books-currency", f"{where}: {name} moves in two currencies", row)
            self.ledgers[src] -= amount
            self.ledgers[dst] += amount
            if dst.startswith("session:") and dst.split(":", 1)[1] in self.closed:
                self.find("books-closed-session", f"{where}: money moved into closed {dst}", row)
            if src.startswith(INTERNAL_LEDGERS) and self.ledgers[src] < 0:
                self.find("books-negative", f"{where}: {src} below zero ({self.ledgers[src]})", row)
        if "balance" in x:
            self.recorded_balance[row.originator_id] = (int(x["balance"]), row.notification_id)

    def finish(self) -> Report:
        r = self.report
        r.aggregates = len(self.heads)
        self._check_checkpoints()
        # Recorded balances must equal the balances replayed from the movements.
        replayed = {
            name.split(":", 1)[1]: bal
            for name, bal in self.ledgers.items()
            if name.startswith(INTERNAL_LEDGERS)
        }
        for oid, (bal, n) in self.recorded_balance.items():
            if replayed.get(oid, 0) != bal:
                self.find(
                    "books-balance",
                    f"aggregate {oid}: recorded balance {bal} (row {n}) "
                    f"but movements give {replayed.get(oid, 0)}",
                )
        totals: dict[str, int] = defaultdict(int)
        for name, bal in self.ledgers.items():
            totals[self.currencies.get(name, "?")] += bal
        for cur, total in totals.items():
            if total != 0:
                self.find("books-sum", f"movements in {cur} sum to {total}, not 0")
        r.balances = dict(self.ledgers)
        checkpoint_rows = {position for _, position, _ in self.checkpoints}
        r.uncovered = sum(1 for p in range(r.covered, len(self.leaves)) if p not in checkpoint_rows)
        return r

    def _check_checkpoints(self) -> None:
        r = self.report
        r.checkpoints = len(self.checkpoints)
        ordered = sorted(self.checkpoints, key=lambda c: int(c[2].get("tree_size", -1)))
        wanted = {int(x.get("tree_size", -1)) for _, _, x in self.checkpoints}
        if self.anchor is not None:
            wanted.add(int(self.anchor["tree_size"]))
        table = merkle.LeafTable(self.leaves)
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
        for row, _position, x in sorted(self.checkpoints, key=lambda c: int(c[2].get("seq", 0))):
            if x.get("seq") != expected_seq:
                self.find(
                    "checkpoint-sequence",
                    f"checkpoint {expected_seq} is missing (next is {x.get('seq')})",
                    row,
                )
            expected_seq = int(x.get("seq", expected_seq)) + 1
        for row, position, x in ordered:
            where = f"checkpoint {x.get('seq')} (row {row.notification_id})"
            try:
                size, root = int(x["tree_size"]), bytes.fromhex(x["root_hash"])
                kid, ts, sig = str(x["kid"]), int(x["timestamp_ms"]), bytes.fromhex(x["signature"])
            except (KeyError, ValueError, TypeError):
                self.find("checkpoint-format", f"{where}: malformed tree head", row)
                continue
            key = self._key(kid)
            if key is None or not envelope.verify_tree_head(key, size, root, ts, kid, sig):
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
            if size >= self.report.covered:
                self.report.covered = size
                self.report.latest_head = {
                    k: x[k]
                    for k in ("seq", "tree_size", "root_hash", "timestamp_ms", "kid", "signature")
                    if k in x
                }

    def _key(self, kid: str) -> Ed25519PublicKey | None:
        return self.public_keys.get(kid)
