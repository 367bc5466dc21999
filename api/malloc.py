"""Fewer glibc malloc arenas for ``croupier serve``.

glibc gives each thread that allocates under contention an arena of its own, up to 8 per
core; a server's threads (the request pool, the writer, the sealer, the SQLite
connections) each fragment theirs, and the free space of one arena cannot serve another.
Measured with ``bench/bench_serve_memory.py`` (SQLite, 500 sessions, two runs side by
side): 261 MiB after 5,000 rounds with 2 arenas against 285 to 287 MiB with glibc's default.
An operator's own ``MALLOC_ARENA_MAX`` is kept; elsewhere than glibc nothing is done.
"""

from __future__ import annotations

import ctypes
import os

ARENAS = 2
_M_ARENA_MAX = -8  # <malloc.h>


def limit_arenas(default: int = ARENAS) -> bool:
    """Cap this process's arenas (``mallopt``) and its worker processes' (the environment
    they start with); whether the cap is in force here."""
    wanted = os.environ.setdefault("MALLOC_ARENA_MAX", str(default))
    try:
        arenas = int(wanted)
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (ValueError, OSError, AttributeError):
        return False
    return arenas > 0 and bool(mallopt(_M_ARENA_MAX, arenas))
