"""The cyclic garbage collector tuned for a long-running server process.

With CPython's defaults (a young collection every 700 allocations, a full one when the
survivors reach a quarter of the old objects) a server that keeps large caches (the
aggregates, the read side's rows, the hashes of verified events) spends a tenth of a
command's CPU collecting: measured in ``bench/bench_read_side.py``'s load (SQLite, 50
threads of Red Dog, 10 s, in process), 140 to 170 us a command, each full collection
120 to 150 ms, against 30 to 35 us with the policy below. Reference counting frees
almost everything here; the collector only has to find cycles, so it runs less often,
and the objects made at start-up (modules, the application, its handlers) are frozen
out of its scans (``gc.freeze``, as large Python servers do).

``croupier serve`` applies it in each worker once started (``CROUPIER_GC_TUNED``, on by
default there); an embedding application or a test process keeps the defaults. A tuned
process also times each collection (``croupier_gc_pause_seconds`` by generation): every
thread of the process stops while one runs, so a full collection of a large heap is a
pause every request in flight waits out, and where a latency tail comes from.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from ledger.metrics import GC_PAUSE

THRESHOLDS = (20_000, 20, 20)
"""Allocations before a young collection; young collections before a middle one;
middle ones before a full one (CPython's defaults: 700, 10, 10)."""


def tune() -> None:
    """Collect once, freeze what survives (start-up's objects, never garbage), and set
    :data:`THRESHOLDS`."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    if _time_collection not in gc.callbacks:
        gc.callbacks.append(_time_collection)


_started = 0.0
_PAUSES = [GC_PAUSE.labels(str(g)) for g in range(3)]


def _time_collection(phase: str, info: dict[str, Any]) -> None:
    """``gc.callbacks``: called with "start" and "stop" around each collection, on the
    thread that collects (with the GIL held: no other thread runs in between)."""
    global _started
    if phase == "start":
        _started = time.perf_counter()
    else:
        _PAUSES[info["generation"]].observe(time.perf_counter() - _started)
