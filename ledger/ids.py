"""Name-based ids (UUID version 5) made without the standard library's detours.

``uuid.uuid5`` imports ``hashlib.sha1`` on each call, spells the namespace's bytes
again and validates the digest's 128 bits through ``UUID.__init__``. A Red Dog round
makes a few (its request records' ids, its round's), a live table one a seat: together
2.4 % of a Red Dog server's samples under load. :func:`uuid5` gives the same ``UUID``
(``tests/unit/test_ids.py``) in about three fifths of the time (``timeit``: 4.1 against
7.1 µs a call, on a machine a benchmark shared).
"""

from __future__ import annotations

from functools import lru_cache
from hashlib import sha1
from uuid import UUID, SafeUUID

_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_SET = (0x8000 << 48) | (5 << 76)
_new = object.__new__
_set = object.__setattr__
_UNKNOWN = SafeUUID.unknown


@lru_cache(maxsize=64)
def _prefix(namespace: UUID) -> bytes:
    return namespace.bytes


def uuid5(namespace: UUID, name: str) -> UUID:
    """``uuid.uuid5(namespace, name)``."""
    digest = sha1(_prefix(namespace) + name.encode()).digest()
    u = _new(UUID)
    _set(u, "int", (int.from_bytes(digest[:16], "big") & _CLEAR) | _SET)
    _set(u, "is_safe", _UNKNOWN)
    return u
