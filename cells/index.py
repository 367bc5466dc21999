"""The signed index of the cells' tree heads: one document naming, for every cell, its log
(log id, genesis fingerprint) and its latest checkpoint (seq, size, root, the cell's own
signature), signed by the deployment's index key.

Each cell's checkpoints already make that cell's log tamper-evident; the index binds the
cells together at one moment, so one cell cannot be rolled back, swapped for another log
or dropped from the deployment while the others go on: ``audit-cli verify --cells``
checks the index's signature against the pinned index key, that it names exactly the
map's cells with their logs, that every head in it is a checkpoint its cell still has
(same size and root), and that it is not out of date (no cell has a newer checkpoint).

Standalone (hashlib, json, cryptography), like ``ledger.envelope``: the signed message is
``b"croupier/cells-index/v1\\x00"`` followed by the document without its ``signature``
as canonical JSON (sorted keys, no spaces, UTF-8).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

FORMAT = "croupier/cells-index/v1"
_LABEL = FORMAT.encode() + b"\x00"
HEAD_FIELDS = ("seq", "tree_size", "root_hash", "timestamp_ms", "kid", "signature")


class CellIndexError(ValueError):
    """An index that cannot be read or checked (malformed, wrong format)."""


def message(doc: dict[str, Any]) -> bytes:
    body = {k: v for k, v in doc.items() if k != "signature"}
    return _LABEL + json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def fingerprint(public_key: bytes) -> str:
    return "SHA256:" + hashlib.sha256(public_key).hexdigest()


def sign(key: Ed25519PrivateKey, heads: list[dict[str, Any]], time_ms: int) -> dict[str, Any]:
    """The index of these heads (one per cell: ``cell``, ``log_id``, ``genesis`` and the
    checkpoint fields, or ``seq`` 0 for a cell without a checkpoint yet)."""
    pub = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "time_ms": time_ms,
        "cells": sorted(heads, key=lambda h: str(h["cell"])),
        "public_key": pub.hex(),
    }
    doc["signature"] = key.sign(message(doc)).hex()
    return doc


def check_signature(doc: dict[str, Any]) -> str:
    """The fingerprint of the key that signed a well-formed index; raises
    :class:`CellIndexError` if it is malformed or the signature does not verify."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CellIndexError(f"not a cells index (format {FORMAT})")
    if not isinstance(doc.get("cells"), list) or not all(
        isinstance(h, dict) and isinstance(h.get("cell"), str) for h in doc["cells"]
    ):
        raise CellIndexError("the index's 'cells' must be a list of heads naming their cell")
    try:
        pub = bytes.fromhex(str(doc["public_key"]))
        sig = bytes.fromhex(str(doc["signature"]))
        Ed25519PublicKey.from_public_bytes(pub).verify(sig, message(doc))
    except (KeyError, ValueError) as e:
        raise CellIndexError(f"the index's key or signature is malformed: {e}") from e
    except InvalidSignature as e:
        raise CellIndexError("the index's signature does not verify") from e
    return fingerprint(pub)


def load_or_create_key(path: Path) -> Ed25519PrivateKey:
    """The deployment's index key (PKCS#8 PEM, 0600), generated on first use."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it first
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(pem)
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise CellIndexError(f"{path} is not an Ed25519 private key")
    return key


def write(path: Path, doc: dict[str, Any]) -> None:
    """Replace the index file atomically (a reader sees the old or the new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True))
    os.replace(tmp, path)
