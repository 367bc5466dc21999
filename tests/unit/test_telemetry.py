"""FastAPI's native OpenTelemetry check is off (:mod:`api.telemetry`): a request asks
OpenTelemetry for no provider, where FastAPI by default asks on every request."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.telemetry import no_native_telemetry

telemetry = pytest.importorskip("fastapi.telemetry._asgi")  # FastAPI without it: no check


def _asks(monkeypatch: pytest.MonkeyPatch, app: FastAPI) -> int:
    asked: list[Any] = []
    real = telemetry.trace.get_tracer_provider

    def counted() -> Any:
        asked.append(1)
        return real()

    monkeypatch.setattr(telemetry.trace, "get_tracer_provider", counted)

    @app.get("/ping")
    async def ping() -> dict[str, str]:
        return {"pong": "yes"}

    with TestClient(app) as client:
        for _ in range(3):
            assert client.get("/ping").json() == {"pong": "yes"}
    return len(asked)


def test_fastapi_by_default_asks_opentelemetry_on_every_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _asks(monkeypatch, FastAPI()) >= 3  # what the option saves; the test can fail


def test_croupiers_app_asks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _asks(monkeypatch, FastAPI(**no_native_telemetry())) == 0
