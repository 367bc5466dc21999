"""The signed envelope every stored event carries, and the checkpoint tree-head signature.

Auditors can re-implement this module from its docstring alone; it imports nothing from
eventsourcing, and of croupier only ``ledger.merkle`` (RFC 9162 hashes, standard library).

Stored ``state`` column of an event row, format 2 (one signature an event: the key
history's rows and snapshots always, every event of a server before format 3, below)::

    b"CRPS" | 0x02 | len(kid):u8 | kid (ascii) | prev_hash[32] | signature[64] | payload

``payload`` is the JSON the eventsourcing transcoder produced for the event. The Ed25519
signature covers the signing message::

    b"croupier-event/v2\\x00" | log_id[16] | originator_id (16 UUID bytes) | version:u64be
      | len(topic):u16be | topic (utf-8) | SHA-256(payload) | prev_hash | len(kid):u8 | kid

``log_id`` is the 16 random bytes fixed by the log's genesis event (below): a row copied
from another deployment's log never verifies here, even when both share a signing key.
``version`` is an integer 1 ≤ version < 2^63, the row id (notification id) an integer
1 ≤ id ≤ 2^48, the originator id a canonical UUID (on SQLite the library's 32 lower-case
hex digits), the topic UTF-8 text; anything else is not a valid row.

``prev_hash`` is the event hash of the previous version of the same aggregate (32 zero
bytes for version 1). The event hash is ``SHA-256(b"croupier-event-hash/v1\\x00" |
message | signature)``: it commits to every column of the row, so it is also the entry
of the event's leaf in the Merkle tree (RFC 9162 leaf hash ``SHA-256(0x00 | event_hash)``).

**Format 3** (``0x03``, written by every current server for events; snapshots and the
key history's rows stay format 2): one signature per *batch* over the Merkle root of the
batch's event hashes, and each row carries its path to that root, so every row still
verifies on its own. A batch is a run of consecutive events of one save (one
transaction); the server cuts a save into runs of at most 16 (``ledger.store``), the
format allows up to 2^32 - 1::

    b"CRPS" | 0x03 | len(kid):u8 | kid | prev_hash[32] | signature[64]
      | index:u32be | size:u32be | count:u8 | path[32 * count] | payload

The row's message is the format 2 message under the domain ``b"croupier-event/v3\\x00"``
and its event hash ``SHA-256(b"croupier-event-hash/v1\\x00" | message)`` (the message
alone: the next version of an aggregate in the same batch links it before the batch is
signed; the domain keeps it apart from every format 2 hash). The batch's leaves are
RFC 9162 leaf hashes of its rows' event hashes, in the order written, ``index`` is the
row's leaf (0-based) in a tree of ``size`` leaves and ``path`` its audit path (RFC 9162
§2.1.3.1, nearest sibling first). The signature is Ed25519 over::

    b"croupier-batch/v1\\x00" | log_id[16] | size:u32be | root[32] | len(kid):u8 | kid

where ``root`` is what the path leads to from the row's leaf (§2.1.3.2). A row is valid
only when that signature verifies under the key valid at the row's position; a verifier
that has verified one row of a batch may remember the (message, signature) pair for the
others. Changing any byte of a row changes its message (its hash, then the root the path
leads to) or its signature or path, and the signature no longer verifies.

A checkpoint's tree head (format 2) is signed over::

    b"croupier-checkpoint/v2\\x00" | log_id[16] | tree_size:u64be | root_hash[32]
      | timestamp_ms:u64be | len(kid):u8 | kid

Key trust is itself in the log, in the aggregate ``uuid5(NAMESPACE_URL, "croupier:log-trust")``
(30178694-f6ef-5635-a87c-24a18c0af24d; see ``ledger.trust``):

- version 1, topic ``croupier/trust/genesis@1``: payload fields ``log_id`` (32 hex
  digits), ``kid``, ``public_key`` (64 hex digits, raw Ed25519) and ``legacy`` (null, or
  for a log upgraded from format 1 ``{"tree_size", "root_hash", "last_notification_id",
  "keys": {kid: public key hex}}``: the number of format 1 rows before the genesis, the
  RFC 9162 root over their leaves, the id of the last one, and the keys that signed them).
  It must be the first format 2 row, at position ``tree_size`` (0 for a new log), and is
  signed by the key it names, under the log id it names. Auditors pin
  that key's fingerprint, ``SHA-256(raw public key)`` in hex (``audit-cli keys`` prints it).
- versions 2, 3, …, topic ``croupier/trust/rotated@1``: fields ``old_kid``, ``kid``,
  ``public_key`` and ``proof``, signed (as every row) by the key valid until then, and
  ``proof`` = the new key's signature over ``b"croupier-key-rotation/v1\\x00" | log_id
  | len(old_kid):u8 | old_kid | new public key[32]`` (it holds the key it names).

A **snapshot** (``ledger.snapshots``: the state of a long-lived aggregate at one version,
stored in the snapshot table ``stored_snapshots`` on SQLite, ``casino_snapshots`` on
PostgreSQL, never in the log) has the same envelope, with ``prev_hash`` = the event hash of
the event at the snapshot's version (the last event it summarises) and the message of an
event under its own domain, so no snapshot can pass for an event or an event for one::

    b"croupier-snapshot/v1\x00" | log_id[16] | originator_id | version:u64be
      | len(topic):u16be | topic | SHA-256(payload) | event hash of version | len(kid):u8 | kid

It is valid only if signed by the key that signed the event it summarises, under the
log id, and if its state equals the replay of that aggregate's events up to its version;
anything else is refused on load (the events are replayed instead) and reported by
``audit-cli verify``.

A row (checkpoints included) is valid only if signed by the key valid at its position in
notification order: the genesis key from the genesis row on, and each rotation's new key
for the rows *after* the rotation row; a retired key signs nothing after its retirement.

Format 1 (``0x01``, logs written before key trust existed) has the same layout; its
message is the format 2 message with domain ``b"croupier-event/v1\\x00"`` and without
``log_id``, and its tree heads use ``b"croupier-checkpoint/v1\\x00"`` without ``log_id``.
Format 1 rows are valid only as the *legacy prefix* of a log: the rows before its genesis
event, whose count and RFC 9162 root the genesis event records in ``legacy`` (signed by
the pinned key), so no format 1 row can be accepted after the genesis. A log with format 1
rows and no genesis yet can only be checked against a local keyring (unpinned).
"""

