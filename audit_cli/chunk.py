"""A worker's half of ``audit-cli verify``: one chunk of rows checked for form and
signature, and, when it needs nothing of the rest of the log but its boundary facts,
summed up (:func:`summarise`) for the parent (``audit_cli.checker``) to add.

Each row's signing message is the one ``ledger.envelope`` specifies; which key was valid
at the row's position is the parent's business (the key history is read in order).
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit_cli.books import Books
from audit_cli.reexec import ChunkGames, chunk_games, is_game_topic
from audit_cli.rows import MAX_ROW_ID, NON_CANONICAL, TRUST_TOPICS, Row
from ledger import contracts, envelope, merkle


class Status(StrEnum):
    """A row's outcome in the worker; all but ``ok`` are the check of its finding."""

    OK = "ok"
    SIGNATURE = "signature"
    UNKNOWN_KEY = "unknown-key"
    ROW_ID = "row-id"
    ROW_ORIGINATOR_ID = "row-originator-id"
    ROW_VERSION = "row-version"
    ROW_TOPIC = "row-topic"
    ENVELOPE = "envelope"


ROW_CHECKS = {
    Status.ROW_ID: "the row id is not an integer from 1 to 2^48",
    Status.ROW_ORIGINATOR_ID: "the originator id is not a canonical UUID (lower-case hex)",
    Status.ROW_VERSION: "the version is not an integer from 1 to 2^63-1",
    Status.ROW_TOPIC: "the topic is not UTF-8 text",
    Status.ENVELOPE: "state is not a signed envelope",
}
"""A row that is not a well-formed signed row, and what is wrong with it."""


class Checked(NamedTuple):
    """One row as the worker checked it."""

    status: Status
    event_hash: bytes
    prev_hash: bytes
    leaf: bytes
    """Its Merkle leaf hash."""
    extract: dict[str, Any] | None
    """The fields the parent checks (``FIELDS``), for money, trust and checkpoint rows."""
    kid: str
    format: int


class ChainFacts(NamedTuple):
    """An aggregate's events in a chunk: where its chain enters and leaves it."""

    originator_id: str
    first_version: int
    first_prev: bytes
    last_version: int
    last_hash: bytes


class ChunkSummary(NamedTuple):
    """A chunk that needs nothing of the parent but these facts (:func:`summarise`)."""

    first_id: int
    last_id: int
    consecutive: bool
    """Whether its row ids follow one another."""
    kid: str
    """The one key id that signed every row."""
    leaves: bytes
    """Merkle leaf hashes, concatenated."""
    chains: list[ChainFacts]
    books: Books
    checkpoints: list[tuple[int, Row, dict[str, Any]]]
    """(index in the chunk, row without its state, fields) of each checkpoint."""
    levels: list[bytes]
    """The Merkle nodes above its leaves (``merkle.subtree_levels``)."""


@dataclass(frozen=True)
class ChunkSetup:
    """What a worker needs to check any chunk: every key the log names (checked in order by
    the parent), the log id, the snapshots' newest versions and whether rounds re-run."""

    raw_keys: dict[str, bytes]
    log_id: bytes | None = None
    wanted: dict[str, int] = field(default_factory=dict)
    """Aggregate id -> newest snapshot version: those events go back to the parent whole
    (the snapshot checks replay them); every other row goes back without its state."""
    reexecute: bool = True


FIELDS = (
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
    "digest",
    "log_id",
    "public_key",
    "old_kid",
    "proof",
    "legacy",
)
EXTRACT_TOPICS = frozenset(
    (
        contracts.CHECKPOINT_SEALED,
        contracts.SESSION_CLOSED,
        contracts.SESSION_OPENED,
        contracts.ACCOUNT_OPENED,
        contracts.REQUEST_ACCEPTED,
        *TRUST_TOPICS,
    )
)


def extract(payload: bytes) -> dict[str, Any]:
    """The fields the parent checks, exactly as ``json.loads`` reads them (raises
    ``ValueError`` or ``TypeError`` where reading them with it would). orjson reads them
    three to four times faster; it reads an integer beyond 64 bits as a float and refuses
    NaN, Infinity and lone surrogates, so a payload it refuses, or whose fields hold a
    float (croupier's events hold none), is read by the standard library instead."""
    try:
        doc = orjson.loads(payload)
    except orjson.JSONDecodeError:
        doc = json.loads(payload)
        return {k: doc[k] for k in FIELDS if k in doc}
    fields = {k: doc[k] for k in FIELDS if k in doc}
    if _has_float(fields):
        doc = json.loads(payload)
        return {k: doc[k] for k in FIELDS if k in doc}
    return fields


_SCALARS = frozenset((str, int, bool, type(None)))


