"""Keyring: the Ed25519 signing keys (current + retired public keys) and AES-GCM sealing keys.

Layout of a keys directory (the embedded default creates it on first run)::

    keyring.json          public: current key ids and every signing public key ever used
    signing-<kid>.pem     Ed25519 private key, PKCS#8 PEM, mode 0600
    sealing-<kid>.key     256-bit AES-GCM key (hex), mode 0600, for round seeds

A key id (kid) of a signing key is the first 16 hex digits of SHA-256 of its raw public
key; its fingerprint is the full SHA-256. Rotation adds a new signing key and keeps the
old public keys so rows signed before the rotation stay verifiable.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)


class KeyringError(Exception):
    """Keys are missing, malformed or inconsistent."""


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def fingerprint(key: Ed25519PublicKey) -> str:
    return hashlib.sha256(_raw_public(key)).hexdigest()


def key_id(key: Ed25519PublicKey) -> str:
    return fingerprint(key)[:16]


def _write_secret(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)


def load_private_key(text: bytes) -> Ed25519PrivateKey:
    """A PKCS#8 PEM, or 64 hex digits of the raw 32-byte private key."""
    t = text.strip()
    try:
        if t.startswith(b"-----"):
            key = serialization.load_pem_private_key(t, password=None)
        else:
            key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(t.decode()))
    except ValueError as e:
        raise KeyringError(f"signing key is not an Ed25519 PEM or 64 hex digits: {e}") from e
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyringError("signing key is not an Ed25519 key")
    return key


def load_public_keys(doc: dict[str, Any]) -> dict[str, Ed25519PublicKey]:
    """Parse an exported public keyring ``{"keys": [{"kid", "public_key" (hex)}, ...]}``."""
    out: dict[str, Ed25519PublicKey] = {}
    for entry in doc.get("keys", []):
        pub = Ed25519PublicKey.from_public_bytes(bytes.fromhex(entry["public_key"]))
        if key_id(pub) != entry["kid"]:
            raise KeyringError(f"key id {entry['kid']} does not match its public key")
        out[entry["kid"]] = pub
    return out