from __future__ import annotations

import hashlib
import struct
from typing import NamedTuple
from uuid import NAMESPACE_URL, UUID, uuid5

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from ledger import merkle

MAGIC = b"CRPS\x02"
MAGIC_V1 = b"CRPS\x01"
MAGIC_V3 = b"CRPS\x03"
GENESIS = bytes(32)
MAX_VERSION = 2**63 - 1
MAX_ROW_ID = 2**48
TRUST_ID = uuid5(NAMESPACE_URL, "croupier:log-trust")  # 30178694-f6ef-5635-a87c-24a18c0af24d
GENESIS_TOPIC = "croupier/trust/genesis@1"
ROTATED_TOPIC = "croupier/trust/rotated@1"
TRUST_TOPICS = frozenset((GENESIS_TOPIC, ROTATED_TOPIC))
"""The key history's rows: always format 2, each signed alone."""
_EVENT_DOMAIN = {
    1: b"croupier-event/v1\x00",
    2: b"croupier-event/v2\x00",
    3: b"croupier-event/v3\x00",
}
_BATCH_DOMAIN = b"croupier-batch/v1\x00"
MAX_BATCH = 2**32 - 1
"""The most events one batch signature (format 3) covers."""
_PATH_MAX = 32
"""The longest audit path a batch of up to ``MAX_BATCH`` events has."""
_SNAPSHOT_DOMAIN = b"croupier-snapshot/v1\x00"
_HASH_DOMAIN = b"croupier-event-hash/v1\x00"
_HEAD_DOMAIN = {1: b"croupier-checkpoint/v1\x00", 2: b"croupier-checkpoint/v2\x00"}
_ROTATION_DOMAIN = b"croupier-key-rotation/v1\x00"


