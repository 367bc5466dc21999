"""Deterministic random streams keyed by a 256-bit seed; unbiased integers; shuffles.

Each round draws a fresh seed from the OS CSPRNG (in the ledger, not here). All of its
cards come from HMAC-SHA256 in counter mode keyed by that seed: block ``i`` of the
stream labelled ``L`` is ``HMAC-SHA256(seed, b"croupier-rng/v1" || 0x00 || L || 0x00 ||
i as 8 big-endian bytes)``. Each line, each double-up step and each deal uses its own
label, so streams are independent and any one of them can be re-derived alone.
Integers below ``n`` use bit-mask rejection sampling (never ``% n``), shuffles are
Fisher-Yates from the top of the list down.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

SEED_BYTES = 32
_DOMAIN = b"croupier-rng/v1"


class SeedError(ValueError):
    """Raised for a seed that is not exactly 32 bytes."""


class RandomStream:
    """A labelled, deterministic byte stream with unbiased integer draws.

    >>> s = RandomStream(bytes(32), "deal")
    >>> s.randbelow(52) == RandomStream(bytes(32), "deal").randbelow(52)
    True
    """

    __slots__ = ("_bits", "_buffer", "_counter", "_label", "_nbits", "_seed")

    def __init__(self, seed: bytes, label: str) -> None:
        if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
            raise SeedError(f"seed must be {SEED_BYTES} bytes")
        self._seed = seed
        self._label = label.encode()
        self._counter = 0
        self._buffer = b""
        self._bits = 0
        self._nbits = 0

    @property
    def label(self) -> str:
        return self._label.decode()

    def _block(self) -> bytes:
        msg = _DOMAIN + b"\x00" + self._label + b"\x00" + self._counter.to_bytes(8, "big")
        self._counter += 1
        return hmac.new(self._seed, msg, hashlib.sha256).digest()

    def read(self, n: int) -> bytes:
        """The next ``n`` raw bytes of the stream."""
        out = bytearray(self._buffer[:n])
        self._buffer = self._buffer[n:]
        while len(out) < n:
            block = self._block()
            take = n - len(out)
            out += block[:take]
            self._buffer = block[take:]
        return bytes(out)

    def getrandbits(self, k: int) -> int:
        """``k`` uniformly random bits as a non-negative int."""
        while self._nbits < k:
            self._bits = (self._bits << 64) | int.from_bytes(self.read(8), "big")
            self._nbits += 64
        self._nbits -= k
        value = self._bits >> self._nbits
        self._bits &= (1 << self._nbits) - 1
        return value

    def randbelow(self, n: int) -> int:
        """Uniform integer in ``[0, n)`` by rejection: draw ``bitlen(n-1)`` bits, retry
        while the value is ``>= n``. No modulo, so no bias at awkward bounds."""
        if n <= 0:
            raise ValueError(f"bound must be positive, got {n}")
        if n == 1:
            return 0
        k = (n - 1).bit_length()
        while True:
            v = self.getrandbits(k)
            if v < n:
                return v

    def shuffled(self, items: Sequence[T]) -> list[T]:
        """A Fisher-Yates shuffle of a copy of ``items``: ``j = randbelow(i + 1)`` for
        each ``i`` from the top down, inlined (the same bits in the same order; every
        verify re-executes every round, and these calls were most of its cost)."""
        out = list(items)
        bits, nbits, read, from_bytes = self._bits, self._nbits, self.read, int.from_bytes
        for i in range(len(out) - 1, 0, -1):
            k = i.bit_length()  # randbelow(i + 1) draws bitlen(i) bits
            while True:
                if nbits < k:
                    buffer = self._buffer
                    if len(buffer) >= 8:  # (``read(8)`` without the call)
                        self._buffer = buffer[8:]
                        bits = (bits << 64) | from_bytes(buffer[:8], "big")
                    else:
                        bits = (bits << 64) | from_bytes(read(8), "big")
                    nbits += 64
                nbits -= k
                j = bits >> nbits
                bits &= (1 << nbits) - 1
                if j <= i:
                    break
            out[i], out[j] = out[j], out[i]
        self._bits, self._nbits = bits, nbits
        return out
