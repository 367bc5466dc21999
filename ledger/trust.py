"""The log's key history: which Ed25519 key may sign at each position of the log.

The set of valid signing keys is itself in the log (format in ``ledger.envelope``): a
genesis event names the first key and the log id; each rotation event, signed by the key
it retires, names the next key, which signs every row after it. On start the application
reads that history, writes the genesis of a new log (or of a log written before key trust
existed, pinning its legacy prefix), records a rotation made in the keyring since the last
start, and refuses to start when the keyring disagrees with the log.

Rotation with several servers on one log: stop them all, ``croupier rotate-keys``, start
them again; a server still running with the retired key would sign rows after its
retirement, which the sealer refuses to checkpoint and ``audit-cli verify`` reports.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import IntegrityError, Notification

from ledger import envelope, merkle
from ledger.envelope import GENESIS_TOPIC, ROTATED_TOPIC, TRUST_ID
from ledger.errors import TamperDetected
from ledger.keys import Keyring, KeyringError, fingerprint, key_id

if TYPE_CHECKING:
    from eventsourcing.application import Repository

    from ledger.checkpoints import Sealer
    from ledger.ports import LogApp

    class Casino(LogApp, Protocol):
        """What trust needs of the application (a port: no import of the Casino)."""

        key_history: KeyHistory
        sealer: Sealer

        @property
        def repository(self) -> Repository[UUID]: ...


TRUST_TOPICS = (GENESIS_TOPIC, ROTATED_TOPIC)


class LogTrust(Aggregate):
    """The key history aggregate (one per log, fixed id)."""

    TOPIC = "croupier/trust@1"

    class Created(Aggregate.Created):  # unused; the library requires a topic
        TOPIC = "croupier/trust/created@1"

    @staticmethod
    def create_id(log_id: str) -> UUID:
        return TRUST_ID

    @event("Genesis", topic=GENESIS_TOPIC)
    def __init__(
        self, log_id: str, kid: str, public_key: str, legacy: dict[str, Any] | None
    ) -> None:
        self.log_id = log_id
        self.kid = kid

    def rotate(self, old_kid: str, kid: str, public_key: str, proof: str) -> None:
        self._rotated(old_kid=old_kid, kid=kid, public_key=public_key, proof=proof)

    @event("Rotated", topic=ROTATED_TOPIC)
    def _rotated(self, old_kid: str, kid: str, public_key: str, proof: str) -> None:
        self.kid = kid


@dataclass
class KeyHistory:
    """What the trust rows say: the log id and, per key, from which row on it signs."""

    log_id: bytes
    genesis_kid: str
    genesis_public: Ed25519PublicKey
    genesis_notification_id: int
    eras: list[tuple[int, str, Ed25519PublicKey]] = field(default_factory=list)
    """(first notification id it signs, kid, key), in order; each ends where the next begins."""
    legacy: dict[str, Any] | None = None
    legacy_keys: dict[str, Ed25519PublicKey] = field(default_factory=dict)

    @property
    def current_kid(self) -> str:
        return self.eras[-1][1]

    @property
    def keys(self) -> dict[str, Ed25519PublicKey]:
        return {kid: pub for _, kid, pub in self.eras}

    @property
    def genesis_fingerprint(self) -> str:
        return fingerprint(self.genesis_public)

    @property
    def legacy_last_id(self) -> int:
        return int(self.legacy["last_notification_id"]) if self.legacy else 0

    def kid_at(self, notification_id: int) -> str | None:
        """The key valid for the row at this notification id (None before the genesis)."""
        valid = None
        for first, kid, _ in self.eras:
            if notification_id >= first:
                valid = kid
        return valid

    def check_row(self, notification_id: int, env: envelope.Envelope, where: str) -> None:
        """Raise TamperDetected unless the row's key was valid at its position."""
        if notification_id > envelope.MAX_ROW_ID:
            raise TamperDetected(f"{where}: row id beyond 2^48")
        if env.format == 1:
            if notification_id > self.legacy_last_id:
                raise TamperDetected(f"{where}: a format 1 row after the log's genesis")
            return
        self.check_signer(notification_id, env.kid, where)

    def check_signer(self, notification_id: int, kid: str, where: str) -> None:
        """Raise TamperDetected unless ``kid`` was the valid key at this position (a
        row of format 2 or 3)."""
        if notification_id > envelope.MAX_ROW_ID:
            raise TamperDetected(f"{where}: row id beyond 2^48")
        valid = self.kid_at(notification_id)
        if kid != valid:
            raise TamperDetected(
                f"{where}: signed by key {kid}, but key {valid} signs at this position"
            )