class EnvelopeError(ValueError):
    """The stored bytes are not a well-formed envelope."""


class Envelope(NamedTuple):
    """A decoded envelope (a named tuple: the verifier builds one per row, so it is cheap)."""

    kid: str
    prev_hash: bytes
    signature: bytes
    payload: bytes
    format: int = 2
    batch: bytes = b""
    """Format 3: the row's place in its batch, ``index:u32be | size:u32be | count:u8 |
    path`` (``count`` hashes of 32 bytes); empty for formats 1 and 2."""


def _uuid_bytes(originator_id: UUID | str | bytes) -> bytes:
    if isinstance(originator_id, bytes) and len(originator_id) == 16:
        return originator_id
    if isinstance(originator_id, UUID):
        return originator_id.bytes
    return UUID(str(originator_id)).bytes


def signing_message(
    originator_id: UUID | str | bytes,
    version: int,
    topic: str,
    payload: bytes,
    prev_hash: bytes,
    kid: str,
    log_id: bytes | None = None,
    fmt: int | None = None,
) -> bytes:
    """Format 2 message when ``log_id`` is given, else the legacy format 1 message;
    ``fmt=3``: the format 3 message (format 2's under its own domain; needs ``log_id``)."""
    if type(version) is not int or not 1 <= version <= MAX_VERSION:
        raise EnvelopeError(f"version {version!r} is not an integer from 1 to 2^63-1")
    t = topic.encode()
    k = kid.encode("ascii")
    if log_id is not None and len(log_id) != 16:
        raise EnvelopeError("log id must be 16 bytes")
    if fmt == 3 and log_id is None:
        raise EnvelopeError("a format 3 envelope needs the log id of its genesis")
    return b"".join(
        (
            _EVENT_DOMAIN[fmt if fmt == 3 else 1 if log_id is None else 2],
            log_id or b"",
            _uuid_bytes(originator_id),
            struct.pack(">QH", version, len(t)),
            t,
            hashlib.sha256(payload).digest(),
            prev_hash,
            bytes((len(k),)),
            k,
        )
    )


def message_prefix(log_id: bytes) -> bytes:
    """What every format 2 signing message of the log ``log_id`` starts with: the domain
    and the log id (a verifier that builds the rest of each row's message itself starts
    from these bytes; :func:`signing_message` builds the whole)."""
    if len(log_id) != 16:
        raise EnvelopeError("log id must be 16 bytes")
    return _EVENT_DOMAIN[2] + log_id


def snapshot_message(
    originator_id: UUID | str | bytes,
    version: int,
    topic: str,
    payload: bytes,
    summarised: bytes,
    kid: str,
    log_id: bytes,
) -> bytes:
    """What a snapshot's signature covers: an event's format 2 message under the snapshot
    domain, with the event hash of the event it summarises in place of ``prev_hash``."""
    msg = signing_message(originator_id, version, topic, payload, summarised, kid, log_id)
    return _SNAPSHOT_DOMAIN + msg[len(_EVENT_DOMAIN[2]) :]


def seal_snapshot(
    key: Ed25519PrivateKey,
    kid: str,
    originator_id: UUID | str,
    version: int,
    topic: str,
    payload: bytes,
    summarised: bytes,
    log_id: bytes,
) -> bytes:
    """The stored state bytes of a snapshot (format 2 envelope, ``prev_hash`` =
    ``summarised``, the event hash of the event at ``version``)."""
    msg = snapshot_message(originator_id, version, topic, payload, summarised, kid, log_id)
    return encode(Envelope(kid, summarised, key.sign(msg), payload, 2))


