"""A tuned server process times each collection of the cyclic garbage collector
(ledger/gc_policy.py, ``croupier_gc_pause_seconds``)."""

from __future__ import annotations

import gc

from ledger import gc_policy
from ledger.metrics import GC_PAUSE


def observed(generation: int) -> tuple[float, float]:
    """The histogram's count and sum for ``generation``."""
    count = total = 0.0
    for metric in GC_PAUSE.collect():
        for sample in metric.samples:
            if sample.labels.get("generation") != str(generation):
                continue
            if sample.name.endswith("_count"):
                count = sample.value
            elif sample.name.endswith("_sum"):
                total = sample.value
    return count, total


def test_each_collection_is_timed_by_its_generation() -> None:
    timing = gc_policy._time_collection
    # an earlier test may have tuned this process (croupier serve's lifespan): once here
    tuned = timing in gc.callbacks
    while timing in gc.callbacks:
        gc.callbacks.remove(timing)
    try:
        gc.callbacks.append(timing)
        before_full, before_young = observed(2), observed(0)
        gc.collect(2)
        gc.collect(0)
        gc.collect(0)
        gc.callbacks.remove(timing)
        full, young = observed(2), observed(0)
        assert full[0] == before_full[0] + 1
        assert young[0] >= before_young[0] + 2
        assert full[1] > before_full[1]  # a full collection takes some time
        gc.collect(2)  # no longer timed once the callback is gone
        assert observed(2) == full
    finally:
        while timing in gc.callbacks:
            gc.callbacks.remove(timing)
        if tuned:
            gc.callbacks.append(timing)
