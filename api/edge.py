"""The one ASGI layer every HTTP answer crosses, outermost: what the edge adds to each
request, in one wrapper of ``send`` instead of three.

- **The request's log fields** (:mod:`api.logs`): the request id (the client's
  ``X-Request-Id`` if well formed, else a new one), the session, table and game code,
  on every line logged while the request runs, in the ``X-Request-Id`` answer header,
  and (JSON logs) one access line per request;
- **the HTTP metrics** (:mod:`api.metrics`): every answer counted by method, route
  template and status, with its latency; an answer refused before routing (by
  :class:`api.limits.Guard`: 401, 413, 429) counted under its error code as a limiter
  refusal;
- **``X-Log-Position`` on every answer to a POST** (:mod:`api.position`): the newest
  log position this worker has written when it answers.

Each was its own middleware before, wrapping ``send`` in turn, so a response's two
messages crossed three more closures: measured in ``docs/performance/request-path.md``.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import logs, metrics, position
from ledger import metrics as ledger_metrics

REFUSED = (401, 413, 429)
"""Statuses the guard answers before routing; their bodies name the limiter's code."""
LOGGED_BODY_CHUNKS = 16
"""A 2xx answer's first body chunks are kept to read its game code for the log."""


class Edge:
    def __init__(self, app: ASGIApp, state: Any, access: bool = True) -> None:
        self.app = app
        self.state = state
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        fields = logs.request_fields(scope)
        token = logs.enter(fields)
        started = time.perf_counter()
        method: str = scope["method"]
        state = self.state if method == "POST" else None
        request_id = (b"x-request-id", fields["request_id"].encode())
        status = 500
        body: list[bytes] = []
        keep = False  # the answer's body is read: a success's game code, a refusal's code

        async def sending(message: Message) -> None:
            nonlocal status, keep
            kind = message["type"]
            if kind == "http.response.start":
                status = int(message["status"])
                keep = 200 <= status < 300 or status in REFUSED
                headers = [*message.get("headers", ()), request_id]
                if state is not None and (at := position.header(state)) is not None:
                    headers.append(at)
                message = {**message, "headers": headers}
                ledger_metrics.HTTP_LATENCY.labels(method, metrics.route_of(scope)).observe(
                    time.perf_counter() - started
                )
            elif kind == "http.response.body" and keep and len(body) < LOGGED_BODY_CHUNKS:
                body.append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = metrics.route_of(scope)
            ledger_metrics.HTTP_REQUESTS.labels(method, route, str(status)).inc()
            if status in REFUSED and route == metrics.UNROUTED and body:
                code = metrics.refusal_code(b"".join(body))
                ledger_metrics.LIMITER_REFUSALS.labels(code).inc()
            elif status not in REFUSED:
                logs.note_answer(fields, b"".join(body))
            if self.access:
                logs.access_line(scope, status, started, fields)
            logs.leave(token)