def check_snapshot(
    public_key: Ed25519PublicKey,
    originator_id: UUID | str,
    version: int,
    topic: str,
    env: Envelope,
    log_id: bytes,
) -> None:
    """Verify a decoded snapshot envelope's signature (``InvalidSignature`` if it does not,
    ``EnvelopeError`` if it cannot be a snapshot). Whether ``env.prev_hash`` is the hash
    of the event at ``version`` is the caller's check."""
    if env.format != 2:
        raise EnvelopeError("a snapshot is a format 2 envelope")
    msg = snapshot_message(
        originator_id, version, topic, env.payload, env.prev_hash, env.kid, log_id
    )
    public_key.verify(env.signature, msg)


def event_hash(message: bytes, signature: bytes) -> bytes:
    return hashlib.sha256(_HASH_DOMAIN + message + signature).digest()


def encode(env: Envelope) -> bytes:
    k = env.kid.encode("ascii")
    magic = _MAGICS[env.format]
    return magic + bytes((len(k),)) + k + env.prev_hash + env.signature + env.batch + env.payload


_MAGICS = {1: MAGIC_V1, 2: MAGIC, 3: MAGIC_V3}
_FORMATS = {m: f for f, m in _MAGICS.items()}


def decode(state: bytes) -> Envelope:
    fmt = _FORMATS.get(state[:5])
    if fmt is None:
        raise EnvelopeError("not a croupier envelope (bad magic)")
    if len(state) < len(MAGIC) + 1:
        raise EnvelopeError("truncated envelope")
    n = state[len(MAGIC)]
    start = len(MAGIC) + 1
    if len(state) < start + n + 32 + 64:
        raise EnvelopeError("truncated envelope")
    try:
        kid = state[start : start + n].decode("ascii")
    except UnicodeDecodeError as e:
        raise EnvelopeError("key id is not ascii") from e
    p = start + n
    if fmt != 3:
        return Envelope(kid, state[p : p + 32], state[p + 32 : p + 96], state[p + 96 :], fmt)
    q = p + 96
    if len(state) < q + 9:
        raise EnvelopeError("truncated envelope")
    end = q + 9 + 32 * state[q + 8]
    if len(state) < end:
        raise EnvelopeError("truncated envelope")
    return Envelope(kid, state[p : p + 32], state[p + 32 : q], state[end:], 3, state[q:end])


def batch_place(batch: bytes) -> tuple[int, int, list[bytes]]:
    """(index, size, audit path) of a format 3 envelope's ``batch`` field."""
    if len(batch) < 9 or len(batch) != 9 + 32 * batch[8]:
        raise EnvelopeError("malformed batch place")
    index, size = struct.unpack(">II", batch[:8])
    path = [batch[i : i + 32] for i in range(9, len(batch), 32)]
    if not 0 <= index < size or len(path) > _PATH_MAX:
        raise EnvelopeError(f"leaf {index} is not in a batch of {size}")
    return index, size, path


def batch_message(log_id: bytes, size: int, root: bytes, kid: str) -> bytes:
    """What a format 3 batch's one signature covers (see the module's docstring)."""
    k = kid.encode("ascii")
    if len(log_id) != 16:
        raise EnvelopeError("log id must be 16 bytes")
    return _BATCH_DOMAIN + log_id + struct.pack(">I", size) + root + bytes((len(k),)) + k


def seal(
    key: Ed25519PrivateKey,
    kid: str,
    originator_id: UUID | str,
    version: int,
    topic: str,
    payload: bytes,
    prev_hash: bytes,
    log_id: bytes | None = None,
) -> tuple[bytes, bytes]:
    """Return (stored state bytes, event hash); format 2 with ``log_id``, else format 1."""
    msg = signing_message(originator_id, version, topic, payload, prev_hash, kid, log_id)
    sig = key.sign(msg)
    fmt = 1 if log_id is None else 2
    return encode(Envelope(kid, prev_hash, sig, payload, fmt)), event_hash(msg, sig)