def _has_float(value: Any) -> bool:
    """Whether a float is anywhere in ``value`` (plain loops: a generator per level cost
    as much as the JSON reading itself)."""
    t = type(value)
    if t is float:
        return True
    if t is dict:
        value = value.values()
    elif t is not list:
        return False
    for v in value:  # noqa: SIM110 (a generator here is what cost the time)
        if type(v) not in _SCALARS and _has_float(v):
            return True
    return False


def _malformed(row: Row) -> Status | None:
    """The check a non-canonical row fails (None for a well-formed row)."""
    if type(row.notification_id) is not int or not 1 <= row.notification_id <= MAX_ROW_ID:
        return Status.ROW_ID
    if row.originator_id.startswith(NON_CANONICAL):
        return Status.ROW_ORIGINATOR_ID
    if type(row.version) is not int or not 1 <= row.version <= envelope.MAX_VERSION:
        return Status.ROW_VERSION
    if type(row.topic) is not str:
        return Status.ROW_TOPIC
    if not isinstance(row.state, bytes):  # e.g. text written into the state column
        return Status.ENVELOPE
    return None


class _Pending(NamedTuple):
    """A row whose signature is to be checked."""

    position: int
    """Its index in the chunk."""
    kid: str
    prev_hash: bytes
    signature: bytes
    payload: bytes
    message: bytes
    format: int
    signed: bytes = b""
    """What the signature covers when it is not ``message``: a format 3 row's batch
    message (``ledger.envelope.batch_of``)."""
    event_hash: bytes = b""
    """A format 3 row's event hash (its message's), known before the signature."""


class ChunkChecker:
    """A chunk's row checks with one setup's keys (built once per setup)."""

    def __init__(self, setup: ChunkSetup) -> None:
        self.setup = setup
        self.keys = {
            kid: Ed25519PublicKey.from_public_bytes(raw) for kid, raw in setup.raw_keys.items()
        }

    def check(self, rows: list[Row]) -> tuple[list[Checked], ChunkGames | None]:
        """Each row's form and signature (against the key it names), and the chunk's game
        rows reduced for re-execution (``audit_cli.reexec.chunk_games``)."""
        payloads: dict[int, bytes] = {}
        results = self._check_rows(rows, payloads)
        games = chunk_games(rows, results, payloads) if self.setup.reexecute else None
        return results, games

    def _check_rows(self, rows: list[Row], payloads: dict[int, bytes]) -> list[Checked]:
        """Every row's signing message is built first and the signatures are then checked
        one after another in a tight loop: interleaving the per-row Python with each
        Ed25519 check cost 15-20 us a row more (the check's code and tables no longer warm
        in the core's caches). ``payloads`` gets the game rows' payloads by index."""
        results: list[Checked | None] = []
        pending: list[_Pending] = []
        log_id = self.setup.log_id or bytes(16)
        decode, row_message = envelope.decode, envelope.row_message
        leaf_hash, sha256, pack = merkle.leaf_hash, hashlib.sha256, struct.pack
        # A format 2 envelope is read here, its message built as ``envelope.signing_message``
        # builds it (byte for byte; 3.5 us a row less than the two calls): the same bytes
        # and the same errors. Anything else goes through the envelope module.
        prefix = envelope.message_prefix(log_id) if len(log_id) == 16 else None
        magic = envelope.MAGIC
        topics: dict[str, bytes] = {}
        for i, row in enumerate(rows):
            bad = _malformed(row)
            if bad is not None:
                leaf = leaf_hash(repr(tuple(row)).encode())
                results.append(Checked(bad, b"", b"", leaf, None, "", 0))
                continue
            state = row.state
            try:
                if (
                    prefix is not None
                    and state[:5] == magic
                    and len(state) > 5
                    and len(state) >= 102 + state[5]
                ):
                    n = state[5]
                    p = 6 + n
                    kid_bytes = state[6:p]
                    if not kid_bytes.isascii():
                        raise envelope.EnvelopeError("key id is not ascii")
                    oid = bytes.fromhex(row.originator_id.replace("-", ""))
                    if len(oid) != 16:  # (signing_message refuses it: not a UUID)
                        raise ValueError(f"{row.originator_id!r} is not a UUID")
                    topic = topics.get(row.topic)
                    if topic is None:
                        t = row.topic.encode()
                        topic = topics[row.topic] = pack(">H", len(t)) + t
                    payload = state[p + 96 :]
                    prev = state[p : p + 32]
                    msg = b"".join(
                        (
                            prefix,
                            oid,
                            pack(">Q", row.version),
                            topic,
                            sha256(payload).digest(),
                            prev,
                            state[5:p],
                        )
                    )
                    kid = kid_bytes.decode("ascii")
                    pending.append(_Pending(i, kid, prev, state[p + 32 : p + 96], payload, msg, 2))
                else:
                    env = decode(state)
                    msg = row_message(
                        bytes.fromhex(row.originator_id.replace("-", "")),
                        row.version,
                        row.topic,
                        env,
                        log_id,
                    )
                    signed, h = b"", b""
                    if env.format == 3:
                        h, signed = envelope.batch_of(env, msg, log_id)
                    pending.append(
                        _Pending(
                            i,
                            env.kid,
                            env.prev_hash,
                            env.signature,
                            env.payload,
                            msg,
                            env.format,
                            signed,
                            h,
                        )
                    )
            except (envelope.EnvelopeError, ValueError, UnicodeError):
                results.append(Checked(Status.ENVELOPE, b"", b"", leaf_hash(state), None, "", 0))
                continue
            results.append(None)
        statuses = self._signatures(pending)
        event_hash, intern = envelope.event_hash, sys.intern
        games = self.setup.reexecute
        for (i, kid, prev, signature, payload, msg, fmt, _, known), status in zip(
            pending, statuses, strict=True
        ):
            h = known or event_hash(msg, signature)
            if games and is_game_topic(rows[i].topic):
                payloads[i] = payload  # for ``chunk_games``, on this same chunk
            fields = None
            if rows[i].topic in EXTRACT_TOPICS or b'"movement"' in payload:
                try:
                    fields = extract(payload)
                except (ValueError, TypeError):
                    fields = {"unparseable": True}
            # Interned, so the results pickled back to the parent carry each key id once.
            results[i] = Checked(status, h, prev, leaf_hash(h), fields, intern(kid), fmt)
        return results  # type: ignore[return-value]  # every None was replaced above

    def _signatures(self, pending: list[_Pending]) -> list[Status]:
        """``ok``, ``signature`` or ``unknown-key`` for each row to check (a format 3
        batch's signature is verified once for all of its rows in the chunk)."""
        keys = self.keys
        statuses: list[Status] = []
        append = statuses.append
        ok, bad, unknown = Status.OK, Status.SIGNATURE, Status.UNKNOWN_KEY
        batches: dict[tuple[str, bytes, bytes], Status] = {}
        for p in pending:
            key = keys.get(p.kid)
            if key is None:
                append(unknown)
                continue
            if p.signed:
                entry = (p.kid, p.signed, p.signature)
                known = batches.get(entry)
                if known is None:
                    try:
                        key.verify(p.signature, p.signed)
                        known = ok
                    except InvalidSignature:
                        known = bad
                    batches[entry] = known
                append(known)
                continue
            try:
                key.verify(p.signature, p.message)
                append(ok)
            except InvalidSignature:
                append(bad)
        return statuses


