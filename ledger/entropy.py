"""Random bytes from the OS CSPRNG, read a block at a time.

``os.urandom`` releases the GIL around its ``getrandom(2)`` call. In a process whose other
thread is running Python (the event loop beside the group-commit writer, the table's runner
beside the sockets), the caller then waits to get the GIL back: until that thread blocks,
or for the interpreter's switch interval (5 ms). A round called it three times on the
writer's thread (its code, its seed, the seal's nonce) and a request once on the event
loop's (its request id), so each could wait out a switch interval a call. py-spy showed
those calls at 5 % and 4.4 % of a Red Dog server's samples (docs/performance/request-path.md).

Here the bytes still come from the OS CSPRNG, unchanged, uniform and independent; they are
read :data:`BLOCK` bytes at a time and handed out in order, each byte once. Each thread has
its own block (no lock on the path), a forked child reads its own (a block is never shared
by two processes), and a byte handed out is zeroed in the block, so the process's memory
holds no copy of a seed once it is drawn.
"""

from __future__ import annotations

import os
import threading
from uuid import UUID

BLOCK = 4096


class _Block(threading.local):
    def __init__(self) -> None:
        self.pid = -1
        self.data = bytearray()
        self.at = 0


_block = _Block()


def token_bytes(n: int) -> bytes:
    """``n`` bytes of the OS CSPRNG (``os.urandom(n)``, from a block read ahead)."""
    if n < 0:
        raise ValueError("a negative number of bytes")
    if n > BLOCK // 4:
        return os.urandom(n)
    block = _block
    end = block.at + n
    if end > len(block.data) or block.pid != os.getpid():
        block.data = bytearray(os.urandom(BLOCK))
        block.pid = os.getpid()
        block.at, end = 0, n
    start = block.at
    out = bytes(block.data[start:end])
    block.data[start:end] = bytes(n)
    block.at = end
    return out


def uuid4() -> UUID:
    """A random (version 4) UUID, as ``uuid.uuid4()``, from :func:`token_bytes`."""
    return UUID(bytes=token_bytes(16), version=4)