class Unsealed(NamedTuple):
    """One event of a batch to seal: what its format 3 message covers."""

    originator_id: UUID | str | bytes
    version: int
    topic: str
    payload: bytes
    prev_hash: bytes


def message_hash(message: bytes) -> bytes:
    """A format 3 event's hash: of its message alone (its batch's signature and path are
    not in it, so an event can link the next version of its aggregate in the same batch
    before the batch is signed)."""
    return hashlib.sha256(_HASH_DOMAIN + message).digest()


def event_hash_v3(
    originator_id: UUID | str | bytes,
    version: int,
    topic: str,
    payload: bytes,
    prev_hash: bytes,
    kid: str,
    log_id: bytes,
) -> bytes:
    """The event hash a format 3 row of these columns will have (its message's hash)."""
    return message_hash(
        signing_message(originator_id, version, topic, payload, prev_hash, kid, log_id, 3)
    )


def seal_batch(
    key: Ed25519PrivateKey,
    kid: str,
    events: list[Unsealed],
    log_id: bytes,
    hashes: list[bytes] | None = None,
) -> list[tuple[bytes, bytes]]:
    """(stored state bytes, event hash) of each event, format 3: one signature over the
    Merkle root of the batch's events. ``hashes``: their event hashes when the caller
    has them already (each ``event_hash_v3`` of the same columns)."""
    if not events or len(events) > MAX_BATCH:
        raise EnvelopeError(f"a batch holds 1 to {MAX_BATCH} events, not {len(events)}")
    if hashes is None:
        hashes = [
            event_hash_v3(e.originator_id, e.version, e.topic, e.payload, e.prev_hash, kid, log_id)
            for e in events
        ]
    root, paths = merkle.all_inclusion_proofs([merkle.leaf_hash(h) for h in hashes])
    size = len(events)
    sig = key.sign(batch_message(log_id, size, root, kid))
    k = kid.encode("ascii")
    head = MAGIC_V3 + bytes((len(k),)) + k
    out = []
    pack = struct.pack
    for i, (e, h, path) in enumerate(zip(events, hashes, paths, strict=True)):
        place = pack(">IIB", i, size, len(path)) + b"".join(path)
        out.append((head + e.prev_hash + sig + place + e.payload, h))
    return out


def row_message(
    originator_id: UUID | str | bytes,
    version: int,
    topic: str,
    env: Envelope,
    log_id: bytes | None = None,
) -> bytes:
    """The signing message of a decoded row of its own format (1, 2 or 3)."""
    fmt = env.format
    return signing_message(
        originator_id,
        version,
        topic,
        env.payload,
        env.prev_hash,
        env.kid,
        None if fmt == 1 else log_id,
        3 if fmt == 3 else None,
    )


def hash_of(
    originator_id: UUID | str | bytes,
    version: int,
    topic: str,
    env: Envelope,
    log_id: bytes | None = None,
) -> bytes:
    """The event hash of a decoded row of any format, its signature not checked (what
    the next version of its aggregate links as ``prev_hash``)."""
    msg = row_message(originator_id, version, topic, env, log_id)
    return message_hash(msg) if env.format == 3 else event_hash(msg, env.signature)


def batch_of(env: Envelope, message: bytes, log_id: bytes) -> tuple[bytes, bytes]:
    """A format 3 row's (event hash, the batch message its signature must verify over):
    the root its path leads to from its message. ``EnvelopeError`` if the path cannot be
    one of a tree of its batch's size."""
    index, size, path = batch_place(env.batch)
    h = message_hash(message)
    root = merkle.inclusion_root(merkle.leaf_hash(h), index, size, path)
    if root is None:
        raise EnvelopeError(f"the path of leaf {index} is not one of a batch of {size}")
    return h, batch_message(log_id, size, root, env.kid)


