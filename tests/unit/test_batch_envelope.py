"""Format 3 envelopes: one Ed25519 signature over the Merkle root of a batch's events, each
row carrying its path to that root (``ledger.envelope``)."""

from __future__ import annotations

import struct
from uuid import UUID, uuid4

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger import envelope, merkle
from ledger.envelope import EnvelopeError, InvalidSignature, Unsealed

LOG_ID = bytes(range(16))
KID = "k1"
KEY = Ed25519PrivateKey.generate()
PUB = KEY.public_key()


def _batch(n: int, *, chained: bool = False) -> list[Unsealed]:
    """``n`` events; ``chained``: all versions of one aggregate, each linking the last."""
    if not chained:
        return [Unsealed(uuid4(), 1, "t/e@1", b'{"i":%d}' % i, envelope.GENESIS) for i in range(n)]
    oid, prev, out = uuid4(), envelope.GENESIS, []
    for v in range(1, n + 1):
        payload = b'{"v":%d}' % v
        out.append(Unsealed(oid, v, "t/e@1", payload, prev))
        prev = envelope.event_hash_v3(oid, v, "t/e@1", payload, prev, KID, LOG_ID)
    return out


def _check(e: Unsealed, state: bytes, cache: envelope.VerifiedBatches | None = None) -> bytes:
    env = envelope.decode(state)
    return envelope.check(PUB, e.originator_id, e.version, e.topic, env, LOG_ID, cache)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 33])
def test_every_row_of_a_batch_verifies_on_its_own_and_round_trips(n: int) -> None:
    events = _batch(n)
    sealed = envelope.seal_batch(KEY, KID, events, LOG_ID)
    signatures = {envelope.decode(state).signature for state, _ in sealed}
    assert len(signatures) == 1  # one signature for the whole batch
    for e, (state, h) in zip(events, sealed, strict=True):
        env = envelope.decode(state)
        assert env.format == 3 and env.payload == e.payload and env.prev_hash == e.prev_hash
        assert envelope.encode(env) == state
        assert _check(e, state) == h
        assert envelope.hash_of(e.originator_id, e.version, e.topic, env, LOG_ID) == h


def test_a_chain_inside_one_batch_links_by_the_hashes_known_before_signing() -> None:
    events = _batch(6, chained=True)
    sealed = envelope.seal_batch(KEY, KID, events, LOG_ID)
    for (_, h), nxt in zip(sealed, events[1:], strict=False):
        assert nxt.prev_hash == h


def test_any_changed_byte_of_a_row_is_refused() -> None:
    events = _batch(5)
    sealed = envelope.seal_batch(KEY, KID, events, LOG_ID)
    for e, (state, _) in zip(events, sealed, strict=True):
        for i in range(len(state)):
            bad = bytearray(state)
            bad[i] ^= 0x01
            with pytest.raises((InvalidSignature, EnvelopeError, UnicodeDecodeError)):
                _check(e, bytes(bad))


def test_a_row_does_not_verify_as_another_event_or_with_another_rows_path() -> None:
    events = _batch(4)
    sealed = envelope.seal_batch(KEY, KID, events, LOG_ID)
    a, b = envelope.decode(sealed[0][0]), envelope.decode(sealed[1][0])
    with pytest.raises((InvalidSignature, EnvelopeError)):  # b's columns, a's bytes
        envelope.check(PUB, events[1].originator_id, 1, "t/e@1", a, LOG_ID)
    swapped = a._replace(batch=b.batch)
    with pytest.raises((InvalidSignature, EnvelopeError)):
        envelope.check(PUB, events[0].originator_id, 1, "t/e@1", swapped, LOG_ID)
    other = envelope.decode(envelope.seal_batch(KEY, KID, _batch(4), LOG_ID)[0][0])
    with pytest.raises(InvalidSignature):  # another batch's signature
        envelope.check(
            PUB, events[0].originator_id, 1, "t/e@1", a._replace(signature=other.signature), LOG_ID
        )
    with pytest.raises(InvalidSignature):  # another log
        envelope.check(PUB, events[0].originator_id, 1, "t/e@1", a, bytes(16))


