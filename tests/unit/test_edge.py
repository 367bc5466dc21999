"""The edge's one layer (api/edge.py): the request id, X-Log-Position on a POST's answer,
the HTTP metrics and the log fields, each as the three layers it replaced gave them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from prometheus_client import REGISTRY

from api import logs
from api.edge import Edge

CODE = "RD-20261204-120000-ABCD"


def _answer(status: int, body: bytes, seen: dict[str, Any]) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen["fields"] = dict(logs.context())  # the log fields while the request runs
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})

    return app


def _call(edge: Edge, method: str, path: str, headers: list[tuple[bytes, bytes]]) -> list[Any]:
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    asyncio.run(edge(scope, receive, send))
    return sent


def _count(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_posts_answer_carries_the_request_id_and_the_log_position() -> None:
    seen: dict[str, Any] = {}
    state = SimpleNamespace(casino=SimpleNamespace(position=4321))
    edge = Edge(_answer(200, b'{"code": "%s"}' % CODE.encode(), seen), state, access=False)
    before = _count("croupier_http_requests_total", method="POST", route="unrouted", status="200")
    sent = _call(edge, "POST", "/x", [(b"x-request-id", b"req-12345678")])
    headers = dict(sent[0]["headers"])
    assert headers[b"x-request-id"] == b"req-12345678"
    assert headers[b"x-log-position"] == b"4321"
    assert seen["fields"]["request_id"] == "req-12345678"
    after = _count("croupier_http_requests_total", method="POST", route="unrouted", status="200")
    assert after == before + 1
    assert logs.context() == {}  # the fields are gone once the request is answered


def test_a_get_has_no_log_position_and_a_new_request_id() -> None:
    state = SimpleNamespace(casino=SimpleNamespace(position=7))
    sent = _call(Edge(_answer(200, b"{}", {}), state, access=False), "GET", "/x", [])
    headers = dict(sent[0]["headers"])
    assert b"x-log-position" not in headers
    assert len(headers[b"x-request-id"]) == 32  # a new uuid4's hex


def test_a_guards_refusal_is_counted_under_its_code() -> None:
    body = b'{"code": "rate-limited", "message": "too many"}'
    before = _count("croupier_limiter_refusals_total", code="rate-limited")
    _call(Edge(_answer(429, body, {}), SimpleNamespace(), access=False), "GET", "/x", [])
    assert _count("croupier_limiter_refusals_total", code="rate-limited") == before + 1


def test_an_error_answer_is_not_read_for_a_game_code(monkeypatch: Any) -> None:
    body = b'{"code": "%s"}' % CODE.encode()
    fields: dict[str, str] = {}
    original = logs.note_answer

    def noted(f: dict[str, str], b: bytes) -> None:
        original(f, b)
        fields.update(f)

    monkeypatch.setattr(logs, "note_answer", noted)
    _call(Edge(_answer(404, body, {}), SimpleNamespace(), access=False), "GET", "/x", [])
    assert "game_code" not in fields
    _call(Edge(_answer(200, body, {}), SimpleNamespace(), access=False), "GET", "/x", [])
    assert fields["game_code"] == CODE