class VerifiedBatches:
    """The batch signatures (format 3) already verified, so a batch's rows cost one
    Ed25519 verification between them: a bounded set of (batch message, signature) that
    verified under the key now trusted for their key id. Only successes are kept."""

    def __init__(self, size: int = 4_096) -> None:
        self.size = size
        self._known: dict[tuple[bytes, bytes], Ed25519PublicKey] = {}

    def verify(self, public_key: Ed25519PublicKey, message: bytes, signature: bytes) -> None:
        """``InvalidSignature`` unless it verifies (or verified before under this key)."""
        entry = (message, signature)
        if self._known.get(entry) is public_key:
            return
        public_key.verify(signature, message)
        known = self._known
        if len(known) >= self.size:
            try:
                del known[next(iter(known))]
            except (KeyError, StopIteration, RuntimeError):
                known.clear()  # another thread changed it meanwhile: start again
        known[entry] = public_key


def check(
    public_key: Ed25519PublicKey,
    originator_id: UUID | str | bytes,
    version: int,
    topic: str,
    env: Envelope,
    log_id: bytes | None = None,
    batches: VerifiedBatches | None = None,
) -> bytes:
    """Verify the signature of a decoded envelope; return its event hash.

    A format 2 or 3 envelope needs the log id. Raises ``InvalidSignature`` when it does
    not verify, ``EnvelopeError`` when the row cannot be a valid row at all. A format 3
    row's batch signature is verified once per ``batches`` (each time without it).
    """
    if env.format >= 2 and log_id is None:
        raise EnvelopeError(f"a format {env.format} envelope needs the log id of its genesis")
    msg = row_message(originator_id, version, topic, env, log_id)
    if env.format == 3:
        assert log_id is not None
        h, signed = batch_of(env, msg, log_id)
        if batches is None:
            public_key.verify(env.signature, signed)
        else:
            batches.verify(public_key, signed, env.signature)
        return h
    public_key.verify(env.signature, msg)
    return event_hash(msg, env.signature)


def tree_head_message(
    size: int, root: bytes, timestamp_ms: int, kid: str, log_id: bytes | None = None
) -> bytes:
    """Format 2 tree head when ``log_id`` is given, else format 1."""
    k = kid.encode("ascii")
    return (
        _HEAD_DOMAIN[1 if log_id is None else 2]
        + (log_id or b"")
        + struct.pack(">Q", size)
        + root
        + struct.pack(">Q", timestamp_ms)
        + (bytes((len(k),)) + k)
    )


def verify_tree_head(
    public_key: Ed25519PublicKey,
    size: int,
    root: bytes,
    timestamp_ms: int,
    kid: str,
    sig: bytes,
    log_id: bytes | None = None,
) -> bool:
    try:
        public_key.verify(sig, tree_head_message(size, root, timestamp_ms, kid, log_id))
    except (InvalidSignature, struct.error, ValueError):
        return False
    return True


def rotation_message(log_id: bytes, old_kid: str, new_public_key: bytes) -> bytes:
    """What the new key signs in a rotation event (proof that its holder agreed)."""
    k = old_kid.encode("ascii")
    return _ROTATION_DOMAIN + log_id + bytes((len(k),)) + k + new_public_key


__all__ = [
    "GENESIS",
    "GENESIS_TOPIC",
    "ROTATED_TOPIC",
    "TRUST_ID",
    "TRUST_TOPICS",
    "Envelope",
    "EnvelopeError",
    "InvalidSignature",
    "Unsealed",
    "VerifiedBatches",
    "batch_message",
    "batch_of",
    "batch_place",
    "check",
    "check_snapshot",
    "decode",
    "encode",
    "event_hash",
    "event_hash_v3",
    "hash_of",
    "message_hash",
    "message_prefix",
    "rotation_message",
    "row_message",
    "seal",
    "seal_batch",
    "seal_snapshot",
    "signing_message",
    "snapshot_message",
    "tree_head_message",
    "verify_tree_head",
]
