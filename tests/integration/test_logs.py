"""Structured logs (issue 29): ``croupier serve`` with ``CROUPIER_LOG_FORMAT=json`` writes
JSON lines carrying the request id, session, table and game code where they apply, and no
token or secret in any line, whatever the requests (a stream opened with
``?access_token=``, a wrong token, an error, a void)."""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.logs import REDACTED, JsonFormatter, Redact, TextFormatter
from tests.integration.test_http_e2e import CREDENTIALS, OPERATOR, bearer
from tests.integration.test_http_serve import launch

METRICS_TOKEN = "metrics-token-for-log-tests-0123456789"
SESSION_TOKEN = "1b4e28ba-2fa1-11d2-883f-0016d3cca427.1796202632.c2VjcmV0LW1hYy1vZi10aGUtdG9rZW4"


def record(message: str, *args: Any, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError(f"bad token {SESSION_TOKEN}")
        except ValueError:
            info = sys.exc_info()
    return logging.LogRecord("croupier.x", logging.ERROR, __file__, 1, message, args, info)


def test_the_redaction_takes_out_every_kind_of_secret() -> None:
    f = Redact(["operator-secret-value-123"])
    cases = [
        record("GET /v1/tables/t1/stream?access_token=%s&last_event_id=3", SESSION_TOKEN),
        record("Authorization: Bearer %s", "operator-secret-value-123"),
        record("token %s leaked", "cell-a~" + SESSION_TOKEN),
        record("the key operator-secret-value-123 in a message"),
    ]
    for r in cases:
        f.filter(r)
        text = JsonFormatter().format(r)
        assert "operator-secret-value-123" not in text and SESSION_TOKEN not in text, text
        assert REDACTED in text
    assert "last_event_id=3" in cases[0].getMessage()  # the rest of the line stays
    with_exc = record("failed", exc=True)
    f.filter(with_exc)
    assert SESSION_TOKEN not in JsonFormatter().format(with_exc)
    assert SESSION_TOKEN not in TextFormatter().format(with_exc)


@pytest.mark.requirement("UKGC-RTS-SEC-A12-LOG")
def test_serve_writes_json_lines_with_ids_and_never_a_secret(tmp_path: Path) -> None:
    env = {f"CROUPIER_{k.upper()}": v for k, v in CREDENTIALS.items()}
    env.update(CROUPIER_LOG_FORMAT="json", CROUPIER_METRICS_TOKEN=METRICS_TOKEN)
    base, _, proc = launch(tmp_path, access_log=True, **env)
    n = iter(range(1000))

    def post(path: str, token: str, body: Any = None) -> httpx.Response:
        headers = {**bearer(token), "Idempotency-Key": f"log-{next(n)}"}
        return httpx.post(base + path, json=body, headers=headers, timeout=30)

    try:
        post("/v1/accounts", OPERATOR, {"player_id": "ann", "currency": "EUR"})
        post("/v1/accounts/ann/deposits", OPERATOR, {"amount": 10_000})
        opened = post("/v1/sessions", OPERATOR, {"player_id": "ann", "buy_in": 5_000}).json()
        sid, token = opened["session_id"], opened["token"]
        bet = httpx.post(
            f"{base}/v1/sessions/{sid}/red-dog/bet",
            json={"bet": 100},
            headers={**bearer(token), "Idempotency-Key": "bet-1", "X-Request-Id": "req-bet-1"},
        )
        assert bet.headers["x-request-id"] == "req-bet-1"
        code = bet.json()["code"]
        if bet.json()["status"] == "open":
            post(f"/v1/sessions/{sid}/red-dog/see", token)
        void = {"reason": "drill", "incident_id": "INC-9"}
        assert post(f"/v1/rounds/{code}/void", OPERATOR, void).status_code == 200
        tables = httpx.get(f"{base}/v1/tables", headers=bearer(token)).json()
        table = tables["tables"][0]["table"]
        with httpx.stream(
            "GET", f"{base}/v1/tables/{table}/stream?access_token={token}", timeout=10
        ) as r:
            assert r.status_code == 200
            next(r.iter_bytes())
        assert httpx.get(f"{base}/v1/games", headers=bearer("wrong-" + OPERATOR)).status_code == 401
        assert post(f"/v1/sessions/{sid}/red-dog/bet", token, {"bet": -1}).status_code == 422
        httpx.get(f"{base}/metrics", headers=bearer(METRICS_TOKEN))
        post(f"/v1/sessions/{sid}/close", OPERATOR)
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)

    lines = out.splitlines()
    logged = [json.loads(line) for line in lines if line.startswith("{")]
    printed = [line for line in lines if not line.startswith("{")]
    assert all(
        line.startswith(("croupier serve:", "operator and auditor", "session-token", "log genesis"))
        or line.startswith(("live table ", "browser client: ", "connections: "))
        for line in printed
    ), printed
    assert {d["level"] for d in logged} <= {"debug", "info", "warning", "error", "critical"}
    secrets = [token, METRICS_TOKEN, *CREDENTIALS.values()]
    for key in (tmp_path / "keys").iterdir():
        secrets += [ln for ln in key.read_text().splitlines() if len(ln) > 30 and "{" not in ln]
    for line in lines:
        for secret in secrets:
            assert secret not in line, (secret[:6], line)
    access = [d for d in logged if d["logger"] == "croupier.access"]
    by_route = {d["route"]: d for d in access if d.get("route")}
    bet_line = next(d for d in access if d["request_id"] == "req-bet-1")
    assert bet_line["session"] == sid and bet_line["game_code"] == code
    assert bet_line["status"] == 200 and bet_line["duration_ms"] >= 0
    assert by_route["/v1/rounds/{game_code}/void"]["game_code"] == code
    stream = by_route["/v1/tables/{table}/stream"]
    assert stream["table"] == table and stream["session"] == sid
    assert all(len(d["request_id"]) >= 8 for d in access)
    assert len({d["request_id"] for d in access}) == len(access)  # one per request
    assert any(d["status"] == 401 and d["route"] is None for d in access)


@pytest.mark.requirement("UKGC-RTS-SEC-A12-LOG")
def test_text_logs_for_a_terminal_redact_the_stream_token_uvicorn_logs(tmp_path: Path) -> None:
    env = {f"CROUPIER_{k.upper()}": v for k, v in CREDENTIALS.items()}
    base, _, proc = launch(tmp_path, access_log=True, CROUPIER_LOG_FORMAT="text", **env)
    try:
        headers = {**bearer(OPERATOR), "Idempotency-Key": "t-1"}
        httpx.post(
            f"{base}/v1/accounts", json={"player_id": "bo", "currency": "EUR"}, headers=headers
        )
        headers["Idempotency-Key"] = "t-2"
        httpx.post(f"{base}/v1/accounts/bo/deposits", json={"amount": 900}, headers=headers)
        headers["Idempotency-Key"] = "t-3"
        body = {"player_id": "bo", "buy_in": 500}
        token = httpx.post(f"{base}/v1/sessions", json=body, headers=headers).json()["token"]
        table = httpx.get(f"{base}/v1/tables", headers=bearer(token)).json()["tables"][0]["table"]
        url = f"{base}/v1/tables/{table}/stream?access_token={token}"
        with httpx.stream("GET", url, timeout=10) as r:
            assert r.status_code == 200
            next(r.iter_bytes())
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert "access_token=[redacted]" in out  # uvicorn's access line, the token taken out
    assert token not in out and OPERATOR not in out
    assert not any(line.startswith("{") for line in out.splitlines())