def _ignore(check: str, message: str, row: Row) -> None:
    raise _Unsettled


class _Unsettled(Exception):
    """A chunk's books would report something: the parent must see every row."""


def summarise(
    rows: list[Row], results: list[Checked], wanted: dict[str, int]
) -> ChunkSummary | None:
    """The chunk as boundary facts, or None when the parent must see every row: a row
    that is not ok (any finding), a format 1 row, a trust row, two key ids, a row a
    snapshot check replays (``wanted``), a chain that does not link inside the chunk, or
    books that report anything. What is left to check (the first link of each aggregate,
    the key valid here, the gap before the first row, the books against the log's before)
    only the parent knows; when that fails, it checks the chunk again row by row
    (``Checker.feed_summary``), so the findings are exactly the same."""
    signer = ""
    leaves: list[bytes] = []
    firsts: dict[str, tuple[int, bytes]] = {}
    lasts: dict[str, tuple[int, bytes]] = {}
    books = Books(relative=True)
    checkpoints: list[tuple[int, Row, dict[str, Any]]] = []
    last_id = -1
    consecutive = True
    ok = Status.OK
    try:
        for i, (row, (status, h, prev, leaf, fields, kid, fmt)) in enumerate(
            zip(rows, results, strict=True)
        ):
            n, oid, version, topic, _ = row
            if status is not ok or fmt < 2 or topic in TRUST_TOPICS:
                return None
            if kid != signer:
                if signer:
                    return None
                signer = kid
            if wanted:
                newest = wanted.get(oid)
                if newest is not None and version <= newest:
                    return None
            if n != last_id + 1 and i:
                consecutive = False
            last_id = n
            last = lasts.get(oid)
            if last is None:
                firsts[oid] = (version, prev)
            elif version != last[0] + 1 or prev != last[1]:
                return None
            lasts[oid] = (version, h)
            leaves.append(leaf)
            if fields is None:
                continue
            if topic == contracts.CHECKPOINT_SEALED:
                checkpoints.append((i, Row(n, oid, version, topic, b""), fields))
            else:
                books.record(row, fields, "", _ignore, named_requests=True)
    except _Unsettled:
        return None
    return ChunkSummary(
        rows[0].notification_id,
        last_id,
        consecutive,
        signer,
        b"".join(leaves),
        [ChainFacts(oid, *first, *lasts[oid]) for oid, first in firsts.items()],
        books,
        checkpoints,
        merkle.subtree_levels(leaves),
    )
