"""``GET /metrics``: the Prometheus text format, for the operator's monitoring.

Readable with the operator's token or a token of its own (``CROUPIER_METRICS_TOKEN``, so a
Prometheus server need not hold the operator's); anyone else is refused (401/403). The
metrics are defined in :mod:`ledger.metrics`. This module adds what only the edge sees:

- the HTTP metrics, counted by :class:`api.edge.Edge`, the outermost ASGI layer: every
  response's method, route template (``/v1/sessions/{session_id}/red-dog/bet``, never
  the raw path; :func:`route_of`) and status, with its latency; a request refused before
  routing (by :class:`api.limits.Guard`: 401, 413, 429) is counted under its error code
  (:func:`refusal_code`) as a limiter refusal;
- :class:`Sampler`, a thread in each process that samples the gauges of state every
  second (checkpoint age, sealer lag, a failing store, each live table's lag behind its
  deadline, the seamless outbox's depth, open streams).

With ``--workers N``, ``croupier serve`` points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh
directory before the workers start; the scrape, answered by any one worker, adds up every
worker's files (``prometheus_client.multiprocess``).
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from api.auth import Role
from api.common import ERRORS
from api.errors import ApiError
from ledger import metrics
from ledger.casino import Casino
from ledger.settings import Settings
from ledger.tables.aggregates import Table, TableRound, table_id_for
from ledger.tables.context import parse_time

log = logging.getLogger("croupier.metrics")
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
SAMPLE_SECONDS = 1.0
LAGGING_PHASES = ("betting", "insurance", "step")
"""Phases that end at a deadline; the others (dealer, settling) end when the runner acts."""

Scope = Mapping[str, Any]

router = APIRouter(tags=["health"], responses=ERRORS)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text"}},
)
def scrape(request: Request) -> Response:
    """Every metric of this server (all its worker processes) in the Prometheus text
    format. Needs the operator's token or the metrics token."""
    _check_token(request)
    sampler: Sampler | None = getattr(request.app.state, "metrics_sampler", None)
    if sampler is not None:
        sampler.sample()  # this process's gauges as of now
    return Response(exposition(), media_type=CONTENT_TYPE_LATEST)


def exposition() -> bytes:
    """The text format of every metric: one process's, or every worker's added up."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest(REGISTRY)


def _check_token(request: Request) -> None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise ApiError(401, "unauthenticated", "a bearer token is required")
    settings: Settings = request.app.state.settings
    own = settings.metrics_token.get_secret_value() if settings.metrics_token else None
    if own is not None and hmac.compare_digest(token.encode(), own.encode()):
        return
    caller = request.app.state.credentials.identify(token)
    if caller is None:
        raise ApiError(401, "unauthenticated", "unknown or invalid bearer token")
    if caller.role is not Role.OPERATOR:
        raise ApiError(403, "forbidden", f"the {caller.role} credential cannot read metrics")


UNROUTED = "unrouted"


def route_of(scope: Scope) -> str:
    """The route template that answered (``/v1/sessions/{session_id}/…``), else "unrouted"."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNROUTED


def refusal_code(body: bytes) -> str:
    """The error code of a refusal's JSON body (bounded, for a label), else "unknown"."""
    try:
        code = json.loads(body).get("code")
    except (ValueError, AttributeError):
        return "unknown"
    return code if isinstance(code, str) and len(code) <= 40 else "unknown"


class Sampler:
    """Samples the gauges of state of one or more logs (``cells``: name -> Casino; "" for
    a single store) every :data:`SAMPLE_SECONDS` in a thread, from memory where it can
    (the sealer's) and from the aggregates' cache for the tables."""

    def __init__(
        self,
        cells: Mapping[str, Casino],
        tables: Callable[[], list[str]] = list,
        streams: Callable[[], int] = lambda: 0,
    ) -> None:
        self.cells = dict(cells)
        for cell in self.cells:  # shown at 0 from the start, not only after the first
            metrics.CHECKPOINTS.labels(cell)
            metrics.SEALER_ERRORS.labels(cell)
        self.tables = tables
        self.streams = streams
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        now = time.time()
        for cell, app in self.cells.items():
            sealer = app.sealer
            age = sealer.checkpoint_age()
            if age is not None:
                metrics.CHECKPOINT_AGE.labels(cell).set(age)
            if sealer.last_ok is not None:
                metrics.SEALER_LAG.labels(cell).set(max(0.0, now - sealer.last_ok))
            metrics.STORE_FAILING.labels(cell).set(1 if sealer.last_error else 0)
            metrics.UPKEEP.labels(cell).set(1 if sealer.on_duty() else 0)
            seamless = app.seamless
            if seamless is not None:
                metrics.OUTBOX_DEPTH.set(len(seamless.outbox.pending()))
            for table in self.tables():
                try:
                    lag = table_lag(app, table, datetime.now(UTC))
                except Exception:  # the store does not answer: named by the sealer
                    continue
                if lag is not None:
                    metrics.TABLE_LAG.labels(table).set(lag)
        metrics.STREAMS.set(self.streams())

    def start(self) -> None:
        def run() -> None:
            while not self._stop.wait(SAMPLE_SECONDS):
                try:
                    self.sample()
                except Exception:
                    log.exception("metrics: sampling failed")

        self._thread = threading.Thread(target=run, name="croupier-metrics", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def table_lag(app: Casino, table: str, now: datetime) -> float | None:
    """Seconds the table's current phase is past its deadline and grace (0 when on time;
    None for a table or round not found)."""
    found = app.peek(Table, table_id_for(table))  # read only: no copy of a large round
    if found is None or found.round_id is None:
        return None
    rnd = app.peek(TableRound, UUID(found.round_id))
    if rnd is None or rnd.closed or rnd.paused_at is not None:
        return 0.0
    if rnd.phase not in LAGGING_PHASES or rnd.deadline is None:
        return 0.0
    due = parse_time(rnd.deadline).timestamp() + rnd.settings.grace_ms / 1000
    return max(0.0, now.timestamp() - due)


def install(app: FastAPI) -> None:
    """The ``/metrics`` route and, while the app runs on its own store, a :class:`Sampler`
    of it (the HTTP metrics are counted by :class:`api.edge.Edge`)."""
    app.include_router(router)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[Any]:
        async with inner(a) as state:
            casino: Casino | None = a.state.casino
            sampler = None
            if casino is not None:
                sampler = Sampler({"": casino}, _tables(a), _streams(a))
                sampler.start()
            a.state.metrics_sampler = sampler
            try:
                yield state
            finally:
                if sampler is not None:
                    sampler.stop()

    app.router.lifespan_context = lifespan


def _tables(app: FastAPI) -> Callable[[], list[str]]:
    return lambda: list(getattr(getattr(app.state, "table_runners", None), "runners", ()))


def _streams(app: FastAPI) -> Callable[[], int]:
    return lambda: int(getattr(getattr(app.state, "table_streams", None), "total", 0))