def test_a_format_3_row_is_not_a_format_2_row() -> None:
    e = _batch(1)[0]
    state, _ = envelope.seal_batch(KEY, KID, [e], LOG_ID)[0]
    relabelled = envelope.MAGIC + state[5:]
    with pytest.raises((InvalidSignature, EnvelopeError)):
        _check(e, relabelled)


def test_a_path_that_cannot_be_one_of_its_batch_is_malformed() -> None:
    e = _batch(1)[0]
    state, _ = envelope.seal_batch(KEY, KID, [e], LOG_ID)[0]
    env = envelope.decode(state)
    for place in (
        struct.pack(">IIB", 1, 1, 0),  # index outside the batch
        struct.pack(">IIB", 0, 0, 0),  # an empty batch
        struct.pack(">IIB", 0, 1, 1) + bytes(32),  # a path too long for one leaf
        struct.pack(">IIB", 0, 2, 0),  # too short for two
        b"\x00" * 8,  # truncated
    ):
        with pytest.raises(EnvelopeError):
            envelope.check(PUB, e.originator_id, 1, e.topic, env._replace(batch=place), LOG_ID)
    with pytest.raises(EnvelopeError):
        envelope.decode(state[: 5 + 1 + len(KID) + 96 + 8])  # cut inside the place


class _CountingKey:
    """A public key that counts its verifications."""

    def __init__(self) -> None:
        self.calls = 0

    def verify(self, signature: bytes, data: bytes) -> None:
        self.calls += 1
        PUB.verify(signature, data)


def test_a_batch_costs_one_verification_with_a_cache_and_failures_are_not_kept() -> None:
    events = _batch(9)
    sealed = envelope.seal_batch(KEY, KID, events, LOG_ID)
    counting, cache = _CountingKey(), envelope.VerifiedBatches()
    for e, (state, h) in zip(events, sealed, strict=True):
        env = envelope.decode(state)
        got = envelope.check(
            counting,  # type: ignore[arg-type]
            e.originator_id,
            e.version,
            e.topic,
            env,
            LOG_ID,
            cache,
        )
        assert got == h
    assert counting.calls == 1
    # Known good under one key is not good under another.
    other = Ed25519PrivateKey.generate().public_key()
    with pytest.raises(InvalidSignature):
        envelope.check(
            other, events[0].originator_id, 1, "t/e@1", envelope.decode(sealed[0][0]), LOG_ID, cache
        )
    # A forged signature fails every time: nothing about it is remembered.
    forged = envelope.decode(sealed[0][0])._replace(signature=bytes(64))
    for _ in range(2):
        with pytest.raises(InvalidSignature):
            envelope.check(PUB, events[0].originator_id, 1, "t/e@1", forged, LOG_ID, cache)


def test_the_cache_is_bounded() -> None:
    cache = envelope.VerifiedBatches(size=3)
    for _ in range(10):
        e = _batch(1)[0]
        _check(e, envelope.seal_batch(KEY, KID, [e], LOG_ID)[0][0], cache)
    assert len(cache._known) <= 3


def test_an_empty_batch_is_refused() -> None:
    with pytest.raises(EnvelopeError):
        envelope.seal_batch(KEY, KID, [], LOG_ID)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 64, 100])
def test_every_path_at_once_equals_the_rfc_path_of_each_leaf(n: int) -> None:
    leaves = [merkle.leaf_hash(UUID(int=i).bytes) for i in range(n)]
    root, paths = merkle.all_inclusion_proofs(leaves)
    assert root == merkle.root(leaves)
    for i, path in enumerate(paths):
        assert path == merkle.inclusion_proof(leaves, i, n)
        assert merkle.inclusion_root(leaves[i], i, n, path) == root
    if n > 1:  # another leaf's place: another root
        assert merkle.inclusion_root(leaves[0], 1, n, paths[0]) != root
