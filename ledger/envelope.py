"""The signed envelope every stored event carries, and the checkpoint tree-head signature.

Auditors can re-implement this module from its docstring alone; it imports nothing from
eventsourcing or the rest of croupier.

Stored ``state`` column of every event row::

    b"CRPS" | 0x01 | len(kid):u8 | kid (ascii) | prev_hash[32] | signature[64] | payload

``payload`` is the JSON the eventsourcing transcoder produced for the event. The Ed25519
signature covers the signing message::

    b"croupier-event/v1\\x00" | originator_id (16 UUID bytes) | version:u64be
      | len(topic):u16be | topic (utf-8) | SHA-256(payload) | prev_hash | len(kid):u8 | kid

``prev_hash`` is the event hash of the previous version of the same aggregate (32 zero
bytes for version 1). The event hash is ``SHA-256(b"croupier-event-hash/v1\\x00" |
message | signature)``: it commits to every column of the row, so it is also the entry
of the event's leaf in the Merkle tree (RFC 9162 leaf hash ``SHA-256(0x00 | event_hash)``).

A checkpoint's tree head is signed over::

    b"croupier-checkpoint/v1\\x00" | tree_size:u64be | root_hash[32] | timestamp_ms:u64be
      | len(kid):u8 | kid
"""

from __future__ import annotations

import hashlib
import struct
from typing import NamedTuple
from uuid import UUID

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

MAGIC = b"CRPS\x01"
GENESIS = bytes(32)
_EVENT_DOMAIN = b"croupier-event/v1\x00"
_HASH_DOMAIN = b"croupier-event-hash/v1\x00"
_HEAD_DOMAIN = b"croupier-checkpoint/v1\x00"


class EnvelopeError(ValueError):
    """The stored bytes are not a well-formed envelope."""


class Envelope(NamedTuple):
    """A decoded envelope (a named tuple: the verifier builds one per row, so it is cheap)."""

    kid: str
    prev_hash: bytes
    signature: bytes
    payload: bytes


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
) -> bytes:
    t = topic.encode()
    k = kid.encode("ascii")
    return b"".join(
        (
            _EVENT_DOMAIN,
            _uuid_bytes(originator_id),
            struct.pack(">QH", version, len(t)),
            t,
            hashlib.sha256(payload).digest(),
            prev_hash,
            bytes((len(k),)),
            k,
        )
    )


def event_hash(message: bytes, signature: bytes) -> bytes:
    return hashlib.sha256(_HASH_DOMAIN + message + signature).digest()


def encode(env: Envelope) -> bytes:
    k = env.kid.encode("ascii")
    return MAGIC + bytes((len(k),)) + k + env.prev_hash + env.signature + env.payload


def decode(state: bytes) -> Envelope:
    if not state.startswith(MAGIC) or len(state) < len(MAGIC) + 1:
        raise EnvelopeError("not a croupier envelope (bad magic)")
    n = state[len(MAGIC)]
    start = len(MAGIC) + 1
    if len(state) < start + n + 32 + 64:
        raise EnvelopeError("truncated envelope")
    try:
        kid = state[start : start + n].decode("ascii")
    except UnicodeDecodeError as e:
        raise EnvelopeError("key id is not ascii") from e
    p = start + n
    return Envelope(kid, state[p : p + 32], state[p + 32 : p + 96], state[p + 96 :])


def seal(
    key: Ed25519PrivateKey,
    kid: str,
    originator_id: UUID | str,
    version: int,
    topic: str,
    payload: bytes,
    prev_hash: bytes,
) -> tuple[bytes, bytes]:
    """Return (stored state bytes, event hash)."""
    msg = signing_message(originator_id, version, topic, payload, prev_hash, kid)
    sig = key.sign(msg)
    return encode(Envelope(kid, prev_hash, sig, payload)), event_hash(msg, sig)


def check(
    public_key: Ed25519PublicKey,
    originator_id: UUID | str,
    version: int,
    topic: str,
    env: Envelope,
) -> bytes:
    """Verify the signature of a decoded envelope; return its event hash.

    Raises ``cryptography.exceptions.InvalidSignature`` when it does not verify.
    """
    msg = signing_message(originator_id, version, topic, env.payload, env.prev_hash, env.kid)
    public_key.verify(env.signature, msg)
    return event_hash(msg, env.signature)


def tree_head_message(size: int, root: bytes, timestamp_ms: int, kid: str) -> bytes:
    k = kid.encode("ascii")
    return (
        _HEAD_DOMAIN
        + struct.pack(">Q", size)
        + root
        + struct.pack(">Q", timestamp_ms)
        + (bytes((len(k),)) + k)
    )


def verify_tree_head(
    public_key: Ed25519PublicKey, size: int, root: bytes, timestamp_ms: int, kid: str, sig: bytes
) -> bool:
    try:
        public_key.verify(sig, tree_head_message(size, root, timestamp_ms, kid))
    except InvalidSignature:
        return False
    return True


__all__ = [
    "GENESIS",
    "Envelope",
    "EnvelopeError",
    "InvalidSignature",
    "check",
    "decode",
    "encode",
    "event_hash",
    "seal",
    "signing_message",
    "tree_head_message",
    "verify_tree_head",
]