@dataclass
class Keyring:
    signing_kid: str
    signing_key: Ed25519PrivateKey
    sealing_kid: str
    sealing_keys: dict[str, bytes]
    public_keys: dict[str, Ed25519PublicKey] = field(default_factory=dict)
    created: dict[str, str] = field(default_factory=dict)
    keys_dir: Path | None = None
    genesis: dict[str, str] = field(default_factory=dict)
    """The log's genesis key (kid, fingerprint, log id), recorded when the log names it."""
    _retired: dict[str, Ed25519PrivateKey] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.public_keys.setdefault(self.signing_kid, self.signing_key.public_key())

    def private_key(self, kid: str) -> Ed25519PrivateKey | None:
        """A signing private key of this keyring by id (current, or retired and still on
        disk): the log's rotation event must be signed by the key it retires."""
        if kid == self.signing_kid:
            return self.signing_key
        if kid in self._retired:
            return self._retired[kid]
        if self.keys_dir is not None:
            path = self.keys_dir / f"signing-{kid}.pem"
            if path.exists():
                key = load_private_key(path.read_bytes())
                if key_id(key.public_key()) == kid:
                    return key
        return None

    def record_genesis(self, kid: str, fingerprint_hex: str, log_id_hex: str) -> None:
        """Remember the log's genesis key, and write it into keyring.json for auditors."""
        doc = {"kid": kid, "fingerprint": "SHA256:" + fingerprint_hex, "log_id": log_id_hex}
        if self.genesis == doc:
            return
        self.genesis = doc
        if self.keys_dir is not None and (self.keys_dir / "keyring.json").exists():
            self._write_index(self.keys_dir)

    @property
    def sealing_key(self) -> bytes:
        return self.sealing_keys[self.sealing_kid]

    def public_document(self) -> dict[str, Any]:
        """The auditor's keyring: every signing public key with its fingerprint, and the
        log's genesis key (the fingerprint an auditor pins) once the log names it."""
        doc: dict[str, Any] = {
            "format": "croupier-public-keys/v1",
            "current": self.signing_kid,
            "keys": [
                {
                    "kid": kid,
                    "algorithm": "Ed25519",
                    "public_key": _raw_public(pub).hex(),
                    "fingerprint": "SHA256:" + fingerprint(pub),
                    "created": self.created.get(kid, ""),
                    "status": "current" if kid == self.signing_kid else "retired",
                }
                for kid, pub in sorted(self.public_keys.items())
            ],
        }
        if self.genesis:
            doc["genesis"] = dict(self.genesis)
        return doc

    # -- construction ------------------------------------------------------------------

    @classmethod
    def generate(cls) -> Keyring:
        """A fresh in-memory keyring (tests, benchmarks)."""
        sk = Ed25519PrivateKey.generate()
        sealing_kid = "seal-" + secrets.token_hex(6)
        return cls(key_id(sk.public_key()), sk, sealing_kid, {sealing_kid: secrets.token_bytes(32)})

    @classmethod
    def open_dir(cls, keys_dir: Path, *, create: bool = True) -> Keyring:
        """Load the keyring in ``keys_dir``; generate it on first run when ``create``."""
        index = keys_dir / "keyring.json"
        if not index.exists():
            if not create:
                raise KeyringError(f"no keyring at {index} and key generation is disabled")
            if not keys_dir.parent.exists():  # the data directory: private (0700) too
                keys_dir.parent.mkdir(parents=True, mode=0o700)
            keys_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            ring = cls.generate()
            ring._write_signing(keys_dir)
            _write_secret(
                keys_dir / f"sealing-{ring.sealing_kid}.key", ring.sealing_key.hex().encode()
            )
            ring.keys_dir = keys_dir
            ring._write_index(keys_dir)
            return ring
        doc = json.loads(index.read_text())
        kid = doc["current"]
        sk = load_private_key((keys_dir / f"signing-{kid}.pem").read_bytes())
        if key_id(sk.public_key()) != kid:
            raise KeyringError(f"signing-{kid}.pem does not hold key {kid}")
        sealing = {
            p.name[len("sealing-") : -len(".key")]: bytes.fromhex(p.read_text().strip())
            for p in keys_dir.glob("sealing-*.key")
        }
        seal_kid = doc["sealing_current"]
        if seal_kid not in sealing:
            raise KeyringError(f"sealing key {seal_kid} missing from {keys_dir}")
        created = {k["kid"]: k.get("created", "") for k in doc.get("keys", [])}
        genesis = doc.get("genesis") if isinstance(doc.get("genesis"), dict) else {}
        return cls(
            kid, sk, seal_kid, sealing, load_public_keys(doc), created, keys_dir, dict(genesis)
        )

    def rotate(self, keys_dir: Path | None = None) -> str:
        """Make a new current signing key; old public keys stay in the keyring. The next
        application to open the log records the rotation there, signed by the old key
        (``ledger.trust``). Without ``keys_dir`` (in-memory keyrings) nothing is written."""
        keys_dir = keys_dir or self.keys_dir
        self._retired[self.signing_kid] = self.signing_key
        self.signing_key = Ed25519PrivateKey.generate()
        self.signing_kid = key_id(self.signing_key.public_key())
        self.public_keys[self.signing_kid] = self.signing_key.public_key()
        if keys_dir is not None:
            self.keys_dir = keys_dir
            self._write_signing(keys_dir)
            self._write_index(keys_dir)
        return self.signing_kid

    def _write_signing(self, keys_dir: Path) -> None:
        self.created[self.signing_kid] = datetime.now(UTC).isoformat(timespec="seconds")
        pem = self.signing_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        _write_secret(keys_dir / f"signing-{self.signing_kid}.pem", pem)

    def _write_index(self, keys_dir: Path) -> None:
        doc = self.public_document()
        doc["sealing_current"] = self.sealing_kid
        tmp = keys_dir / "keyring.json.tmp"
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        tmp.replace(keys_dir / "keyring.json")
