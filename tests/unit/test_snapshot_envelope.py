"""The snapshot envelope (ledger.envelope): its own signing domain, bound to the log id,
the aggregate, the version and the event it summarises."""

from __future__ import annotations

from uuid import uuid4

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger import envelope

LOG_ID = bytes(range(16))
TOPIC = "croupier/snapshot@1"


def test_a_snapshot_verifies_only_as_what_it_was_sealed_for() -> None:
    key, oid, summarised = Ed25519PrivateKey.generate(), uuid4(), bytes(range(32))
    sealed = envelope.seal_snapshot(key, "k1", oid, 100, TOPIC, b'{"state":{}}', summarised, LOG_ID)
    env = envelope.decode(sealed)
    assert env.prev_hash == summarised and env.kid == "k1" and env.format == 2
    envelope.check_snapshot(key.public_key(), oid, 100, TOPIC, env, LOG_ID)
    for other in (
        (uuid4(), 100, TOPIC, LOG_ID),
        (oid, 101, TOPIC, LOG_ID),
        (oid, 100, "croupier/session/opened@1", LOG_ID),
        (oid, 100, TOPIC, bytes(16)),
    ):
        o, v, t, log = other
        with pytest.raises(envelope.InvalidSignature):
            envelope.check_snapshot(key.public_key(), o, v, t, env, log)


def test_a_snapshot_never_passes_for_an_event_nor_an_event_for_a_snapshot() -> None:
    key, oid, prev = Ed25519PrivateKey.generate(), uuid4(), bytes(32)
    snapshot = envelope.decode(
        envelope.seal_snapshot(key, "k1", oid, 5, TOPIC, b"{}", prev, LOG_ID)
    )
    with pytest.raises(envelope.InvalidSignature):
        envelope.check(key.public_key(), oid, 5, TOPIC, snapshot, LOG_ID)
    event, _ = envelope.seal(key, "k1", oid, 5, TOPIC, b"{}", prev, LOG_ID)
    with pytest.raises(envelope.InvalidSignature):
        envelope.check_snapshot(key.public_key(), oid, 5, TOPIC, envelope.decode(event), LOG_ID)
