"""Random bytes from the OS CSPRNG without handing the GIL away.

``os.urandom`` releases the GIL around its ``getrandom(2)`` call. In a process whose other
thread is running Python (the event loop beside the group-commit writer, the table's runner
beside the sockets), the caller then waits to get the GIL back: until that thread blocks,
or for the interpreter's switch interval (5 ms). A round called it three times on the
writer's thread (its code, its seed, the seal's nonce) and a request once on the event
loop's (its request id), so each could wait out a switch interval a call: py-spy showed
those calls at 5 % and 4.4 % of a Red Dog server's samples, for calls that take 0.3 us
alone (``bench/bench_gil.py``; docs/performance/request-path.md).

``os.getrandom`` makes the same system call on the same source (the kernel's CSPRNG,
flags 0: as ``os.urandom`` does on Linux) and keeps the GIL. It may return fewer bytes
than asked for (Linux does not for 256 bytes or fewer once its pool is initialised); the
rest is asked for again. Where it does not exist, ``os.urandom``.
"""

from __future__ import annotations

import os
from uuid import UUID


def token_bytes(n: int) -> bytes:
    """``n`` bytes of the OS CSPRNG, as ``os.urandom(n)``, the GIL kept."""
    if n < 0:
        raise ValueError("a negative number of bytes")
    getrandom = getattr(os, "getrandom", None)
    if getrandom is None:  # not Linux
        return os.urandom(n)
    out: bytes = getrandom(n)
    while len(out) < n:
        out += getrandom(n - len(out))
    return out


def uuid4() -> UUID:
    """A random (version 4) UUID, as ``uuid.uuid4()``, from :func:`token_bytes`."""
    return UUID(bytes=token_bytes(16), version=4)
