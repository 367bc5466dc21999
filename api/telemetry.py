"""FastAPI's own OpenTelemetry instrumentation, turned off.

From 0.16x FastAPI instruments every request natively: before each request it asks
OpenTelemetry whether a tracer, meter or logger provider is configured (a look-up in
``os.environ`` and three provider checks), whether or not one is. croupier measures
itself with its own Prometheus metrics and request log (:mod:`api.edge`), so that check
is work a request does for nothing: 1.5 % of a Red Dog server's samples under load
(docs/performance/request-path.md, "Small cuts, and what a batch costs"). A FastAPI older than the
option (``telemetry=``) is left as it is: it has no such check.
"""

from __future__ import annotations

import inspect
from typing import Any

from fastapi import FastAPI

OFF = {"tracing": False, "metrics": False, "logs": False}


def no_native_telemetry() -> dict[str, Any]:
    """The keyword arguments that turn FastAPI's native telemetry off, if it has any."""
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters:
        return {"telemetry": dict(OFF)}
    return {}