def _public(hex_key: object) -> Ed25519PublicKey:
    if not isinstance(hex_key, str) or len(hex_key) != 64:
        raise ValueError("public key must be 64 hex digits")
    return Ed25519PublicKey.from_public_bytes(bytes.fromhex(hex_key))


def build_history(rows: Iterable[tuple[int, str, int, str, bytes]]) -> KeyHistory | None:
    """Check the trust rows (notification id, originator id, version, topic, state) of one
    log, in order, and return its key history; TamperDetected when they do not hold."""
    history: KeyHistory | None = None
    for n, oid, version, topic, state in rows:
        where = f"trust row {n} (v{version}, {topic})"
        try:
            if str(UUID(str(oid))) != str(TRUST_ID):
                raise TamperDetected(f"{where}: not the trust aggregate")
            env = envelope.decode(state)
            doc = json.loads(env.payload)
            pub = _public(doc.get("public_key"))
            kid = str(doc.get("kid"))
            if key_id(pub) != kid:
                raise TamperDetected(f"{where}: key id {kid} does not match its public key")
            if history is None:
                if topic != GENESIS_TOPIC or version != 1 or env.format != 2:
                    raise TamperDetected(f"{where}: the key history must start with a genesis")
                log_id = bytes.fromhex(str(doc.get("log_id")))
                if len(log_id) != 16 or env.kid != kid:
                    raise TamperDetected(f"{where}: malformed genesis")
                envelope.check(pub, TRUST_ID, 1, topic, env, log_id)
                legacy = doc.get("legacy")
                legacy_keys = {k: _public(v) for k, v in (legacy or {}).get("keys", {}).items()}
                history = KeyHistory(log_id, kid, pub, n, [(n, kid, pub)], legacy, legacy_keys)
                continue
            if topic != ROTATED_TOPIC or env.format != 2:
                raise TamperDetected(f"{where}: a second genesis or an unknown trust event")
            old = history.current_kid
            if env.kid != old or doc.get("old_kid") != old:
                raise TamperDetected(f"{where}: a rotation must be signed by the key it retires")
            envelope.check(history.keys[old], TRUST_ID, version, topic, env, history.log_id)
            proof = bytes.fromhex(str(doc.get("proof")))
            new_raw = pub.public_bytes_raw()
            pub.verify(proof, envelope.rotation_message(history.log_id, old, new_raw))
            history.eras.append((n + 1, kid, pub))
        except TamperDetected:
            raise
        except (ValueError, KeyError, TypeError, envelope.InvalidSignature) as e:
            raise TamperDetected(f"{where}: does not verify ({type(e).__name__}: {e})") from e
    return history


def trust_rows(app: Casino) -> list[tuple[int, str, int, str, bytes]]:
    notes: list[Notification] = []
    start = 0
    while True:
        page = app.recorder.select_notifications(start=start, limit=1000, topics=TRUST_TOPICS)
        if not page:
            break
        notes.extend(page)
        start = page[-1].id + 1
    return [(n.id, str(n.originator_id), n.originator_version, n.topic, n.state) for n in notes]


def load(app: Casino) -> KeyHistory | None:
    return build_history(trust_rows(app))


def install(app: Casino, history: KeyHistory) -> None:
    mapper = app.mapper
    mapper.log_id = history.log_id  # type: ignore[attr-defined]
    mapper.trusted_keys = history.keys  # type: ignore[attr-defined]
    mapper.legacy_keys = history.legacy_keys  # type: ignore[attr-defined]
    app.key_history = history


