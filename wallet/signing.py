"""HMAC-SHA256 signatures over the exact body bytes, in both directions of a wallet call.

Requests carry ``X-Croupier-Signature: sha256=<hex>``, responses ``X-Wallet-Signature:
sha256=<hex>``, both keyed with the operator's shared secret. Two header names keep a
request's signature from being replayed as a response's (the bodies differ anyway).
"""

from __future__ import annotations

import hashlib
import hmac

REQUEST_SIGNATURE = "X-Croupier-Signature"
RESPONSE_SIGNATURE = "X-Wallet-Signature"
_PREFIX = "sha256="


def sign(key: bytes, body: bytes) -> str:
    """The header value for ``body``: ``sha256=`` and the lowercase hex HMAC.

    >>> sign(b"k", b"{}")
    'sha256=add853b103fbcc936a194f9eb15e29c4ff08af6e47d5d1bca4f20218e31e4fff'
    """
    return _PREFIX + hmac.new(key, body, hashlib.sha256).hexdigest()


def verify(key: bytes, body: bytes, header: str | None) -> bool:
    """True only if ``header`` is this key's signature of exactly these bytes."""
    if header is None or not header.startswith(_PREFIX):
        return False
    return hmac.compare_digest(header, sign(key, body))