def _legacy_prefix(app: Casino) -> dict[str, Any]:
    """Verify every format 1 row of a log written before key trust, and pin it."""
    from ledger.checkpoints import iter_notifications

    tree = merkle.IncrementalTree()
    keys: dict[str, str] = {}
    last = 0
    for note in iter_notifications(app):
        _, env, h = app.mapper.open(note)  # type: ignore[attr-defined]
        if env.format != 1:
            raise TamperDetected(f"row {note.id}: a format 2 row in a log without genesis")
        keys[env.kid] = app.keyring.public_keys[env.kid].public_bytes_raw().hex()
        tree = tree.append(merkle.leaf_hash(h))
        last = note.id
    return {
        "tree_size": tree.size,
        "root_hash": tree.root().hex(),
        "last_notification_id": last,
        "keys": dict(sorted(keys.items())),
    }


def _write_genesis(app: Casino) -> None:
    legacy = _legacy_prefix(app) if app.recorder.max_notification_id() else None
    ring = app.keyring
    log_id = secrets.token_bytes(16)
    app.mapper.log_id = log_id  # type: ignore[attr-defined]
    trust = LogTrust(
        log_id=log_id.hex(),
        kid=ring.signing_kid,
        public_key=ring.signing_key.public_key().public_bytes_raw().hex(),
        legacy=legacy,
    )
    with contextlib.suppress(IntegrityError):  # another process wrote it first: use theirs
        app.save(trust)


def _record_rotation(app: Casino, history: KeyHistory) -> None:
    ring = app.keyring
    old = history.current_kid
    old_key = ring.private_key(old)
    if ring.signing_kid in history.keys or old_key is None:
        raise KeyringError(
            f"the keyring disagrees with the log: the log's current signing key is {old}, "
            f"the keyring's is {ring.signing_kid}, and the keyring cannot sign for {old}"
        )
    new_pub = ring.signing_key.public_key().public_bytes_raw()
    proof = ring.signing_key.sign(envelope.rotation_message(history.log_id, old, new_pub))
    trust: LogTrust = app.repository.get(TRUST_ID)
    trust.rotate(old_kid=old, kid=ring.signing_kid, public_key=new_pub.hex(), proof=proof.hex())
    app.mapper.signer = (old_key, old)  # type: ignore[attr-defined]
    try:
        app.save(trust)
    except IntegrityError:
        pass  # another process recorded it first
    finally:
        app.mapper.signer = None  # type: ignore[attr-defined]


def attach(app: Casino) -> KeyHistory:
    """Open the log's key history on start (see module docstring); returns it."""
    history = load(app)
    if history is None:
        try:
            _write_genesis(app)
        except TamperDetected:
            # A process starting at the same moment wrote the genesis while this one
            # read the log as a legacy one: use that genesis (anything else is tamper).
            if load(app) is None:
                raise
        history = load(app)
        assert history is not None
    install(app, history)
    if app.keyring.signing_kid != history.current_kid:
        _record_rotation(app, history)
        history = load(app)
        assert history is not None
        install(app, history)
        if app.keyring.signing_kid != history.current_kid:
            raise KeyringError(
                f"the keyring disagrees with the log: current key {app.keyring.signing_kid}, "
                f"the log's is {history.current_kid}"
            )
    app.keyring.record_genesis(
        history.genesis_kid, history.genesis_fingerprint, history.log_id.hex()
    )
    app.mapper.refresh_trust = lambda: install(app, load(app) or app.key_history)  # type: ignore[attr-defined]
    return history


def rotate(app: Casino) -> str:
    """Rotate the signing key of a running application (new key, rotation event)."""
    with app.sealer._lock:
        ring: Keyring = app.keyring
        ring.rotate()
        history = app.key_history
        _record_rotation(app, history)
        new = load(app)
        assert new is not None
        install(app, new)
    return ring.signing_kid
